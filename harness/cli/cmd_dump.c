/* cmd_dump.c — `frameproof dump`: attach to a process, take one sample and
 * print it as text or JSON; with --async, read asyncio's task graph instead. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "async_output.h"
#include "cli.h"
#include "fp_facts.h"
#include "frameproof/async.h"
#include "frameproof/frameproof.h"
#include "sample_output.h"

static const char DUMP_USAGE[] =
    "usage: frameproof dump --pid PID [--json] [--async] [--reader auto|vm|mem] [--max-depth N]\n"
    "                       [--no-cache] [--blocking | --pause-torn] [--allow-untested-version]\n"
    "\n"
    "Prints the Python stack of every thread of every interpreter of process PID\n"
    "(CPython " FP_FACT_PY_SUPPORTED ", GIL, free-threaded or debug builds).\n"
    "\n"
    "  --pid PID        process to sample (required)\n"
    "  --json           print the documented JSON form instead of text\n"
    "  --async          print asyncio's task graph instead (CPython 3.14+, GIL\n"
    "                   builds): every pending task, its coroutine stack and its\n"
    "                   awaiters, as a tree of who awaits whom; the target is\n"
    "                   stopped (ptrace) while it is read (not with --blocking or\n"
    "                   --pause-torn)\n"
    "  --reader KIND    memory reader: auto (process_vm_readv, falling back to\n"
    "                   /proc/PID/mem), vm or mem (default auto)\n"
    "  --max-depth N    frames per thread before the walk fails (default 65536;\n"
    "                   with --async: coroutines per task)\n"
    "  --no-cache       do not cache code objects (no effect on a single dump)\n"
    CLI_BLOCKING_HELP
    CLI_PAUSE_TORN_HELP
    CLI_UNTESTED_HELP
    "  --help           print this help\n"
    "\n"
    "Exit status: 0 on success; 1 with a one-line message on stderr on error\n"
    "(process exited, permission denied, not a Python process, unsupported\n"
    "version, incomplete sample, no task graph before 3.14); 2 on a usage error.\n";

/* `dump --async` once attached: reads the graph (the library stops and
 * resumes the target) and prints it; returns the exit status. */
static int dump_async(fp_session *s, int pid, int json)
{
    fp_async_graph *g = NULL;
    int status = CLI_EXIT_ERROR;
    if (fp_async_graph_read(s, &g)) {
        fprintf(stderr, "frameproof dump: %s\n", fp_session_get_errmsg(s));
        goto out;
    }
    fp_python_info py;
    fp_session_get_python(s, &py);
    if (json) {
        cli_async_output_json(stdout, pid, &py, g);
    } else if (cli_async_output_text(stdout, pid, &py, g)) {
        fprintf(stderr, "frameproof dump: %s\n", fp_error_describe(FP_E_NOMEM));
        goto out;
    }
    status = fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_ERROR;
out:
    fp_async_graph_free(g);
    return status;
}

int cli_cmd_dump(int argc, char **argv)
{
    static const struct option opts[] = {
        {"pid", required_argument, NULL, 'p'},
        {"json", no_argument, NULL, 'j'},
        {"reader", required_argument, NULL, 'r'},
        {"max-depth", required_argument, NULL, 'd'},
        {"no-cache", no_argument, NULL, 'n'},
        {"allow-untested-version", no_argument, NULL, 'U'},
        {"blocking", no_argument, NULL, 'B'},
        {"pause-torn", no_argument, NULL, 'T'},
        {"async", no_argument, NULL, 'A'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    fp_options o;
    fp_options_init(&o);
    unsigned long pid = 0, v;
    int json = 0, async = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "p:jr:d:nh", opts, NULL)) != -1) {
        switch (c) {
        case 'p':
            if (cli_parse_uint(optarg, INT_MAX, &pid) || pid == 0) {
                fprintf(stderr, "frameproof dump: invalid pid '%s'\n", optarg);
                return CLI_EXIT_USAGE;
            }
            break;
        case 'j': json = 1; break;
        case 'r':
            if (cli_parse_reader("dump", optarg, 1, &o.reader))
                return CLI_EXIT_USAGE;
            break;
        case 'd':
            if (cli_parse_uint(optarg, UINT32_MAX, &v) || v == 0) {
                fprintf(stderr, "frameproof dump: invalid --max-depth '%s'\n", optarg);
                return CLI_EXIT_USAGE;
            }
            o.max_depth = (uint32_t)v;
            break;
        case 'n': o.cache_code = false; break;
        case 'U': o.allow_untested = true; break;
        case 'B': o.blocking = true; break;
        case 'T': o.pause_torn = true; break;
        case 'A': async = 1; break;
        case 'h': fputs(DUMP_USAGE, stdout); return CLI_EXIT_OK;
        default: fputs(DUMP_USAGE, stderr); return CLI_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "frameproof dump: unexpected argument '%s'\n", argv[optind]);
        return CLI_EXIT_USAGE;
    }
    if (!pid) {
        fprintf(stderr, "frameproof dump: --pid is required\n%s", DUMP_USAGE);
        return CLI_EXIT_USAGE;
    }
    if (o.blocking && o.pause_torn) {
        fputs("frameproof dump: --blocking and --pause-torn exclude each other\n", stderr);
        return CLI_EXIT_USAGE;
    }
    if (async && (o.blocking || o.pause_torn)) {
        fputs("frameproof dump: --async always reads with the target stopped: no --blocking or --pause-torn\n",
              stderr);
        return CLI_EXIT_USAGE;
    }
    fp_session *s = NULL;
    fp_sample *sm = NULL;
    int status = CLI_EXIT_ERROR;
    int rc = fp_session_new(&o, &s);
    if (rc == FP_OK)
        rc = fp_sample_new(&sm);
    if (rc) {
        fprintf(stderr, "frameproof dump: %s\n", fp_error_describe(rc));
        goto out;
    }
    rc = fp_session_attach_pid(s, (int)pid);
    if (rc) {
        fprintf(stderr, "frameproof dump: %s\n", fp_session_get_errmsg(s));
        goto out;
    }
    if (async) {
        status = dump_async(s, (int)pid, json);
        goto out;
    }
    rc = fp_session_sample(s, sm);
    if (!fp_sample_is_usable(sm, rc)) {
        fprintf(stderr, "frameproof dump: %s\n", fp_session_get_errmsg(s));
        goto out;
    }
    fp_python_info py;
    fp_session_get_python(s, &py);
    if (json)
        cli_output_json(stdout, (int)pid, &py, sm);
    else
        cli_output_text(stdout, (int)pid, &py, fp_session_get_reader_name(s), sm);
    status = fflush(stdout) == 0 && rc == FP_OK ? CLI_EXIT_OK : CLI_EXIT_ERROR;
    if (rc) /* an incomplete sample: printed, and still a failure */
        fprintf(stderr, "frameproof dump: %s\n", fp_session_get_errmsg(s));
out:
    fp_sample_free(sm);
    fp_session_free(s);
    return status;
}
