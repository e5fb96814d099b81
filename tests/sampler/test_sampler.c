/* test_sampler.c — the sampling API (harness/sampler) against a real
 * interpreter: count, duration and rate bounds, the callback stopping a
 * run, a target killed under it, invalid configurations, the error
 * classification, missed ticks without catch-up and Poisson spacing, and
 * a paced run's timer slack and time slice, given back afterwards (a
 * caller's own slice too), and a real-time run's priority, given back
 * too, or refused with its reason; a colocated run's moves to the CPU of
 * the target's GIL holder, and the caller's affinity given back; the
 * self-test faults: drop-torn names torn threads to leave out, retry-quiet
 * takes a torn attempt again, each with the session's hook chained and
 * put back.
 * usage: test_sampler PYTHON (empty: skipped) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <linux/capability.h>
#include <linux/sched.h>
#include <linux/sched/types.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "colocate.h"
#include "sampler.h"

#define READY_TIMEOUT_MS 30000 /* interpreter start-up, slow under sanitizers */
#define MAX_RECORDED 1024      /* attempts a test callback records */
#define NS_PER_MS 1000000
#define TARGET_PROGRAM "import sys, time\nprint('ready', flush=True)\nwhile True: time.sleep(0.001)\n"
/* A worker thread spinning with the GIL while the main thread waits for it
 * without the GIL: the thread a colocated run follows is the worker. */
#define SPIN_PROGRAM                                                                                        \
    "import threading\ndef spin():\n    while True: pass\n"                                                  \
    "t = threading.Thread(target=spin, daemon=True)\nt.start()\nprint('ready', flush=True)\nt.join()\n"
/* A worker switching between two short call chains for ever: its walks
 * tear now and then under a sampler on another CPU. */
#define CHURN_PROGRAM                                                                                      \
    "import threading\ndef leaf(): return 1\ndef mid(): return leaf()\ndef other(): return 2\n"           \
    "def churn():\n    while True: mid(); other()\n"                                                      \
    "t = threading.Thread(target=churn, daemon=True)\nt.start()\nprint('ready', flush=True)\nt.join()\n"
/* A worker making code objects without pause and calling them: a
 * session's strings for their frames change from one sample to the next. */
#define CODEGEN_PROGRAM                                                                                    \
    "import threading\ndef make():\n    n = 0\n    while True:\n        n += 1\n        ns = {}\n"            \
    "        exec('def f%d():\\n    return g%d()\\ndef g%d():\\n    return 1\\n' % (n, n, n), ns)\n"        \
    "        ns['f%d' % n]()\n"                                                                             \
    "t = threading.Thread(target=make, daemon=True)\nt.start()\nprint('ready', flush=True)\nt.join()\n"
/* The main thread stopped in the return of `leaf`, in a C profile
 * function (cProfile's, whose timer, SimpleQueue.get, blocks on its second
 * call: the first is leaf's call event).  `leaf` is then the top frame,
 * its stack depth saved at its return, not at a call. */
#define RETURNING_PROGRAM                                                                                  \
    "import _queue, cProfile\nq = _queue.SimpleQueue()\ndef leaf():\n    return 1\n"                    \
    "p = cProfile.Profile(q.get, builtins=False)\nq.put(0)\nprint('ready', flush=True)\n"               \
    "p.enable()\nleaf()\n"
#define BLOCKED_TRIES 500   /* polls, BLOCKED_PAUSE_NS apart, before the thread must be blocked */
#define BLOCKED_PAUSE_NS 10000000L
#define FAULT_SAMPLES 4000 /* back-to-back attempts of a fault test: enough to see walks torn */
#define COLOCATE_SAMPLES 30
#define CPU_READ_TRIES 20   /* a running thread may move between two reads of its CPU */
#define HOLDER_TRIES 300    /* samples, HOLDER_PAUSE_NS apart, before the worker must have been seen with the GIL */
#define HOLDER_PAUSE_NS 10000000L /* on a loaded machine the worker may wait for a CPU, the GIL free meanwhile */

static const char *python;

/* A running interpreter with a session attached to it. */
typedef struct target {
    pid_t pid;
    fp_session *s;
    fp_sample *sm;
} target;

/* Starts program and waits for its "ready" line. */
static pid_t spawn_program(const char *program)
{
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fd[1], STDOUT_FILENO);
        close(fd[0]);
        close(fd[1]);
        execl(python, python, "-c", program, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    /* The line may arrive in more than one write. */
    struct pollfd p = {.fd = fd[0], .events = POLLIN};
    char line[16] = "";
    size_t len = 0;
    while (len < sizeof line - 1 && !strchr(line, '\n')) {
        assert_int_equal(poll(&p, 1, READY_TIMEOUT_MS), 1);
        ssize_t got = read(fd[0], line + len, sizeof line - 1 - len);
        assert_true(got > 0);
        len += (size_t)got;
    }
    close(fd[0]);
    assert_string_equal(line, "ready\n");
    return pid;
}

