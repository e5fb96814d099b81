/* frameproof.c — entry point of the frameproof CLI: dispatches to the
 * subcommands and prints the top-level help. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "conform_cli.h"
#include "frameproof/frameproof.h"

/* Memory-image subcommands (cmd_snapshot.c, cmd_replay.c). */
int cli_cmd_snapshot(int argc, char **argv);
int cli_cmd_replay(int argc, char **argv);

static const char USAGE[] =
    "usage: frameproof <command> [options]\n"
    "\n"
    "Commands:\n"
    "  dump     print the Python stack of every thread of a running process\n"
    "  conform  check the unwinder against in-target ground truth, all interpreters\n"
    "  record   profile a running process or a command: flame graphs, speedscope, JSON\n"
    "  bench    measure the unwinder: repeated samples of a running process\n"
    "  snapshot stop a process briefly and save what a sample reads as an image\n"
    "  replay   unwind a saved memory image offline, printing what dump printed\n"
    "\n"
    "Run 'frameproof <command> --help' for a command's options.\n"
    "  --version  print the version and exit\n"
    "  --help     print this help and exit\n";

int cli_parse_uint(const char *s, unsigned long max, unsigned long *out)
{
    if (!s || !*s || *s == '-')
        return -1;
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *end || v > max)
        return -1;
    *out = v;
    return 0;
}

int cli_parse_positive(const char *s, double max, double *out)
{
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(x) || x <= 0 || x > max)
        return -1;
    *out = x;
    return 0;
}

int cli_parse_reader(const char *cmd, const char *value, int allow_auto, int *out)
{
    if (allow_auto && strcmp(value, "auto") == 0)
        *out = FP_READER_AUTO;
    else if (strcmp(value, "vm") == 0)
        *out = FP_READER_VM;
    else if (strcmp(value, "mem") == 0)
        *out = FP_READER_MEM;
    else {
        fprintf(stderr, "frameproof %s: --reader must be %svm or mem, not '%s'\n", cmd, allow_auto ? "auto, " : "",
                value);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(USAGE, stderr);
        return CLI_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        fputs(USAGE, stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("frameproof %s\n", FP_VERSION_STRING);
        return CLI_EXIT_OK;
    }
    if (strcmp(cmd, "dump") == 0)
        return cli_cmd_dump(argc - 1, argv + 1);
    if (strcmp(cmd, "conform") == 0)
        return cli_cmd_conform(argc - 1, argv + 1);
    if (strcmp(cmd, "record") == 0)
        return cli_cmd_record(argc - 1, argv + 1);
    if (strcmp(cmd, "bench") == 0)
        return cli_cmd_bench(argc - 1, argv + 1);
    if (strcmp(cmd, "snapshot") == 0)
        return cli_cmd_snapshot(argc - 1, argv + 1);
    if (strcmp(cmd, "replay") == 0)
        return cli_cmd_replay(argc - 1, argv + 1);
    fprintf(stderr, "frameproof: unknown command '%s'\n\n%s", cmd, USAGE);
    return CLI_EXIT_USAGE;
}
