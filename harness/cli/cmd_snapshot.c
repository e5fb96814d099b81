/* cmd_snapshot.c — `frameproof snapshot`: stop every thread of a process
 * (frameproof/pause.h), sample it twice through a recording reader (a cold
 * and a cache-warm sample), with --async also read asyncio's task graph
 * through it, resume it on every path and write the memory read as a
 * memory image (.fpimg).
 *
 * Signals that would end this process (INT, TERM, HUP, QUIT) are blocked
 * while the target is stopped, so the detach always runs first; if this
 * process is killed outright, the kernel detaches its tracees anyway.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include "cli.h"
#include "frameproof/async.h"
#include "frameproof/frameproof.h"
#include "frameproof/image.h"
#include "frameproof/pause.h"

#define SNAP_SAMPLES 2
#define SNAP_MSG_MAX 2048

static const char SNAPSHOT_USAGE[] =
    "usage: frameproof snapshot --pid PID -o FILE [--async] [--reader vm|mem] [--granule N]\n"
    "                          [--no-stop] [--keep-failed] [--allow-untested-version]\n"
    "\n"
    "Stops every thread of process PID, samples it twice (a cold and a\n"
    "cache-warm sample) through a recording reader, resumes it, and writes the\n"
    "memory those samples read as a memory image that `frameproof replay`\n"
    "unwinds offline (format: docs/image-format.md).\n"
    "\n"
    "  --pid PID        process to capture (required)\n"
    "  -o, --output F   image file to write (required)\n"
    "  --async          also read asyncio's task graph (CPython 3.11+),\n"
    "                   so that `replay --async` shows it; on 3.14+ fails when\n"
    "                   asyncio's C module is not loaded in PID\n"
    "  --reader KIND    memory reader: vm (process_vm_readv) or mem\n"
    "                   (/proc/PID/mem) (default vm)\n"
    "  --granule N      recorded ranges are rounded out to N bytes, a power of\n"
    "                   two from 8 to 4096 (default 64)\n"
    "  --no-stop        do not stop the process (the image may be torn)\n"
    "  --keep-failed    write the image also when a sample fails on what it\n"
    "                   read (torn, incomplete, corrupt, over a limit, an\n"
    "                   unreadable address): replay then fails the same way,\n"
    "                   offline, for a bug report or a regression image; the\n"
    "                   failure is named on stderr and the exit status is 0\n"
    "  --allow-untested-version\n"
    "                   capture a CPython newer than " CLI_NEWEST " (replay it with the\n"
    "                   same option)\n"
    "  --help           print this help\n"
    "\n"
    "Exit status: 0 on success; 1 with a message on stderr on error; 2 on a\n"
    "usage error.\n";

/* A sample that failed on what it read from the target, not on the
 * machine (memory, permissions, the process gone): its image replays the
 * failure. */
static bool failed_on_target(int rc)
{
    return rc == FP_E_INCOMPLETE || rc == FP_E_CORRUPT || rc == FP_E_LIMIT || rc == FP_E_READ;
}

typedef struct snap_opts {
    int reader_kind;
    uint32_t granule;
    bool allow_untested, keep_failed, async;
} snap_opts;

#define SNAP_ASYNC_TABLE_HEX 0x030e0000u /* the first CPython with asyncio's debug table */

/* With --async: asyncio's table found through the live session (0: its C
 * module not loaded, an error). */
static int find_table(fp_session *live, int pid, uint64_t *at, char *msg, size_t msglen)
{
    int rc = fp_session_get_asyncio_table(live, at);
    if (rc)
        snprintf(msg, msglen, "--async: %s", fp_session_get_errmsg(live));
    else if (!*at) {
        rc = FP_E_UNSUPPORTED;
        snprintf(msg, msglen, "--async: asyncio's C module is not loaded in process %d: no task graph to capture", pid);
    }
    return rc;
}

/* Samples the stopped target through a recording reader and fills *out
 * with an image builder holding everything read.  With keep_failed, a
 * sample or graph read that fails on the target's memory is named in
 * failed (else failed is left empty) and the image is still built. */