static void reap(pid_t pid)
{
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

static int setup_program(void **state, const char *program)
{
    target *t = calloc(1, sizeof *t);
    assert_non_null(t);
    t->pid = spawn_program(program);
    assert_int_equal(fp_session_new(NULL, &t->s), FP_OK);
    assert_int_equal(fp_sample_new(&t->sm), FP_OK);
    int rc = fp_session_attach_pid(t->s, (int)t->pid);
    if (rc)
        fail_msg("attach: %s", fp_session_get_errmsg(t->s));
    *state = t;
    return 0;
}

static int setup(void **state)
{
    return setup_program(state, TARGET_PROGRAM);
}

static int setup_churn(void **state)
{
    return setup_program(state, CHURN_PROGRAM);
}

static int setup_codegen(void **state)
{
    return setup_program(state, CODEGEN_PROGRAM);
}

static int setup_spin(void **state)
{
    return setup_program(state, SPIN_PROGRAM);
}

static int setup_returning(void **state)
{
    return setup_program(state, RETURNING_PROGRAM);
}

static int teardown(void **state)
{
    target *t = *state;
    fp_sample_free(t->sm);
    fp_session_free(t->s);
    if (t->pid > 0)
        reap(t->pid);
    free(t);
    return 0;
}

/* What the test callback saw. */
typedef struct record {
    uint64_t calls;
    uint64_t stop_at;        /* return nonzero at this index (UINT64_MAX: never) */
    uint64_t stall_at;       /* sleep stall_ns in the callback at this index */
    int64_t stall_ns;
    bool in_order;           /* every index was the previous one plus one */
    bool sample_ok;          /* the sample pointer was set exactly when it should be */
    int slack_ns;            /* the thread's timer slack during the first callback */
    struct sched_attr sched; /* its scheduling attributes then */
    int child_policy;        /* the policy a child forked then started with (-1: none forked) */
    bool fork_child;         /* fork that child */
    int64_t t_ns[MAX_RECORDED];
} record;

static void get_sched(struct sched_attr *a)
{
    memset(a, 0, sizeof *a);
    assert_int_equal(syscall(SYS_sched_getattr, 0, a, (unsigned)sizeof *a, 0u), 0);
}

/* The calling thread's scheduling policy, or -1 (no cmocka assertion:
 * also called in forked children). */
static int policy_now(void)
{
    struct sched_attr a;
    memset(&a, 0, sizeof a);
    return syscall(SYS_sched_getattr, 0, &a, (unsigned)sizeof a, 0u) == 0 ? (int)a.sched_policy : -1;
}

/* The scheduling policy a child forked now starts with. */
static int child_policy(void)
{
    pid_t pid = fork();
    if (pid == 0)
        _exit(policy_now() & 0x7f);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return -2;
    return WEXITSTATUS(status);
}

static void record_init(record *r)
{
    memset(r, 0, sizeof *r);
    r->child_policy = -1;
    r->stop_at = r->stall_at = UINT64_MAX;
    r->in_order = r->sample_ok = true;
}

static int on_sample(void *ctx, const fps_outcome *o)
{
    record *r = ctx;
    if (o->index != r->calls)
        r->in_order = false;
    if ((o->sample != NULL) != (o->rc == FP_OK || o->rc == FP_E_INCOMPLETE) || o->cls != fps_classify(o->rc) ||
        (o->rc == FP_OK && strcmp(o->errmsg, "") != 0))
        r->sample_ok = false;
    if (o->index < MAX_RECORDED)
        r->t_ns[o->index] = o->t_ns;
    if (r->calls++ == 0) {
        r->slack_ns = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
        get_sched(&r->sched);
        if (r->fork_child)
            r->child_policy = child_policy();
    }
    if (o->index == r->stall_at) {
        struct timespec ts = {.tv_sec = r->stall_ns / 1000000000, .tv_nsec = r->stall_ns % 1000000000};
        nanosleep(&ts, NULL);
    }
    return o->index == r->stop_at;
}

static fps_config config(double rate_hz, double duration_s, uint64_t count)
{
    fps_config c;
    fps_config_init(&c);
    c.rate_hz = rate_hz;
    c.duration_s = duration_s;
    c.count = count;
    return c;
}

/* Runs c on t with the recording callback; fps_run must return `expect`. */
static void run(target *t, const fps_config *c, record *r, fps_stats *st, int expect)
{
    assert_int_equal(fps_run(t->s, t->sm, c, on_sample, r, st), expect);
}

static void assert_counts_add_up(const fps_stats *st)
{
    assert_int_equal(st->ok + st->transient + st->fatal, st->attempts);
    uint64_t sum = 0;
    for (int i = 0; i < FPS_ERROR_SLOTS; i++)
        sum += st->by_error[i];
    assert_int_equal(sum, st->attempts);
    assert_int_equal(st->by_error[0], st->ok);
}

static void test_count(void **state)
{
    target *t = *state;
    fps_config c = config(0, 0, 50);
    record r;
    record_init(&r);
    fps_stats st;
    run(t, &c, &r, &st, FP_OK);
    assert_int_equal(st.attempts, 50);
    assert_int_equal(st.ok + st.transient, 50);
    assert_int_equal(st.fatal, 0);
    assert_int_equal(r.calls, 50);
    assert_true(r.in_order);
    assert_true(r.sample_ok);
    assert_int_equal(st.stop_reason, FPS_STOP_COUNT);
    assert_int_equal(st.missed_ticks, 0);
    assert_string_equal(st.first_fatal, "");
    assert_true(st.elapsed_s > 0 && st.achieved_rate_hz > 0);
    assert_counts_add_up(&st);
}

#define RATE_HZ 200.0
#define RATE_DURATION_S 0.5
#define RATE_TICKS 100 /* RATE_HZ * RATE_DURATION_S: ticks at 0, 5, ..., 495 ms */
#define RATE_MIN_ATTEMPTS 80
#define PERIOD_NS ((int64_t)(1e9 / RATE_HZ))

static void test_rate(void **state)
{
    target *t = *state;
    fps_config c = config(RATE_HZ, RATE_DURATION_S, 0);
    record r;
    record_init(&r);
    fps_stats st;
    int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    struct sched_attr before, after;
    get_sched(&before);
    run(t, &c, &r, &st, FP_OK);
    /* A paced run sleeps with a 1 ns timer slack and gives the caller's back. */
    assert_int_equal(r.slack_ns, 1);
    assert_int_equal(prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0), slack);
    /* It runs with a 100 us time slice where the kernel reports slices
     * (6.12 on: a fair task's sched_runtime; 0 before), its policy and nice
     * untouched, and gives the caller's slice back. */
    get_sched(&after);
    if (before.sched_runtime != 0)
        assert_int_equal(r.sched.sched_runtime, FPS_SLICE_NS);
    assert_int_equal(r.sched.sched_policy, before.sched_policy);
    assert_int_equal(r.sched.sched_nice, before.sched_nice);
    assert_int_equal(after.sched_runtime, before.sched_runtime);
    assert_int_equal(after.sched_policy, before.sched_policy);
    assert_int_equal(after.sched_nice, before.sched_nice);
    assert_int_equal(st.stop_reason, FPS_STOP_DURATION);
    assert_in_range(st.attempts, RATE_MIN_ATTEMPTS, RATE_TICKS);
    /* Every tick before the deadline was either sampled or missed. */
    assert_int_equal(st.attempts + st.missed_ticks, RATE_TICKS);
    /* Over the covered schedule (the whole duration): attempts / duration. */
    assert_true(fabs(st.achieved_rate_hz - (double)st.attempts / RATE_DURATION_S) < 1e-6);
    assert_true(st.elapsed_s < RATE_DURATION_S + 0.25);
    /* Attempt i started no earlier than tick i: a paced run, not back to back. */
    for (uint64_t i = 0; i < st.attempts; i++)
        assert_true(r.t_ns[i] >= (int64_t)i * PERIOD_NS);
    assert_counts_add_up(&st);
}

#define RT_COUNT 20
#define RT_HZ 1000.0

/* A realtime run samples at SCHED_FIFO priority FPS_RT_PRIORITY, a child
 * it forks starts as SCHED_NORMAL, and the caller's policy, nice and
 * slice are given back. */
static void test_realtime(void **state)
{
    target *t = *state;
    char msg[FPS_ERRMSG_MAX];
    if (fps_realtime_check(msg, sizeof msg) != FP_OK) {
        print_message("# skipped: %s\n", msg);
        skip();
    }
    fps_config c = config(RT_HZ, 0, RT_COUNT);
    c.realtime = true;
    record r;
    record_init(&r);
    r.fork_child = true;
    fps_stats st;
    struct sched_attr before, after;
    get_sched(&before);
    run(t, &c, &r, &st, FP_OK);
    get_sched(&after);
    assert_int_equal(st.attempts, RT_COUNT);
    assert_int_equal(r.sched.sched_policy, SCHED_FIFO);
    assert_int_equal(r.sched.sched_priority, FPS_RT_PRIORITY);
    assert_true(r.sched.sched_flags & SCHED_FLAG_RESET_ON_FORK);
    assert_int_equal(r.child_policy, SCHED_NORMAL);
    assert_int_equal(after.sched_policy, before.sched_policy);
    assert_int_equal(after.sched_priority, before.sched_priority);
    assert_int_equal(after.sched_nice, before.sched_nice);
    assert_int_equal(after.sched_runtime, before.sched_runtime);
    assert_int_equal(after.sched_flags, before.sched_flags);
    assert_counts_add_up(&st);
}

/* Refused real-time priority (no CAP_SYS_NICE, RLIMIT_RTPRIO 0) ends the
 * run before its first attempt with FP_E_PERMISSION and the reason, the
 * policy untouched.  Run in a child, which gives up the capability. */
