/* cmd_snapshot.c — `frameproof snapshot`: stop every thread of a process
 * (PTRACE_SEIZE + PTRACE_INTERRUPT), sample it twice through a recording
 * reader (a cold and a cache-warm sample), resume it (PTRACE_DETACH on every
 * path) and write the memory the samples read as a memory image (.fpimg).
 *
 * Signals that would end this process (INT, TERM, HUP, QUIT) are blocked
 * while the target is stopped, so the detach always runs first; if this
 * process is killed outright, the kernel detaches its tracees anyway.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>

#include "cli.h"
#include "frameproof/frameproof.h"
#include "frameproof/image.h"

/* How long one thread may take to reach its interrupt stop. */
#define SNAP_STOP_TIMEOUT_MS 5000L
/* How long a thread that timed out gets again before detaching it. */
#define SNAP_DETACH_GRACE_MS 500L
#define SNAP_POLL_NS 1000000L
#define SNAP_NS_PER_MS 1000000L
/* Passes over /proc/PID/task until no new thread appears. */
#define SNAP_MAX_PASSES 64
#define SNAP_MAX_TASKS FP_IMAGE_MAX_THREADS
#define SNAP_SAMPLES 2
#define SNAP_PATH_MAX 128
#define SNAP_STAT_MAX 1024
#define SNAP_MSG_MAX 2048

typedef struct task {
    long tid;
    char state;       /* scheduler state before the stop, 0 if unknown */
    bool seized;
    bool stopped;
    int pending_sig;  /* signal to re-inject at detach */
} task;

typedef struct stopper {
    int pid;
    task *t;
    size_t n, cap;
} stopper;

static const char SNAPSHOT_USAGE[] =
    "usage: frameproof snapshot --pid PID -o FILE [--reader vm|mem] [--granule N] [--no-stop]\n"
    "                          [--allow-untested-version]\n"
    "\n"
    "Stops every thread of process PID, samples it twice (a cold and a\n"
    "cache-warm sample) through a recording reader, resumes it, and writes the\n"
    "memory those samples read as a memory image that `frameproof replay`\n"
    "unwinds offline (format: docs/image-format.md).\n"
    "\n"
    "  --pid PID        process to capture (required)\n"
    "  -o, --output F   image file to write (required)\n"
    "  --reader KIND    memory reader: vm (process_vm_readv) or mem\n"
    "                   (/proc/PID/mem) (default vm)\n"
    "  --granule N      recorded ranges are rounded out to N bytes, a power of\n"
    "                   two from 8 to 4096 (default 64)\n"
    "  --no-stop        do not stop the process (the image may be torn)\n"
    "  --allow-untested-version\n"
    "                   capture a CPython newer than " FP_CLI_NEWEST " (replay it with the\n"
    "                   same option)\n"
    "  --help           print this help\n"
    "\n"
    "Exit status: 0 on success; 1 with a message on stderr on error; 2 on a\n"
    "usage error.\n";