static int capture(const fp_pause *st, int pid, const snap_opts *so, fp_image_builder **out, char *msg, size_t msglen,
                   char *failed, size_t failedlen)
{
    fp_options o1, o2;
    fp_session *live = NULL, *rec_s = NULL;
    fp_sample *sm = NULL;
    fp_reader inner = {0}, rr;
    fp_recorder *rec = NULL;
    fp_image_builder *b = NULL;
    fp_async_graph *g = NULL;
    fp_python_info py;
    uint64_t at = 0;
    char rmsg[SNAP_MSG_MAX] = "";
    int rc;

    fp_options_init(&o1);
    o1.reader = so->reader_kind;
    o1.allow_untested = so->allow_untested;
    if ((rc = fp_session_new(&o1, &live)) || (rc = fp_sample_new(&sm)))
        goto fail_code;
    if ((rc = fp_session_attach_pid(live, pid))) {
        snprintf(msg, msglen, "%s", fp_session_get_errmsg(live));
        goto out;
    }
    fp_session_get_python(live, &py);
    /* 3.14+: the table's address goes into the image; before, the graph
     * is read through the runtime the image holds anyway */
    if (so->async && py.hexversion >= SNAP_ASYNC_TABLE_HEX && (rc = find_table(live, pid, &at, msg, msglen)))
        goto out;
    rc = so->reader_kind == FP_READER_MEM ? fp_reader_open_mem(pid, &inner, rmsg, sizeof rmsg)
                                      : fp_reader_open_vm(pid, &inner, rmsg, sizeof rmsg);
    if (rc) {
        snprintf(msg, msglen, "%s", rmsg);
        goto out;
    }
    if ((rc = fp_recorder_new(&inner, so->granule, &rec)) || (rc = fp_reader_open_recorder(rec, &rr)))
        goto fail_code;
    /* The same options as `replay`, so the replayed walk reads the same. */
    fp_options_init(&o2);
    o2.thread_cpu_state = false;
    o2.allow_untested = so->allow_untested;
    if ((rc = fp_session_new(&o2, &rec_s)))
        goto fail_code;
    fp_target_desc desc = {
        .runtime_addr = py.runtime_addr,
        .hexversion = py.hexversion,
        .free_threaded = py.free_threaded,
        .debug = py.debug,
        .pid = 0, /* the target is stopped already (or --no-stop): read as it stands */
        .asyncio_debug_addr = at,
    };
    if ((rc = fp_session_attach_reader(rec_s, &rr, &desc))) {
        snprintf(msg, msglen, "attaching through the recorder: %s", fp_session_get_errmsg(rec_s));
        goto out;
    }
    for (int i = 0; i < SNAP_SAMPLES; i++) {
        if ((rc = fp_session_sample(rec_s, sm))) {
            if (so->keep_failed && failed_on_target(rc)) {
                if (!failed[0])
                    snprintf(failed, failedlen, "sample %d: %s", i + 1, fp_session_get_errmsg(rec_s));
                continue;
            }
            snprintf(msg, msglen, "sample %d: %s", i + 1, fp_session_get_errmsg(rec_s));
            goto out;
        }
    }
    if (so->async && (rc = fp_async_graph_read(rec_s, &g))) {
        if (!(so->keep_failed && failed_on_target(rc))) {
            snprintf(msg, msglen, "asyncio's task graph: %s", fp_session_get_errmsg(rec_s));
            goto out;
        }
        if (!failed[0])
            snprintf(failed, failedlen, "asyncio's task graph: %s", fp_session_get_errmsg(rec_s));
    }
    fp_image_meta meta;
    memset(&meta, 0, sizeof meta);
    meta.pid = pid;
    meta.hexversion = py.hexversion;
    meta.free_threaded = py.free_threaded;
    meta.debug = py.debug;
    meta.runtime_addr = py.runtime_addr;
    meta.asyncio_debug_addr = at;
    snprintf(meta.version, sizeof meta.version, "%s", py.version);
    if ((rc = fp_image_builder_new(&meta, &b)))
        goto fail_code;
    for (size_t i = 0; i < fp_pause_get_thread_count(st); i++)
        if ((rc = fp_image_builder_add_thread(b, fp_pause_get_thread_id(st, i), fp_pause_get_thread_state(st, i))))
            goto fail_code;
    if ((rc = fp_recorder_capture(rec, b, rmsg, sizeof rmsg))) {
        snprintf(msg, msglen, "%s", rmsg);
        goto out;
    }
    *out = b;
    b = NULL;
    goto out;
fail_code:
    snprintf(msg, msglen, "%s", fp_error_describe(rc));
out:
    fp_async_graph_free(g);
    fp_image_builder_free(b);
    fp_session_free(rec_s);
    fp_recorder_free(rec);
    fp_reader_close(&inner);
    fp_sample_free(sm);
    fp_session_free(live);
    return rc;
}