static void test_realtime_refused(void **state)
{
    target *t = *state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
        struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
        struct rlimit rl = {0, 0};
        if (syscall(SYS_capget, &h, d) != 0)
            _exit(10);
        d[CAP_TO_INDEX(CAP_SYS_NICE)].effective &= ~CAP_TO_MASK(CAP_SYS_NICE);
        d[CAP_TO_INDEX(CAP_SYS_NICE)].permitted &= ~CAP_TO_MASK(CAP_SYS_NICE);
        if (syscall(SYS_capset, &h, d) != 0 || setrlimit(RLIMIT_RTPRIO, &rl) != 0)
            _exit(11);
        fps_config c = config(RT_HZ, 0, RT_COUNT);
        c.realtime = true;
        record r;
        record_init(&r);
        fps_stats st;
        char msg[FPS_ERRMSG_MAX];
        if (fps_realtime_check(msg, sizeof msg) != FP_E_PERMISSION)
            _exit(12);
        if (fps_run(t->s, t->sm, &c, on_sample, &r, &st) != FP_E_PERMISSION)
            _exit(13);
        if (st.attempts != 0 || r.calls != 0 || st.stop_reason != FPS_STOP_FATAL ||
            !strstr(st.first_fatal, "CAP_SYS_NICE") || policy_now() != SCHED_NORMAL)
            _exit(14);
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

#define CUSTOM_SLICE_NS 3000000ull /* a caller's own time slice, unlike the kernel's default */

static void set_slice(uint64_t ns)
{
    struct sched_attr a;
    get_sched(&a);
    a.size = sizeof a;
    a.sched_runtime = ns;
    assert_int_equal(syscall(SYS_sched_setattr, 0, &a, 0u), 0);
}

/* A caller that set its own time slice gets it back from a paced run and
 * from a realtime one (restore_sched writes a default slice back as 0,
 * which the kernel reports like any other: a custom one must not go). */
static void test_custom_slice_kept(void **state)
{
    target *t = *state;
    struct sched_attr a;
    get_sched(&a);
    if (a.sched_runtime == 0) {
        print_message("# skipped: this kernel reports no fair time slice (before 6.12)\n");
        skip();
    }
    set_slice(CUSTOM_SLICE_NS);
    char msg[FPS_ERRMSG_MAX];
    for (int realtime = 0; realtime <= 1; realtime++) {
        if (realtime && fps_realtime_check(msg, sizeof msg) != FP_OK)
            break;
        fps_config c = config(RT_HZ, 0, RT_COUNT);
        c.realtime = realtime;
        record r;
        record_init(&r);
        fps_stats st;
        run(t, &c, &r, &st, FP_OK);
        get_sched(&a);
        assert_int_equal(a.sched_runtime, CUSTOM_SLICE_NS);
    }
    set_slice(0); /* the default again */
}

#define STALL_INDEX 2
#define STALL_NS (6 * PERIOD_NS + PERIOD_NS / 2) /* runs past six ticks */
#define STALL_COUNT 8

/* A callback that overruns ticks: they are counted as missed and skipped,
 * never caught up in a burst of samples. */
static void test_missed_ticks(void **state)
{
    target *t = *state;
    fps_config c = config(RATE_HZ, 0, STALL_COUNT);
    record r;
    record_init(&r);
    r.stall_at = STALL_INDEX;
    r.stall_ns = STALL_NS;
    fps_stats st;
    run(t, &c, &r, &st, FP_OK);
    assert_int_equal(st.attempts, STALL_COUNT);
    assert_true(st.missed_ticks >= 6);
    assert_true(st.achieved_rate_hz < RATE_HZ * STALL_COUNT / (STALL_COUNT + 6) + 1e-6);
    for (int i = 1; i < STALL_COUNT; i++)
        assert_true(r.t_ns[i] - r.t_ns[i - 1] >= PERIOD_NS / 2);
}

#define STOP_INDEX 9

static void test_callback_stops(void **state)
{
    target *t = *state;
    fps_config c = config(0, 0, 0); /* unbounded: only the callback ends it */
    record r;
    record_init(&r);
    r.stop_at = STOP_INDEX;
    fps_stats st;
    run(t, &c, &r, &st, FP_OK);
    assert_int_equal(st.attempts, STOP_INDEX + 1);
    assert_int_equal(r.calls, STOP_INDEX + 1);
    assert_int_equal(st.stop_reason, FPS_STOP_CALLBACK);
    assert_true(r.in_order);
}

#define POISSON_HZ 1000.0
#define POISSON_COUNT 60
#define POISSON_MIN_CV 0.4 /* exponential gaps: about 1; fixed ones: near 0 */

/* A Poisson schedule's gaps vary as exponential ones do (a scheduler that
 * ignored `poisson` would space them evenly). */
static void test_poisson(void **state)
{
    target *t = *state;
    fps_config c = config(POISSON_HZ, 0, POISSON_COUNT);
    c.poisson = true;
    c.seed = 42;
    record r;
    record_init(&r);
    fps_stats st;
    run(t, &c, &r, &st, FP_OK);
    assert_int_equal(st.attempts, POISSON_COUNT);
    double sum = 0, sq = 0;
    for (int i = 1; i < POISSON_COUNT; i++) {
        double g = (double)(r.t_ns[i] - r.t_ns[i - 1]);
        sum += g;
        sq += g * g;
    }
    double n = POISSON_COUNT - 1, mean = sum / n, sd = sqrt(sq / n - mean * mean);
    print_message("# poisson gaps: mean %.0f ns, cv %.2f\n", mean, sd / mean);
    assert_true(sd / mean > POISSON_MIN_CV);
}

#define KILLED_COUNT 5

static void test_target_killed(void **state)
{
    target *t = *state;
    reap(t->pid);
    t->pid = 0;
    fps_config c = config(0, 0, KILLED_COUNT);
    record r;
    record_init(&r);
    fps_stats st;
    run(t, &c, &r, &st, FP_E_PROCESS_GONE);
    assert_int_equal(st.attempts, 1);
    assert_int_equal(st.fatal, 1);
    assert_int_equal(st.by_error[-FP_E_PROCESS_GONE], 1);
    assert_int_equal(r.calls, 1); /* the callback sees the fatal attempt too */
    assert_int_equal(st.stop_reason, FPS_STOP_FATAL);
    assert_true(st.first_fatal[0] != '\0');
    assert_string_equal(st.first_fatal, fp_session_get_errmsg(t->s));
}

static void test_invalid(void **state)
{
    target *t = *state;
    fps_config good = config(0, 0, 1);
    const struct {
        const char *what;
        double rate, duration;
        uint64_t count;
        bool poisson, cb;
    } bad[] = {
        {"negative rate", -1, 0, 1, false, true},
        {"NaN rate", NAN, 0, 1, false, true},
        {"infinite rate", INFINITY, 0, 1, false, true},
        {"rate above the limit", FPS_MAX_RATE_HZ * 2, 0, 1, false, true},
        {"negative duration", 0, -0.5, 1, false, true},
        {"NaN duration", 0, NAN, 1, false, true},
        {"duration above the limit", 0, FPS_MAX_DURATION_S * 2, 1, false, true},
        {"poisson without rate", 0, 0, 1, true, true},
        {"realtime without rate", 0, 0, 1, false, true},
        {"unbounded without callback", 0, 0, 0, false, false},
    };
    record r;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fps_config c = config(bad[i].rate, bad[i].duration, bad[i].count);
        c.poisson = bad[i].poisson;
        c.realtime = strcmp(bad[i].what, "realtime without rate") == 0;
        record_init(&r);
        fps_stats st;
        memset(&st, 0xff, sizeof st);
        print_message("# %s\n", bad[i].what);
        assert_int_equal(fps_run(t->s, t->sm, &c, bad[i].cb ? on_sample : NULL, &r, &st), FP_E_INVALID_ARG);
        assert_int_equal(st.attempts, 0);
        assert_int_equal(st.stop_reason, FPS_STOP_NONE);
        assert_int_equal(r.calls, 0);
    }
    assert_int_equal(fps_run(NULL, t->sm, &good, NULL, NULL, NULL), FP_E_INVALID_ARG);
    assert_int_equal(fps_run(t->s, NULL, &good, NULL, NULL, NULL), FP_E_INVALID_ARG);
    assert_int_equal(fps_run(t->s, t->sm, NULL, NULL, NULL, NULL), FP_E_INVALID_ARG);
    /* The same config, valid, with no stats wanted. */
    assert_int_equal(fps_run(t->s, t->sm, &good, NULL, NULL, NULL), FP_OK);
}