static char task_state(int pid, long tid)
{
    char path[SNAP_PATH_MAX], buf[SNAP_STAT_MAX];
    snprintf(path, sizeof path, "/proc/%d/task/%ld/stat", pid, tid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ')
        return 0;
    char c = p[2];
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ? c : 0;
}

static task *find_task(stopper *st, long tid)
{
    for (size_t i = 0; i < st->n; i++)
        if (st->t[i].tid == tid)
            return &st->t[i];
    return NULL;
}

/* Adds every thread of /proc/PID/task not yet known; *added counts them. */
static int scan_tasks(stopper *st, size_t *added, char *msg, size_t msglen)
{
    char path[SNAP_PATH_MAX];
    snprintf(path, sizeof path, "/proc/%d/task", st->pid);
    DIR *d = opendir(path);
    if (!d) {
        int err = errno;
        snprintf(msg, msglen, "cannot list %s: %s", path, strerror(err));
        return err == ENOENT ? FP_E_PROCESS_GONE : FP_E_IO;
    }
    int rc = FP_OK;
    struct dirent *de;
    *added = 0;
    while ((de = readdir(d))) {
        char *end;
        long tid = strtol(de->d_name, &end, 10);
        if (*end || tid <= 0 || find_task(st, tid))
            continue;
        if (st->n >= SNAP_MAX_TASKS) {
            snprintf(msg, msglen, "process %d has more than %u threads", st->pid, SNAP_MAX_TASKS);
            rc = FP_E_LIMIT;
            break;
        }
        if (st->n == st->cap) {
            size_t ncap = st->cap ? st->cap * 2 : 16;
            task *nt = realloc(st->t, ncap * sizeof *nt);
            if (!nt) {
                rc = FP_E_NOMEM;
                break;
            }
            st->t = nt;
            st->cap = ncap;
        }
        st->t[st->n++] = (task){.tid = tid, .state = task_state(st->pid, tid)};
        (*added)++;
    }
    closedir(d);
    return rc;
}

static void sleep_poll(void)
{
    struct timespec ts = {0, SNAP_POLL_NS};
    nanosleep(&ts, NULL);
}

/* Waits up to timeout_ms for a seized thread's stop.  Returns 1 when it is
 * stopped, 0 when it is gone, -1 on time-out. */
static int wait_stop(task *t, long timeout_ms)
{
    for (long waited = 0; waited <= timeout_ms * SNAP_NS_PER_MS; waited += SNAP_POLL_NS) {
        int status;
        pid_t r = waitpid((pid_t)t->tid, &status, __WALL | WNOHANG);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return 0; /* ECHILD: no longer traced by us (it exited) */
        if (r == (pid_t)t->tid) {
            if (WIFEXITED(status) || WIFSIGNALED(status))
                return 0;
            if (WIFSTOPPED(status)) {
                if ((status >> 16) != PTRACE_EVENT_STOP)
                    t->pending_sig = WSTOPSIG(status); /* signal-delivery stop */
                t->stopped = true;
                return 1;
            }
        }
        sleep_poll();
    }
    return -1;
}

/* Seizes and interrupts every thread, passes until the set is stable. */
static int stop_all(stopper *st, char *msg, size_t msglen)
{
    for (int pass = 0; pass < SNAP_MAX_PASSES; pass++) {
        size_t added;
        int rc = scan_tasks(st, &added, msg, msglen);
        if (rc)
            return rc;
        if (added == 0 && pass > 0)
            return FP_OK;
        for (size_t i = 0; i < st->n; i++) {
            task *t = &st->t[i];
            if (t->seized)
                continue;
            if (ptrace(PTRACE_SEIZE, (pid_t)t->tid, NULL, NULL) != 0) {
                int err = errno;
                if (err == ESRCH)
                    continue; /* exited meanwhile */
                snprintf(msg, msglen, "cannot stop thread %ld of process %d (PTRACE_SEIZE): %s", t->tid, st->pid,
                         strerror(err));
                return err == EPERM || err == EACCES ? FP_E_PERMISSION : FP_E_IO;
            }
            t->seized = true;
            if (ptrace(PTRACE_INTERRUPT, (pid_t)t->tid, NULL, NULL) != 0) {
                if (errno == ESRCH)
                    continue;
                snprintf(msg, msglen, "cannot interrupt thread %ld: %s", t->tid, strerror(errno));
                return FP_E_IO;
            }
            int w = wait_stop(t, SNAP_STOP_TIMEOUT_MS);
            if (w < 0) {
                snprintf(msg, msglen, "thread %ld of process %d did not stop within %ld ms", t->tid, st->pid,
                         SNAP_STOP_TIMEOUT_MS);
                return FP_E_IO;
            }
        }
    }
    snprintf(msg, msglen, "process %d kept creating threads", st->pid);
    return FP_E_LIMIT;
}

/* Detaches every seized thread, re-injecting signals it was stopped by. */
static void resume_all(stopper *st)
{
    for (size_t i = 0; i < st->n; i++) {
        task *t = &st->t[i];
        if (!t->seized)
            continue;
        if (!t->stopped && wait_stop(t, SNAP_DETACH_GRACE_MS) != 1) {
            /* Gone, or still running: a running tracee cannot be detached;
             * the kernel releases it when this process exits. */
            t->seized = false;
            continue;
        }
        ptrace(PTRACE_DETACH, (pid_t)t->tid, NULL, (void *)(intptr_t)t->pending_sig);
        t->seized = t->stopped = false;
    }
}

/* Samples the stopped target through a recording reader and fills *out
 * with an image builder holding everything read. */
static int capture(stopper *st, int reader_kind, uint32_t granule, bool allow_untested, fp_image_builder **out,
                   char *msg, size_t msglen)
{
    fp_options o1, o2;
    fp_session *live = NULL, *rec_s = NULL;
    fp_sample *sm = NULL;
    fp_reader inner = {0}, rr;
    fp_recorder *rec = NULL;
    fp_image_builder *b = NULL;
    fp_python_info py;
    char rmsg[SNAP_MSG_MAX] = "";
    int rc;

    fp_options_init(&o1);
    o1.reader = reader_kind;
    o1.allow_untested = allow_untested;
    if ((rc = fp_session_new(&o1, &live)) || (rc = fp_sample_new(&sm)))
        goto fail_code;
    if ((rc = fp_session_attach_pid(live, st->pid))) {
        snprintf(msg, msglen, "%s", fp_session_errmsg(live));
        goto out;
    }
    fp_session_python(live, &py);
    rc = reader_kind == FP_READER_MEM ? fp_reader_open_mem(st->pid, &inner, rmsg, sizeof rmsg)
                                      : fp_reader_open_vm(st->pid, &inner, rmsg, sizeof rmsg);
    if (rc) {
        snprintf(msg, msglen, "%s", rmsg);
        goto out;
    }
    if ((rc = fp_recorder_new(&inner, granule, &rec)) || (rc = fp_recorder_reader(rec, &rr)))
        goto fail_code;
    /* The same options as `replay`, so the replayed walk reads the same. */
    fp_options_init(&o2);
    o2.thread_cpu_state = false;
    o2.allow_untested = allow_untested;
    if ((rc = fp_session_new(&o2, &rec_s)))
        goto fail_code;
    fp_target_desc desc = {
        .runtime_addr = py.runtime_addr,
        .hexversion = py.hexversion,
        .free_threaded = py.free_threaded,
        .debug = py.debug,
        .pid = 0,
    };
    if ((rc = fp_session_attach_reader(rec_s, &rr, &desc))) {
        snprintf(msg, msglen, "attaching through the recorder: %s", fp_session_errmsg(rec_s));
        goto out;
    }
    for (int i = 0; i < SNAP_SAMPLES; i++) {
        if ((rc = fp_session_sample(rec_s, sm))) {
            snprintf(msg, msglen, "sample %d: %s", i + 1, fp_session_errmsg(rec_s));
            goto out;
        }
    }
    fp_image_meta meta;
    memset(&meta, 0, sizeof meta);
    meta.pid = st->pid;
    meta.hexversion = py.hexversion;
    meta.free_threaded = py.free_threaded;
    meta.debug = py.debug;
    meta.runtime_addr = py.runtime_addr;
    snprintf(meta.version, sizeof meta.version, "%s", py.version);
    if ((rc = fp_image_builder_new(&meta, &b)))
        goto fail_code;
    for (size_t i = 0; i < st->n; i++)
        if ((rc = fp_image_builder_add_thread(b, (uint64_t)st->t[i].tid, st->t[i].state)))
            goto fail_code;
    if ((rc = fp_recorder_capture(rec, b, rmsg, sizeof rmsg))) {
        snprintf(msg, msglen, "%s", rmsg);
        goto out;
    }
    *out = b;
    b = NULL;
    goto out;
fail_code:
    snprintf(msg, msglen, "%s", fp_strerror(rc));
out:
    fp_image_builder_free(b);
    fp_session_free(rec_s);
    fp_recorder_free(rec);
    fp_reader_close(&inner);
    fp_sample_free(sm);
    fp_session_free(live);
    return rc;
}

int fp_cmd_snapshot(int argc, char **argv)
{
    static const struct option opts[] = {
        {"pid", required_argument, NULL, 'p'},
        {"output", required_argument, NULL, 'o'},
        {"reader", required_argument, NULL, 'r'},
        {"granule", required_argument, NULL, 'g'},
        {"no-stop", no_argument, NULL, 'n'},
        {"allow-untested-version", no_argument, NULL, 'U'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    unsigned long pid = 0, v;
    const char *output = NULL;
    int reader_kind = FP_READER_VM, c;
    uint32_t granule = FP_RECORD_DEFAULT_GRANULE;
    bool stop = true, allow_untested = false;
    optind = 1;
    while ((c = getopt_long(argc, argv, "p:o:r:g:nh", opts, NULL)) != -1) {
        switch (c) {
        case 'p':
            if (fp_parse_uint(optarg, INT_MAX, &pid) || pid == 0) {
                fprintf(stderr, "frameproof snapshot: invalid pid '%s'\n", optarg);
                return FP_EXIT_USAGE;
            }
            break;
        case 'o': output = optarg; break;
        case 'r':
            if (fp_parse_reader("snapshot", optarg, 0, &reader_kind))
                return FP_EXIT_USAGE;
            break;
        case 'g':
            if (fp_parse_uint(optarg, FP_RECORD_MAX_GRANULE, &v) || v < FP_RECORD_MIN_GRANULE || (v & (v - 1))) {
                fprintf(stderr, "frameproof snapshot: --granule must be a power of two from %u to %u\n",
                        FP_RECORD_MIN_GRANULE, FP_RECORD_MAX_GRANULE);
                return FP_EXIT_USAGE;
            }
            granule = (uint32_t)v;
            break;
        case 'n': stop = false; break;
        case 'U': allow_untested = true; break;
        case 'h': fputs(SNAPSHOT_USAGE, stdout); return FP_EXIT_OK;
        default: fputs(SNAPSHOT_USAGE, stderr); return FP_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "frameproof snapshot: unexpected argument '%s'\n", argv[optind]);
        return FP_EXIT_USAGE;
    }
    if (!pid || !output) {
        fprintf(stderr, "frameproof snapshot: --pid and --output are required\n%s", SNAPSHOT_USAGE);
        return FP_EXIT_USAGE;
    }

    char msg[SNAP_MSG_MAX] = "";
    stopper st = {.pid = (int)pid};
    fp_image_builder *b = NULL;
    int status = FP_EXIT_ERROR, rc;
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    sigaddset(&block, SIGQUIT);
    sigprocmask(SIG_BLOCK, &block, &old);
    if (stop) {
        rc = stop_all(&st, msg, sizeof msg);
    } else {
        size_t added;
        rc = scan_tasks(&st, &added, msg, sizeof msg);
    }
    if (rc == FP_OK)
        rc = capture(&st, reader_kind, granule, allow_untested, &b, msg, sizeof msg);
    resume_all(&st);
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        fprintf(stderr, "frameproof snapshot: %s\n", *msg ? msg : fp_strerror(rc));
        goto out;
    }
    if ((rc = fp_image_builder_write(b, output, msg, sizeof msg))) {
        fprintf(stderr, "frameproof snapshot: %s\n", msg);
        goto out;
    }
    status = FP_EXIT_OK;
out:
    fp_image_builder_free(b);
    free(st.t);
    return status;
}
