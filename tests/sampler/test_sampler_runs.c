/* test_sampler_runs.c — runs of the sampling API against a real
 * interpreter: count, duration and rate bounds, the callback stopping a
 * run, a target killed under it, invalid configurations, the error
 * classification, missed ticks without catch-up and Poisson spacing, timer
 * slack and time slice given back, real-time priority given back or refused
 * with its reason; the self-test faults (drop-torn, retry-quiet) with the
 * session's hook chained and put back. */
#include "sampler_fixture.h"
#include "sampler_tests.h"

static void record_init(record *r)
{
    memset(r, 0, sizeof *r);
    r->child_policy = -1;
    r->stop_at = r->stall_at = UINT64_MAX;
    r->in_order = r->sample_ok = true;
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

void test_count(void **state)
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

void test_rate(void **state)
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

#define HELD_COUNT 60 /* attempts of the target-time run, each holding the target stopped (blocking) */

typedef struct held_log {
    uint64_t n;
    int64_t t_ns[HELD_COUNT], cost_ns[HELD_COUNT];
} held_log;

static int log_held(void *ctx, const fps_outcome *o)
{
    held_log *h = ctx;
    if (h->n < HELD_COUNT) {
        h->t_ns[h->n] = o->t_ns;
        h->cost_ns[h->n] = o->cost_ns;
        h->n++;
    }
    return 0;
}

/* With target_time, a paced run's ticks are spaced in the target's running
 * time: attempt i starts no earlier than tick i plus the time the attempts
 * before it held the target (here each stops every thread: a blocking
 * session), and the run reports that time.  Spaced in wall time (the
 * mutant: the held time never added), attempt i starts at tick i. */
void test_target_time(void **state)
{
    target *t = *state;
    fp_options o;
    fp_options_init(&o);
    o.blocking = true;
    fp_session *s = NULL;
    assert_int_equal(fp_session_new(&o, &s), FP_OK);
    if (fp_session_attach_pid(s, (int)t->pid))
        fail_msg("attach: %s", fp_session_get_errmsg(s));
    fps_config c = config(RATE_HZ, 0, HELD_COUNT);
    c.target_time = true;
    held_log h = {0};
    fps_stats st;
    assert_int_equal(fps_run(s, t->sm, &c, log_held, &h, &st), FP_OK);
    fp_session_free(s);
    assert_int_equal(h.n, HELD_COUNT);
    /* A loaded machine may wake the sampler a whole period late, and the
     * ticks it overslept are missed (CI saw 3).  Each missed tick moves the
     * attempts after it one tick later: attempt i is at tick i or later, and
     * the last one at tick n - 1 + missed, so a count of missed ticks that
     * were not is caught by the last attempt's start. */
    int64_t held = 0;
    for (uint64_t i = 0; i < h.n; i++) {
        if (h.t_ns[i] < (int64_t)i * PERIOD_NS + held)
            fail_msg("attempt %llu started at %lld ns, before its tick in the target's time (%lld ns)",
                     (unsigned long long)i, (long long)h.t_ns[i], (long long)((int64_t)i * PERIOD_NS + held));
        if (i + 1 < h.n)
            held += h.cost_ns[i];
    }
    const int64_t last_tick = (int64_t)(h.n - 1 + st.missed_ticks) * PERIOD_NS + held;
    if (h.t_ns[h.n - 1] < last_tick)
        fail_msg("%llu missed ticks, but the last attempt started at %lld ns, before tick %llu (%lld ns)",
                 (unsigned long long)st.missed_ticks, (long long)h.t_ns[h.n - 1],
                 (unsigned long long)(h.n - 1 + st.missed_ticks), (long long)last_tick);
    held += h.cost_ns[h.n - 1];
    /* The run held the target at least as long as its attempts took. */
    assert_true(st.held_s * 1e9 >= (double)held);
    assert_true(held > 0);
}

#define RT_COUNT 20
#define RT_HZ 1000.0

/* A realtime run samples at SCHED_FIFO priority FPS_RT_PRIORITY, a child
 * it forks starts as SCHED_NORMAL, and the caller's policy, nice and
 * slice are given back. */
void test_realtime(void **state)
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
void test_realtime_refused(void **state)
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
void test_custom_slice_kept(void **state)
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
void test_missed_ticks(void **state)
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

void test_callback_stops(void **state)
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
void test_poisson(void **state)
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

void test_target_killed(void **state)
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

void test_invalid(void **state)
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

/* fps_config.take: counts its calls, then samples. */
static int counting_take(void *ctx, fp_session *s, fp_sample *sm)
{
    ++*(uint64_t *)ctx;
    return fp_session_sample(s, sm);
}

/* Every attempt goes through the config's take instead of
 * fp_session_sample; it excludes offload and faults. */
void test_take_hook(void **state)
{
    target *t = *state;
    uint64_t takes = 0;
    fps_config c = config(0, 0, 3);
    c.take = counting_take;
    c.take_ctx = &takes;
    fps_stats st;
    assert_int_equal(fps_run(t->s, t->sm, &c, NULL, NULL, &st), FP_OK);
    assert_int_equal(takes, 3);
    assert_int_equal(st.ok, 3);
    record r;
    record_init(&r);
    c.offload = true;
    assert_int_equal(fps_run(t->s, t->sm, &c, on_sample, &r, NULL), FP_E_INVALID_ARG);
    c.offload = false;
    c.fault = FPS_FAULT_DROP_TORN;
    assert_int_equal(fps_run(t->s, t->sm, &c, on_sample, &r, NULL), FP_E_INVALID_ARG);
    assert_int_equal(takes, 3);
    assert_int_equal(r.calls, 0);
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
void test_fault_drop_torn(void **state)
{
    fault_seen f;
    run_fault(*state, FPS_FAULT_DROP_TORN, &f);
    assert_true(f.skipping > 0);
    assert_int_equal(f.retaken, 0);
    assert_int_equal(f.max_takes, 1);
}

/* retry-quiet takes a torn attempt again, at most FPS_RETRY_QUIET_MAX
 * times, and leaves nothing out. */
void test_fault_retry_quiet(void **state)
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

void test_classify(void **state)
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