/* Thread tid of pid's /proc stat line into buf, or NULL when it is gone;
 * returns where the fields after "(comm)" start (at the space before them). */
static const char *stat_after_comm(pid_t pid, uint64_t tid, char *buf, size_t len)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task/%llu/stat", (int)pid, (unsigned long long)tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t got = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[got] = 0;
    return strrchr(buf, ')');
}

/* The CPU thread tid of process pid last ran on (field 39 of its stat). */
static int last_cpu(pid_t pid, uint64_t tid)
{
    char buf[1024];
    const char *p = stat_after_comm(pid, tid, buf, sizeof buf);
    assert_non_null(p);
    int cpu = -1;
    for (int field = 2; p && field < 39; field++)
        p = strchr(p + 1, ' ');
    assert_non_null(p);
    assert_int_equal(sscanf(p + 1, "%d", &cpu), 1);
    return cpu;
}

/* The calling thread's affinity mask, as the kernel gives it (the cpu_set_t
 * of <sched.h> would clash with <linux/sched/types.h>). */
#define MASK_WORDS (FPS_COLOCATE_MAX_CPUS / 64)
typedef struct cpu_mask {
    unsigned long w[MASK_WORDS];
} cpu_mask;

static bool get_mask_of(pid_t task, cpu_mask *m)
{
    memset(m, 0, sizeof *m);
    return syscall(SYS_sched_getaffinity, task, sizeof m->w, m->w) > 0;
}

static bool get_mask(cpu_mask *m)
{
    return get_mask_of(0, m);
}

static int only_cpu(const cpu_mask *m)
{
    for (int cpu = 0; cpu < FPS_COLOCATE_MAX_CPUS; cpu++)
        if (m->w[cpu / 64] & (1UL << (cpu % 64)))
            return cpu;
    return -1;
}

static int mask_count(const cpu_mask *m)
{
    int n = 0;
    for (size_t i = 0; i < MASK_WORDS; i++)
        n += __builtin_popcountl(m->w[i]);
    return n;
}

static int cpu_now(void)
{
    unsigned cpu = 0;
    return syscall(SYS_getcpu, &cpu, NULL, NULL) == 0 ? (int)cpu : -1;
}

/* A caller's own retry hook: what it heard. */
typedef struct own_hook {
    unsigned calls;
    uint64_t native_id;
} own_hook;

static void on_own_retry(void *ctx, uint64_t native_id)
{
    own_hook *h = ctx;
    h->calls++;
    h->native_id = native_id;
}

/* What the colocation callback saw of the calling thread's affinity and
 * of the session's retry hook. */
typedef struct colocated {
    uint64_t calls, one_cpu;   /* attempts, and those made with a one-CPU mask */
    fp_session *s;
    uint64_t tid;              /* the id the callback calls the run's hook with, once (0: not) */
    uint64_t other_hook;       /* attempts during which the session's hook was not the run's */
} colocated;

static int on_colocated(void *ctx, const fps_outcome *o)
{
    (void)o;
    colocated *c = ctx;
    cpu_mask m;
    c->calls++;
    if (get_mask(&m) && mask_count(&m) == 1)
        c->one_cpu++;
    fp_retry_hook hook = NULL;
    void *hook_ctx = NULL;
    if (c->s && fp_session_get_retry_hook(c->s, &hook, &hook_ctx) == FP_OK) {
        if (hook != fps_colocate_retry_hook)
            c->other_hook++;
        else if (c->tid) { /* as the library does before a torn walk's retry */
            hook(hook_ctx, c->tid);
            c->tid = 0;
        }
    }
    return 0;
}

/* A colocated run makes every attempt from one CPU, the one the target's
 * thread last ran on, and gives the caller its affinity back afterwards;
 * for the run the session's retry hook is the colocation's, which moves
 * and then calls the caller's own hook, and the caller's is set again at
 * the end. */
static void test_colocate_run(void **state)
{
    target *t = *state;
    cpu_mask before, after;
    assert_true(get_mask(&before));
    fps_config c = config(0, 0, COLOCATE_SAMPLES);
    c.colocate_pid = (int)t->pid;
    own_hook own = {0, 0};
    assert_int_equal(fp_session_set_retry_hook(t->s, on_own_retry, &own), FP_OK);
    colocated seen = {0, 0, t->s, (uint64_t)t->pid, 0};
    fps_stats st;
    assert_int_equal(fps_run(t->s, t->sm, &c, on_colocated, &seen, &st), FP_OK);
    assert_int_equal(seen.calls, COLOCATE_SAMPLES);
    assert_int_equal(seen.one_cpu, COLOCATE_SAMPLES);
    assert_int_equal(seen.other_hook, 0);
    assert_int_equal(seen.tid, 0);
    assert_true(st.colocate_moves >= 1);
    assert_int_equal(st.colocate_unknown, 0);
    /* The hook's one call follows the thread, or leaves the mover's CPU
     * when the thread stands running on it (test_colocate_escapes): which
     * depends on where the scheduler put the target's main thread. */
    assert_int_equal(st.colocate_retry_follows + st.colocate_escapes, 1);
    assert_int_equal(own.calls, 1); /* chained after the move, with the same id */
    assert_int_equal(own.native_id, (uint64_t)t->pid);
    fp_retry_hook hook = NULL;
    void *hook_ctx = NULL;
    assert_int_equal(fp_session_get_retry_hook(t->s, &hook, &hook_ctx), FP_OK);
    assert_ptr_equal(hook, on_own_retry);
    assert_ptr_equal(hook_ctx, &own);
    assert_true(get_mask(&after));
    assert_memory_equal(&before, &after, sizeof before);
    /* Without a hook of the caller's: none during the run but the run's, none after. */
    assert_int_equal(fp_session_set_retry_hook(t->s, NULL, NULL), FP_OK);
    colocated bare = {0, 0, t->s, 0, 0};
    assert_int_equal(fps_run(t->s, t->sm, &c, on_colocated, &bare, NULL), FP_OK);
    assert_int_equal(bare.other_hook, 0);
    assert_int_equal(fp_session_get_retry_hook(t->s, &hook, &hook_ctx), FP_OK);
    assert_null(hook);
    assert_null(hook_ctx);
    /* A run that is not colocated leaves the session's hook alone. */
    c.colocate_pid = 0;
    assert_int_equal(fp_session_set_retry_hook(t->s, on_own_retry, &own), FP_OK);
    assert_int_equal(fps_run(t->s, t->sm, &c, NULL, NULL, NULL), FP_OK);
    assert_int_equal(fp_session_get_retry_hook(t->s, &hook, &hook_ctx), FP_OK);
    assert_ptr_equal(hook, on_own_retry);
    assert_int_equal(fp_session_set_retry_hook(t->s, NULL, NULL), FP_OK);
    c.colocate_pid = -1;
    assert_int_equal(fps_run(t->s, t->sm, &c, NULL, NULL, NULL), FP_E_INVALID_ARG);
}