int cli_cmd_snapshot(int argc, char **argv)
{
    static const struct option opts[] = {
        {"pid", required_argument, NULL, 'p'},
        {"output", required_argument, NULL, 'o'},
        {"reader", required_argument, NULL, 'r'},
        {"granule", required_argument, NULL, 'g'},
        {"no-stop", no_argument, NULL, 'n'},
        {"async", no_argument, NULL, 'A'},
        {"keep-failed", no_argument, NULL, 'k'},
        {"allow-untested-version", no_argument, NULL, 'U'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    unsigned long pid = 0, v;
    const char *output = NULL;
    int c;
    snap_opts so = {.reader_kind = FP_READER_VM, .granule = FP_RECORD_DEFAULT_GRANULE};
    bool stop = true;
    optind = 1;
    while ((c = getopt_long(argc, argv, "p:o:r:g:nh", opts, NULL)) != -1) {
        switch (c) {
        case 'p':
            if (cli_parse_uint(optarg, INT_MAX, &pid) || pid == 0) {
                fprintf(stderr, "frameproof snapshot: invalid pid '%s'\n", optarg);
                return CLI_EXIT_USAGE;
            }
            break;
        case 'o': output = optarg; break;
        case 'r':
            if (cli_parse_reader("snapshot", optarg, 0, &so.reader_kind))
                return CLI_EXIT_USAGE;
            break;
        case 'g':
            if (cli_parse_uint(optarg, FP_RECORD_MAX_GRANULE, &v) || v < FP_RECORD_MIN_GRANULE || (v & (v - 1))) {
                fprintf(stderr, "frameproof snapshot: --granule must be a power of two from %u to %u\n",
                        FP_RECORD_MIN_GRANULE, FP_RECORD_MAX_GRANULE);
                return CLI_EXIT_USAGE;
            }
            so.granule = (uint32_t)v;
            break;
        case 'n': stop = false; break;
        case 'k': so.keep_failed = true; break;
        case 'A': so.async = true; break;
        case 'U': so.allow_untested = true; break;
        case 'h': fputs(SNAPSHOT_USAGE, stdout); return CLI_EXIT_OK;
        default: fputs(SNAPSHOT_USAGE, stderr); return CLI_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "frameproof snapshot: unexpected argument '%s'\n", argv[optind]);
        return CLI_EXIT_USAGE;
    }
    if (!pid || !output) {
        fprintf(stderr, "frameproof snapshot: --pid and --output are required\n%s", SNAPSHOT_USAGE);
        return CLI_EXIT_USAGE;
    }

    char msg[SNAP_MSG_MAX] = "", failed[SNAP_MSG_MAX] = "";
    fp_pause *st = NULL;
    fp_image_builder *b = NULL;
    int status = CLI_EXIT_ERROR, rc;
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    sigaddset(&block, SIGQUIT);
    sigprocmask(SIG_BLOCK, &block, &old);
    rc = fp_pause_new((int)pid, stop, &st, msg, sizeof msg);
    if (rc == FP_OK)
        rc = capture(st, (int)pid, &so, &b, msg, sizeof msg, failed, sizeof failed);
    fp_pause_free(st);
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        fprintf(stderr, "frameproof snapshot: %s\n", *msg ? msg : fp_error_describe(rc));
        goto out;
    }
    if ((rc = fp_image_builder_write(b, output, msg, sizeof msg))) {
        fprintf(stderr, "frameproof snapshot: %s\n", msg);
        goto out;
    }
    if (failed[0])
        fprintf(stderr, "frameproof snapshot: wrote %s although %s (replay fails the same way)\n", output, failed);
    status = CLI_EXIT_OK;
out:
    fp_image_builder_free(b);
    return status;
}
