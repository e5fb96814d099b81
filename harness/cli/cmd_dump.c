/* cmd_dump.c — `frameproof dump`: attach to a process, take one sample and
 * print it as text or JSON; with --async, read asyncio's task graph instead. */
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "async_output.h"
#include "cli.h"
#include "fp_facts.h"
#include "frameproof/async.h"
#include "frameproof/frameproof.h"
#include "sample_output.h"

#define CLI_DUMP_MAX_COUNT 100000000ul /* --count: reads of one dump */
#define CLI_DUMP_MAX_INTERVAL_US 10000000ul /* --interval: 10 s between two reads */

static const char DUMP_USAGE[] =
    "usage: frameproof dump --pid PID [--json]\n"
    "                       [--async [--count N [--interval US] [--inject-fault stale-awaiter]]]\n"
    "                       [--reader auto|vm|mem] [--max-depth N] [--no-cache]\n"
    "                       [--blocking | --pause-torn] [--allow-untested-version]\n"
    "\n"
    "Prints the Python stack of every thread of every interpreter of process PID\n"
    "(CPython " FP_FACT_PY_SUPPORTED ", GIL, free-threaded or debug builds).\n"
    "\n"
    "  --pid PID        process to sample (required)\n"
    "  --json           print the documented JSON form instead of text\n"
    "  --async          print asyncio's task graph instead (CPython 3.11+):\n"
    "                   every pending task, its coroutine stack (a running\n"
    "                   task's: what its thread runs now, down to its coroutine)\n"
    "                   and its awaiters (3.11-3.13: the links those versions\n"
    "                   keep), as a tree of who awaits whom; the target\n"
    "                   is stopped (ptrace) while it and every thread's stack are\n"
    "                   read (not with --blocking or --pause-torn)\n"
    "  --count N        with --async --json: N reads on one session, back to back,\n"
    "                   one JSON document per line; a read that fails is a line\n"
    "                   {\"pid\", \"error\", \"code\"} and the reads go on (default 1)\n"
    "  --interval US    with --count: microseconds the target runs between two\n"
    "                   reads (default 0: back to back, when it barely runs and\n"
    "                   a read may find the state the read before found)\n"
    "  --inject-fault stale-awaiter  with --count: a self-test fault, each graph\n"
    "                   printed with the previous read's awaiter edges\n"
    "  --reader KIND    memory reader: auto (process_vm_readv, falling back to\n"
    "                   /proc/PID/mem), vm or mem (default auto)\n"
    "  --max-depth N    frames per thread before its walk fails: that thread is\n"
    "                   printed without frames, the others whole, exit 1 (default 65536;\n"
    "                   with --async: also coroutines per task, and a thread\n"
    "                   deeper than N fails alone: the graph is still printed,\n"
    "                   a running task there with its coroutine only, and a\n"
    "                   warning on stderr)\n"
    "  --no-cache       do not cache code objects (no effect on a single dump)\n"
    CLI_BLOCKING_HELP
    CLI_PAUSE_TORN_HELP
    CLI_UNTESTED_HELP
    "  --help           print this help\n"
    "\n"
    "Exit status: 0 on success; 1 with a one-line message on stderr on error\n"
    "(process exited, permission denied, not a Python process, unsupported\n"
    "version, incomplete sample: a thread torn on every retry or deeper than\n"
    "--max-depth, printed without frames); 2 on a usage error.\n";

/* `dump --async` once attached: reads the graph count times (the library
 * stops and resumes the target each time) and prints each; returns the
 * exit status (an error when any read failed).  stale: print each graph
 * with the previous read's awaiter edges (a self-test fault). */