/* The native id of the spin program's worker, seen holding the GIL in a
 * sample of t (t->sm then holds that sample). */
static uint64_t spinning_holder(target *t)
{
    uint64_t holder = 0;
    int rc = FP_OK;
    /* The main thread holds the GIL too, briefly (until it blocks in join). */
    for (int k = 0; k < HOLDER_TRIES && (!holder || holder == (uint64_t)t->pid); k++) {
        if (k > 0) {
            struct timespec pause = {0, HOLDER_PAUSE_NS};
            nanosleep(&pause, NULL);
        }
        holder = 0;
        rc = fp_session_sample(t->s, t->sm);
        for (size_t i = 0; rc == FP_OK && i < fp_sample_get_thread_count(t->sm); i++)
            if (fp_sample_get_thread(t->sm, i)->holds_gil == FP_YES)
                holder = fp_sample_get_thread(t->sm, i)->native_id;
    }
    if (holder == 0 || holder == (uint64_t)t->pid)
        fail_msg("GIL holder %llu (main thread %d), last sample: %s %s", (unsigned long long)holder, (int)t->pid,
                 fp_error_describe(rc), fp_session_get_errmsg(t->s));
    return holder;
}

/* A failed walk of a running thread whose last CPU is the mover's own (it
 * stood still mid-update under the mover) makes the mover leave that CPU
 * (counted in escapes, not in retry_follows), and the same thread is not
 * followed back within the attempt; the next attempt's follow forgets it. */
static void test_colocate_escapes(void **state)
{
    target *t = *state;
    fps_colocation col;
    char msg[128];
    assert_int_equal(fps_colocate_start(&col, (int)t->pid, msg, sizeof msg), FP_OK);
    uint64_t holder = spinning_holder(t);
    bool escaped = false;
    int from = -1;
    for (int k = 0; k < CPU_READ_TRIES && !escaped; k++) {
        col.recheck_ns = 0;
        fps_colocate_follow(&col, t->s, t->sm); /* onto the worker's CPU */
        from = col.cpu;
        uint64_t follows = col.retry_follows;
        fps_colocate_retry_hook(&col, holder);
        escaped = col.escapes == 1;
        if (!escaped)
            assert_int_equal(col.escapes, 0);
        else
            assert_int_equal(col.retry_follows, follows);
    }
    assert_true(escaped);
    assert_int_equal(col.escaped_tid, holder);
    assert_int_not_equal(col.cpu, from);
    assert_int_equal(cpu_now(), col.cpu);
    uint64_t moves = col.moves;
    fps_colocate_retry_hook(&col, holder); /* within the attempt: not followed back */
    assert_int_equal(col.moves, moves);
    assert_int_equal(col.escapes, 1);
    fps_colocate_follow(&col, t->s, t->sm);
    assert_int_equal(col.escaped_tid, 0);
    fps_colocate_stop(&col);
}

/* Whether thread tid of pid is blocked (state S in its stat line). */
static bool thread_blocked(pid_t pid, pid_t tid)
{
    char buf[1024];
    const char *p = stat_after_comm(pid, (uint64_t)tid, buf, sizeof buf);
    return p && p[1] == ' ' && p[2] == 'S';
}

/* A thread that stands still in a frame's return (a C profile function
 * called there): unstopped, the walker
 * cannot tell that top frame from one that returned while it read
 * (refused, on every retry); stopped alone (pause_torn), the thread is one
 * instant and the frame is its true top, at the line it returns from.
 * 3.11-3.13 only keep a returned frame's stack depth (3.14+: nothing to
 * refuse). */
static void test_paused_returning_top(void **state)
{
    target *t = *state;
    int still = 0; /* polls in a row that found it blocked: two, or its write of "ready" may be what blocks */
    for (int k = 0; k < BLOCKED_TRIES && still < 2; k++) {
        nanosleep(&(struct timespec){.tv_nsec = BLOCKED_PAUSE_NS}, NULL);
        still = thread_blocked(t->pid, t->pid) ? still + 1 : 0;
    }
    assert_int_equal(still, 2);
    int rc = fp_session_sample(t->s, t->sm);
    if (rc != FP_OK)
        assert_non_null(strstr(fp_session_get_errmsg(t->s), "has returned"));
    assert_int_equal(rc, FP_E_INCOMPLETE);
    fp_options o;
    fp_options_init(&o);
    o.pause_torn = true;
    fp_session *ps = NULL;
    assert_int_equal(fp_session_new(&o, &ps), FP_OK);
    assert_int_equal(fp_session_attach_pid(ps, (int)t->pid), FP_OK);
    rc = fp_session_sample(ps, t->sm);
    if (rc != FP_OK)
        fail_msg("paused: %s", fp_session_get_errmsg(ps));
    fp_read_stats rs = {0};
    assert_int_equal(fp_session_get_read_stats(ps, &rs), FP_OK);
    assert_int_equal(rs.paused, 1);
    const fp_thread *th = fp_sample_get_thread(t->sm, 0);
    assert_true(th->frame_count >= 2);
    const fp_frame *top = fp_sample_get_frame(t->sm, th->first_frame);
    assert_string_equal(top->function, "leaf");
    assert_int_equal(top->line, 4);
    assert_string_equal(fp_sample_get_frame(t->sm, th->first_frame + 1)->function, "<module>");
    fp_session_free(ps);
    /* Blocking, every thread is stopped for the walk: the same instant. */
    fp_options_init(&o);
    o.blocking = true;
    assert_int_equal(fp_session_new(&o, &ps), FP_OK);
    assert_int_equal(fp_session_attach_pid(ps, (int)t->pid), FP_OK);
    rc = fp_session_sample(ps, t->sm);
    if (rc != FP_OK)
        fail_msg("blocking: %s", fp_session_get_errmsg(ps));
    th = fp_sample_get_thread(t->sm, 0);
    top = fp_sample_get_frame(t->sm, th->first_frame);
    assert_string_equal(top->function, "leaf");
    assert_int_equal(top->line, 4);
    fp_session_free(ps);
}

/* A hold pins the mover to the CPU it is on and narrows the followed
 * thread (the last sample's GIL holder, a worker spinning) to that CPU,
 * where the kernel moves it: it last ran there; a thread whose walk tore
 * is held there too; the release gives both threads their masks back and
 * steps the mover aside, off that CPU, until the next hold comes back to
 * it; the stop gives the mover its mask back.  A run with hold set holds on every attempt and leaves every
 * mask as it was. */