static int dump_async(fp_session *s, int pid, int json, unsigned long count, unsigned long interval_us, bool stale)
{
    const struct timespec gap = {.tv_sec = (time_t)(interval_us / 1000000u),
                                 .tv_nsec = (long)(interval_us % 1000000u) * 1000L};
    fp_async_graph *g = NULL, *prev = NULL;
    fp_sample *sm = NULL;
    fp_python_info py;
    fp_session_get_python(s, &py);
    unsigned long failed = 0;
    int last = FP_OK;
    if (fp_sample_new(&sm)) {
        fprintf(stderr, "frameproof dump: %s\n", fp_error_describe(FP_E_NOMEM));
        return CLI_EXIT_ERROR;
    }
    for (unsigned long i = 0; i < count; i++) {
        if (i && interval_us)
            (void)nanosleep(&gap, NULL); /* a signal cutting it short only shortens one gap */
        /* the threads' stacks too: a running task's is what it runs now */
        int rc = fp_async_graph_read_sample(s, sm, &g);
        if (rc) {
            failed++;
            last = rc;
            if (count == 1 || rc == FP_E_PROCESS_GONE || rc == FP_E_PERMISSION) {
                fprintf(stderr, "frameproof dump: %s\n", fp_session_get_errmsg(s));
                goto out;
            }
            cli_async_output_json_error(stdout, pid, rc, fp_session_get_errmsg(s));
            continue;
        }
        if (fp_session_get_errmsg(s)[0] && count == 1) /* the graph is whole; a thread's stack is not */
            fprintf(stderr, "frameproof dump: warning: %s (a running task on that thread is shown with its "
                            "coroutine only)\n", fp_session_get_errmsg(s));
        if (json) {
            cli_async_output_json(stdout, pid, &py, g, sm, stale ? prev : NULL);
        } else if (cli_async_output_text(stdout, pid, &py, g, sm)) {
            fprintf(stderr, "frameproof dump: %s\n", fp_error_describe(FP_E_NOMEM));
            goto out;
        }
        fp_async_graph_free(prev);
        prev = g;
        g = NULL;
    }
    if (failed)
        fprintf(stderr, "frameproof dump: %lu of %lu reads failed, the last: %s\n", failed, count,
                fp_error_describe(last));
out:
    fp_async_graph_free(g);
    fp_async_graph_free(prev);
    fp_sample_free(sm);
    if (fflush(stdout) != 0)
        return CLI_EXIT_ERROR;
    return failed ? CLI_EXIT_ERROR : CLI_EXIT_OK;
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
        {"count", required_argument, NULL, 'c'},
        {"interval", required_argument, NULL, 'i'},
        {"inject-fault", required_argument, NULL, 'I'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    fp_options o;
    fp_options_init(&o);
    unsigned long pid = 0, v, count = 1, interval_us = 0;
    int json = 0, async = 0, c;
    bool count_given = false, interval_given = false, stale = false;
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
        case 'c':
            if (cli_parse_uint(optarg, CLI_DUMP_MAX_COUNT, &count) || count == 0) {
                fprintf(stderr, "frameproof dump: --count must be 1 to %lu, not '%s'\n", CLI_DUMP_MAX_COUNT, optarg);
                return CLI_EXIT_USAGE;
            }
            count_given = true;
            break;
        case 'i':
            if (cli_parse_uint(optarg, CLI_DUMP_MAX_INTERVAL_US, &interval_us)) {
                fprintf(stderr, "frameproof dump: --interval must be 0 to %lu microseconds, not '%s'\n",
                        CLI_DUMP_MAX_INTERVAL_US, optarg);
                return CLI_EXIT_USAGE;
            }
            interval_given = true;
            break;
        case 'I':
            if (strcmp(optarg, "stale-awaiter") != 0) {
                fprintf(stderr, "frameproof dump: --inject-fault must be stale-awaiter, not '%s'\n", optarg);
                return CLI_EXIT_USAGE;
            }
            stale = true;
            break;
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
    if (count_given && !(async && json)) {
        fputs("frameproof dump: --count needs --async --json\n", stderr);
        return CLI_EXIT_USAGE;
    }
    if (interval_given && !count_given) {
        fputs("frameproof dump: --interval needs --count\n", stderr);
        return CLI_EXIT_USAGE;
    }
    if (stale && !count_given) {
        fputs("frameproof dump: --inject-fault stale-awaiter needs --count\n", stderr);
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
        status = dump_async(s, (int)pid, json, count, interval_us, stale);
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