static void test_colocate_hold(void **state)
{
    target *t = *state;
    fps_colocation col;
    char msg[128];
    cpu_mask own_before, worker_before, main_before, m;
    assert_true(get_mask(&own_before));
    if (mask_count(&own_before) < 2)
        skip();
    assert_int_equal(fps_colocate_start(&col, (int)t->pid, msg, sizeof msg), FP_OK);
    uint64_t holder = spinning_holder(t);
    assert_true(get_mask_of((pid_t)holder, &worker_before));
    assert_true(get_mask_of(t->pid, &main_before));
    fps_colocate_hold(&col, t->sm);
    assert_int_equal(col.nheld, 1);
    assert_int_equal(col.held_tid[0], holder);
    assert_int_equal(col.holds, 1);
    assert_int_equal(col.hold_refused, 0);
    assert_true(get_mask(&m));
    assert_int_equal(mask_count(&m), 1);
    assert_int_equal(only_cpu(&m), col.hold_cpu);
    assert_int_equal(cpu_now(), col.hold_cpu);
    assert_true(get_mask_of((pid_t)holder, &m));
    assert_int_equal(mask_count(&m), 1);
    assert_int_equal(only_cpu(&m), col.hold_cpu);
    assert_int_equal(last_cpu(t->pid, holder), col.hold_cpu);
    fps_colocate_retry_hook(&col, (uint64_t)t->pid); /* the main thread tore: held too */
    assert_int_equal(col.nheld, 2);
    assert_true(get_mask_of(t->pid, &m));
    assert_int_equal(only_cpu(&m), col.hold_cpu);
    assert_int_equal(mask_count(&m), 1);
    fps_colocate_retry_hook(&col, holder); /* held already: once */
    assert_int_equal(col.nheld, 2);
    const int held_on = col.hold_cpu;
    fps_colocate_release(&col);
    assert_int_equal(col.nheld, 0);
    assert_true(get_mask_of((pid_t)holder, &m));
    assert_memory_equal(&m, &worker_before, sizeof m);
    assert_true(get_mask_of(t->pid, &m));
    assert_memory_equal(&m, &main_before, sizeof m);
    assert_true(get_mask(&m)); /* stepped aside: its own CPUs but the hold's */
    assert_int_equal(mask_count(&m), mask_count(&own_before) - 1);
    assert_false(m.w[held_on / 64] & (1UL << (held_on % 64)));
    assert_true(cpu_now() != held_on);
    fps_colocate_hold(&col, t->sm); /* the next hold comes back to that CPU */
    assert_int_equal(col.hold_cpu, held_on);
    assert_int_equal(cpu_now(), held_on);
    assert_int_equal(last_cpu(t->pid, holder), held_on);
    fps_colocate_release(&col);
    fps_colocate_stop(&col);
    assert_true(get_mask(&m));
    assert_memory_equal(&m, &own_before, sizeof m);
    fps_config c = config(0, 0, COLOCATE_SAMPLES);
    c.colocate_pid = (int)t->pid;
    c.hold = true;
    fps_stats st;
    assert_int_equal(fps_run(t->s, t->sm, &c, NULL, NULL, &st), FP_OK);
    assert_int_equal(st.colocate_holds + st.colocate_hold_refused, COLOCATE_SAMPLES);
    assert_true(st.colocate_holds >= 1);
    assert_true(get_mask_of((pid_t)holder, &m));
    assert_memory_equal(&m, &worker_before, sizeof m);
    assert_true(get_mask(&m));
    assert_memory_equal(&m, &own_before, sizeof m);
}

#define OFFLOAD_RATE_HZ 200.0       /* the paced offloaded run: a light load ... */
#define OFFLOAD_SECONDS 0.5          /* ... for this long ... */
#define OFFLOAD_MAX_WAKES_PER 2      /* ... and (real-time, on time) at most one attempt in this many wakes its
                                        callback thread: 1 when every hand-over wakes it */
#define OFFLOAD_WAKE_RUNS 2          /* paced runs tried before the wake bound fails */
#define OFFLOAD_MAX_CPU_SHARE 0.1    /* ... takes less than this share of one CPU (a spinning callback thread shares a CPU with the target: 0.35) */

static double cpu_seconds(const struct rusage *r)
{
    return (double)(r->ru_utime.tv_sec + r->ru_stime.tv_sec) + (r->ru_utime.tv_usec + r->ru_stime.tv_usec) / 1e6;
}

/* What the callback of an offloaded run saw. */
typedef struct offloaded {
    uint64_t calls, next_index, out_of_order, on_sampler, after_stop, stop_at;
    uint64_t sampler_elsewhere; /* calls during which the sampler was not pinned to one CPU kept off this thread */
    pid_t sampler;
    bool stopped, check_cpus;
} offloaded;

static int on_offloaded(void *ctx, const fps_outcome *o)
{
    offloaded *f = ctx;
    f->after_stop += f->stopped;
    f->calls++;
    f->out_of_order += o->index != f->next_index;
    f->next_index = o->index + 1;
    f->on_sampler += (pid_t)syscall(SYS_gettid) == f->sampler;
    cpu_mask sampler, own;
    if (f->check_cpus && (!get_mask_of(f->sampler, &sampler) || !get_mask(&own) || mask_count(&sampler) != 1 ||
                          (own.w[only_cpu(&sampler) / 64] & (1UL << (only_cpu(&sampler) % 64)))))
        f->sampler_elsewhere++;
    if (f->stop_at && f->calls == f->stop_at) {
        f->stopped = true;
        return 1;
    }
    return 0;
}

/* An offloaded held run calls back on another thread, every attempt in
 * order, while the sampler stays pinned to the held thread's CPU and the
 * callback's thread is kept off it; a stop the callback asks for ends the
 * run with no call after it and no attempt counted past it; every
 * affinity is given back. */
static void test_offload_run(void **state)
{
    target *t = *state;
    cpu_mask own_before, worker_before, m;
    assert_true(get_mask(&own_before));
    uint64_t holder = spinning_holder(t);
    assert_true(get_mask_of((pid_t)holder, &worker_before));
    fps_config c = config(0, 0, COLOCATE_SAMPLES);
    c.colocate_pid = (int)t->pid;
    c.hold = true;
    c.offload = true;
    offloaded f = {.sampler = (pid_t)syscall(SYS_gettid), .check_cpus = mask_count(&own_before) >= 2};
    fps_stats st;
    assert_int_equal(fps_run(t->s, t->sm, &c, on_offloaded, &f, &st), FP_OK);
    assert_int_equal(f.calls, COLOCATE_SAMPLES);
    assert_int_equal(st.attempts, COLOCATE_SAMPLES);
    assert_int_equal(f.out_of_order, 0);
    assert_int_equal(f.on_sampler, 0);
    assert_int_equal(f.sampler_elsewhere, 0);
    assert_int_equal(st.stop_reason, FPS_STOP_COUNT);
    assert_true(st.colocate_holds >= 1);
    offloaded g = {.sampler = f.sampler, .stop_at = 5};
    c.count = 1000;
    assert_int_equal(fps_run(t->s, t->sm, &c, on_offloaded, &g, &st), FP_OK);
    assert_int_equal(g.calls, 5);
    assert_int_equal(g.after_stop, 0);
    assert_int_equal(st.attempts, 5);
    assert_int_equal(st.stop_reason, FPS_STOP_CALLBACK);
    /* Paced, the callback's thread sleeps between its drains: the run
     * takes a small share of one CPU, not a spinning thread's all. */
    c = config(OFFLOAD_RATE_HZ, OFFLOAD_SECONDS, 0);
    c.colocate_pid = (int)t->pid;
    c.hold = c.offload = true;
    char why[128];
    c.realtime = fps_realtime_check(why, sizeof why) == FP_OK; /* its ticks on time under a loaded machine */
    offloaded h;
    struct rusage r0, r1;
    /* A timing property: on a machine busy with other tests one run may
     * see its callback thread woken late more often; a second run must
     * then hold. */
    for (int attempt = 0; attempt < OFFLOAD_WAKE_RUNS; attempt++) {
        h = (offloaded){.sampler = f.sampler};
        assert_int_equal(getrusage(RUSAGE_SELF, &r0), 0);
        assert_int_equal(fps_run(t->s, t->sm, &c, on_offloaded, &h, &st), FP_OK);
        assert_int_equal(getrusage(RUSAGE_SELF, &r1), 0);
        assert_int_equal(h.calls, st.attempts);
        if (!c.realtime || st.offload_wakes * OFFLOAD_MAX_WAKES_PER <= st.attempts)
            break;
    }
    if (c.realtime) /* its own timer wakes it, mostly */
        assert_true(st.offload_wakes * OFFLOAD_MAX_WAKES_PER <= st.attempts);
    assert_true(cpu_seconds(&r1) - cpu_seconds(&r0) < OFFLOAD_MAX_CPU_SHARE * OFFLOAD_SECONDS);
    assert_true(get_mask(&m));
    assert_memory_equal(&m, &own_before, sizeof m);
    assert_true(get_mask_of((pid_t)holder, &m));
    assert_memory_equal(&m, &worker_before, sizeof m);
}

#define STRINGS_SAMPLES 100       /* attempts of test_offload_strings ... */
#define STRINGS_PAUSE_NS 300000   /* ... each callback reading its sample's strings again after this */
#define STRINGS_KEPT 64           /* frames whose strings one callback compares */
#define STRING_ROOM 96

/* Frames whose function or file string changed while the callback had
 * the sample, and the frames compared. */
typedef struct strings_seen {
    uint64_t changed, compared, calls;
} strings_seen;

static int on_strings(void *ctx, const fps_outcome *o)
{
    strings_seen *w = ctx;
    w->calls++;
    if (!o->sample)
        return 0;
    const size_t n_max = STRINGS_KEPT;
    char fn[STRINGS_KEPT][STRING_ROOM], file[STRINGS_KEPT][STRING_ROOM];
    size_t n = fp_sample_get_frame_count(o->sample);
    n = n < n_max ? n : n_max;
    for (size_t i = 0; i < n; i++) {
        const fp_frame *fr = fp_sample_get_frame(o->sample, i);
        snprintf(fn[i], STRING_ROOM, "%s", fr->function ? fr->function : "");
        snprintf(file[i], STRING_ROOM, "%s", fr->file ? fr->file : "");
    }
    struct timespec pause = {0, STRINGS_PAUSE_NS};
    nanosleep(&pause, NULL);
    for (size_t i = 0; i < n; i++) {
        const fp_frame *fr = fp_sample_get_frame(o->sample, i);
        w->compared++;
        w->changed += !fr || strncmp(fn[i], fr->function ? fr->function : "", STRING_ROOM - 1) != 0 ||
                      strncmp(file[i], fr->file ? fr->file : "", STRING_ROOM - 1) != 0;
    }
    return 0;
}

/* The callback of an offloaded run has its sample to itself until it
 * returns: a sample's strings are the session's until its next
 * fp_session_sample, and no attempt is taken meanwhile (a target making
 * code objects without pause changes them from one sample to the next). */
static void test_offload_strings(void **state)
{
    target *t = *state;
    fps_config c = config(0, 0, STRINGS_SAMPLES);
    c.colocate_pid = (int)t->pid;
    c.hold = c.offload = true;
    strings_seen w = {0, 0, 0};
    fps_stats st;
    assert_int_equal(fps_run(t->s, t->sm, &c, on_strings, &w, &st), FP_OK);
    assert_int_equal(w.calls, STRINGS_SAMPLES);
    assert_true(w.compared > STRINGS_SAMPLES);
    assert_int_equal(w.changed, 0);
}

/* The thread followed is the last sample's GIL holder (a worker spinning
 * with it while the main thread waits), on the CPU it last ran on; the
 * main thread without a sample; the thread's CPU is not read again while
 * nothing suggests it moved, and is once recheck_ns has passed; the retry
 * hook moves to the thread a torn walk names; a process gone leaves the
 * caller where it was; stop gives the affinity back. */
static void test_colocate_follows_gil_holder(void **state)
{
    target *t = *state;
    cpu_mask before, after;
    assert_true(get_mask(&before));
    fps_colocation col;
    char msg[128];
    assert_int_equal(fps_colocate_start(&col, 0, msg, sizeof msg), FP_E_INVALID_ARG);
    assert_int_equal(fps_colocate_start(&col, (int)t->pid, msg, sizeof msg), FP_OK);
    fps_colocate_follow(&col, t->s, NULL);
    assert_int_equal(col.tid, (uint64_t)t->pid);
    uint64_t holder = spinning_holder(t);
    bool on_its_cpu = false;
    for (int k = 0; k < CPU_READ_TRIES && !on_its_cpu; k++) {
        col.recheck_ns = 0; /* read each time */
        fps_colocate_follow(&col, t->s, t->sm);
        on_its_cpu = col.cpu == last_cpu(t->pid, holder) && cpu_now() == col.cpu;
    }
    assert_int_equal(col.tid, holder);
    assert_true(on_its_cpu);
    uint64_t checks = col.checks;
    col.recheck_ns = INT64_MAX; /* nothing suggests a move: not read (the move itself may wait for a slice there) */
    fps_colocate_follow(&col, t->s, t->sm);
    assert_int_equal(col.checks, checks);
    col.recheck_ns = 0; /* the time is up: read */
    fps_colocate_follow(&col, t->s, t->sm);
    assert_int_equal(col.checks, checks + 1);
    /* A torn walk's retry hook takes the mover to the thread it names
     * (here the main thread, waiting), counted; native id 0 changes nothing. */
    uint64_t follows = col.retry_follows;
    fps_colocate_retry_hook(&col, 0);
    assert_int_equal(col.retry_follows, follows);
    assert_int_equal(col.tid, holder);
    bool on_main_cpu = false;
    for (int k = 0; k < CPU_READ_TRIES && !on_main_cpu; k++) {
        fps_colocate_retry_hook(&col, (uint64_t)t->pid);
        on_main_cpu = col.tid == (uint64_t)t->pid && col.cpu == last_cpu(t->pid, (uint64_t)t->pid) &&
                      cpu_now() == col.cpu;
    }
    assert_true(on_main_cpu);
    assert_true(col.retry_follows > follows);
    reap(t->pid);
    t->pid = 0;
    uint64_t unknown = col.unknown;
    int cpu = col.cpu;
    fps_colocate_follow(&col, t->s, t->sm);
    assert_int_equal(col.unknown, unknown + 1);
    assert_int_equal(col.cpu, cpu);
    fps_colocate_stop(&col);
    assert_true(get_mask(&after));
    assert_memory_equal(&before, &after, sizeof before);
}

/* Another task moved (a foreign unwinder's helper process): follow_tid
 * puts it, not the caller, on the CPU the target's thread last ran on, and
 * stop gives it its affinity back. */
static void test_colocate_mover(void **state)
{
    target *t = *state;
    pid_t helper = fork();
    assert_true(helper >= 0);
    if (helper == 0) {
        for (;;)
            pause();
    }
    cpu_mask mine, helper_before, helper_now, helper_after, mine_after;
    assert_true(get_mask(&mine));
    assert_true(get_mask_of(helper, &helper_before));
    fps_colocation col;
    char msg[128];
    assert_int_equal(fps_colocate_start_mover(&col, (int)t->pid, (int)helper, msg, sizeof msg), FP_OK);
    bool moved = false;
    for (int k = 0; k < CPU_READ_TRIES && !moved; k++) {
        fps_colocate_follow_tid(&col, 0);
        assert_int_equal(col.tid, (uint64_t)t->pid);
        assert_true(get_mask_of(helper, &helper_now));
        moved = mask_count(&helper_now) == 1 && only_cpu(&helper_now) == col.cpu &&
                col.cpu == last_cpu(t->pid, (uint64_t)t->pid);
    }
    assert_true(moved);
    assert_true(get_mask(&mine_after));
    assert_memory_equal(&mine, &mine_after, sizeof mine); /* the caller stays where it was */
    fps_colocate_stop(&col);
    assert_true(get_mask_of(helper, &helper_after));
    assert_memory_equal(&helper_before, &helper_after, sizeof helper_before);
    reap(helper);
}

/* What a fault test's callback saw. */
typedef struct fault_seen {
    uint64_t calls, skipping, retaken, bad;
    uint32_t max_takes;
} fault_seen;

static int on_fault(void *ctx, const fps_outcome *o)
{
    fault_seen *f = ctx;
    f->calls++;
    if (o->takes == 0 || (o->nskip > 0) != (o->skip_ids != NULL) || (o->nskip && !o->sample))
        f->bad++;
    if (o->nskip)
        f->skipping++;
    for (size_t k = 0; k < o->nskip; k++) {
        bool found = false; /* a thread left out is one of the sample's */
        for (size_t i = 0; o->sample && i < fp_sample_get_thread_count(o->sample); i++)
            found = found || fp_sample_get_thread(o->sample, i)->native_id == o->skip_ids[k];
        if (!found)
            f->bad++;
    }
    if (o->takes > 1)
        f->retaken++;
    if (o->takes > f->max_takes)
        f->max_takes = o->takes;
    return 0;
}

/* Runs fault on t back to back, the caller's own hook set; it must have
 * been called for every torn walk and be set again afterwards. */
static void run_fault(target *t, int fault, fault_seen *f)
{
    fps_config c = config(0, 0, FAULT_SAMPLES);
    c.fault = fault;
    own_hook own = {0, 0};
    assert_int_equal(fp_session_set_retry_hook(t->s, on_own_retry, &own), FP_OK);
    fp_read_stats before, after;
    assert_int_equal(fp_session_get_read_stats(t->s, &before), FP_OK);
    *f = (fault_seen){0};
    assert_int_equal(fps_run(t->s, t->sm, &c, on_fault, f, NULL), FP_OK);
    assert_int_equal(fp_session_get_read_stats(t->s, &after), FP_OK);
    assert_int_equal(f->calls, FAULT_SAMPLES);
    assert_int_equal(f->bad, 0);
    assert_true(own.calls > 0);
    assert_true(own.calls <= after.torn - before.torn);
    fp_retry_hook hook = NULL;
    void *hook_ctx = NULL;
    assert_int_equal(fp_session_get_retry_hook(t->s, &hook, &hook_ctx), FP_OK);
    assert_ptr_equal(hook, on_own_retry);
    assert_ptr_equal(hook_ctx, &own);
    assert_int_equal(fp_session_set_retry_hook(t->s, NULL, NULL), FP_OK);
}

/* drop-torn names the threads whose walk tore, each a thread of the
 * sample, and never takes an attempt twice. */
static void test_fault_drop_torn(void **state)
{
    fault_seen f;
    run_fault(*state, FPS_FAULT_DROP_TORN, &f);
    assert_true(f.skipping > 0);
    assert_int_equal(f.retaken, 0);
    assert_int_equal(f.max_takes, 1);
}

/* retry-quiet takes a torn attempt again, at most FPS_RETRY_QUIET_MAX
 * times, and leaves nothing out. */
static void test_fault_retry_quiet(void **state)
{
    fault_seen f;
    run_fault(*state, FPS_FAULT_RETRY_QUIET, &f);
    assert_true(f.retaken > 0);
    assert_int_equal(f.skipping, 0);
    assert_true(f.max_takes <= FPS_RETRY_QUIET_MAX);
    fps_config c = config(0, 0, 1);
    c.fault = FPS_FAULT_RETRY_QUIET + 1;
    assert_int_equal(fps_run(((target *)*state)->s, ((target *)*state)->sm, &c, NULL, NULL, NULL), FP_E_INVALID_ARG);
}

static void test_classify(void **state)
{
    (void)state;
    const struct {
        int rc, cls;
    } table[] = {
        {FP_OK, FPS_OK},
        {FP_E_NOMEM, FPS_FATAL},
        {FP_E_INVALID_ARG, FPS_FATAL},
        {FP_E_PROCESS_GONE, FPS_FATAL},
        {FP_E_PERMISSION, FPS_FATAL},
        {FP_E_NOT_PYTHON, FPS_FATAL},
        {FP_E_UNSUPPORTED, FPS_FATAL},
        {FP_E_CORRUPT, FPS_TRANSIENT},
        {FP_E_INCOMPLETE, FPS_TRANSIENT},
        {FP_E_LIMIT, FPS_TRANSIENT},
        {FP_E_READ, FPS_TRANSIENT},
        {FP_E_IO, FPS_FATAL},
        {FP_E_FORMAT, FPS_FATAL},
        {FP_E_STATE, FPS_FATAL},
        {FP_E_STATE - 1, FPS_FATAL}, /* a code this sampler does not know */
        {1, FPS_FATAL},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        print_message("# %d\n", table[i].rc);
        assert_int_equal(fps_classify(table[i].rc), table[i].cls);
    }
    assert_string_equal(fps_class_name(FPS_OK), "ok");
    assert_string_equal(fps_class_name(FPS_TRANSIENT), "transient");
    assert_string_equal(fps_class_name(FPS_FATAL), "fatal");
    assert_string_equal(fps_class_name(-1), "?");
}

int main(int argc, char **argv)
{
    python = argc > 1 ? argv[1] : "";
    if (!*python || access(python, X_OK) != 0) {
        printf("1..0 # SKIP no python3.11 interpreter\n");
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classify),
        cmocka_unit_test_setup_teardown(test_count, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missed_ticks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_callback_stops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_poisson, setup, teardown),
        cmocka_unit_test_setup_teardown(test_target_killed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_invalid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_realtime, setup, teardown),
        cmocka_unit_test_setup_teardown(test_realtime_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_custom_slice_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_colocate_run, setup, teardown),
        cmocka_unit_test_setup_teardown(test_colocate_follows_gil_holder, setup_spin, teardown),
        cmocka_unit_test_setup_teardown(test_colocate_mover, setup, teardown),
        cmocka_unit_test_setup_teardown(test_colocate_escapes, setup_spin, teardown),
        cmocka_unit_test_setup_teardown(test_colocate_hold, setup_spin, teardown),
        cmocka_unit_test_setup_teardown(test_offload_run, setup_spin, teardown),
        cmocka_unit_test_setup_teardown(test_offload_strings, setup_codegen, teardown),
        cmocka_unit_test_setup_teardown(test_paused_returning_top, setup_returning, teardown),
        cmocka_unit_test_setup_teardown(test_fault_drop_torn, setup_churn, teardown),
        cmocka_unit_test_setup_teardown(test_fault_retry_quiet, setup_churn, teardown),
    };
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests_name("sampler", tests, NULL, NULL);
}
