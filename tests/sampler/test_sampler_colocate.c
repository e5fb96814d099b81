/* test_sampler_colocate.c — colocated runs: moves to the CPU of the
 * target's GIL holder and the caller's affinity given back, escapes, the
 * held thread, a mover, a paused top frame at its return. */
#include "sampler_fixture.h"
#include "sampler_tests.h"

#include <limits.h>

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

static int cpu_now(void)
{
    unsigned cpu = 0;
    return syscall(SYS_getcpu, &cpu, NULL, NULL) == 0 ? (int)cpu : -1;
}

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
void test_colocate_run(void **state)
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

/* A failed walk of a running thread whose last CPU is the mover's own (it
 * stood still mid-update under the mover) makes the mover leave that CPU
 * (counted in escapes, not in retry_follows), and the same thread is not
 * followed back within the attempt; the next attempt's follow forgets it. */
void test_colocate_escapes(void **state)
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
void test_paused_returning_top(void **state)
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
void test_colocate_hold(void **state)
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
    assert_int_equal(col.guard.set->n, 1);
    assert_int_equal(col.guard.set->tid[0], holder);
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
    assert_int_equal(col.guard.set->n, 2);
    assert_true(get_mask_of(t->pid, &m));
    assert_int_equal(only_cpu(&m), col.hold_cpu);
    assert_int_equal(mask_count(&m), 1);
    fps_colocate_retry_hook(&col, holder); /* held already: once */
    assert_int_equal(col.guard.set->n, 2);
    const int held_on = col.hold_cpu;
    fps_colocate_release(&col);
    assert_int_equal(col.guard.set->n, 0);
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

/* In a child process: holds the target's spinning thread and dies by
 * SIGKILL mid-hold; with guarded false no guard is started (a stand-in
 * for a sampler without one: the check's teeth). */
static _Noreturn void hold_and_die(target *t, bool guarded)
{
    fps_colocation col;
    char msg[128];
    if (fps_colocate_start(&col, (int)t->pid, msg, sizeof msg) != FP_OK)
        _exit(3);
    if (!guarded)
        col.guard.pid = INT_MAX; /* taken for a running guard: none is started */
    fps_colocate_hold(&col, t->sm);
    if (col.guard.set->n != 1)
        _exit(4);
    raise(SIGKILL);
    _exit(5);
}

/* The holder's mask once it equals want, or after HOLD_GUARD_WAIT_MS. */
#define HOLD_GUARD_WAIT_MS 2000
static bool mask_becomes(pid_t task, const cpu_mask *want)
{
    cpu_mask m;
    for (int ms = 0; ms < HOLD_GUARD_WAIT_MS; ms++) {
        if (get_mask_of(task, &m) && memcmp(&m, want, sizeof m) == 0)
            return true;
        usleep(1000);
    }
    return false;
}

/* A sampler killed mid-hold leaves the held thread narrowed to one CPU
 * unless its guard process gives it back: with the guard the thread's
 * affinity is its own again moments after the kill; without one (the
 * mutant) it stays narrowed. */
void test_colocate_hold_guard(void **state)
{
    target *t = *state;
    cpu_mask own, before, m;
    assert_true(get_mask(&own));
    if (mask_count(&own) < 2)
        skip();
    uint64_t holder = spinning_holder(t);
    assert_true(get_mask_of((pid_t)holder, &before));
    for (int guarded = 1; guarded >= 0; guarded--) {
        pid_t child = fork();
        assert_true(child >= 0);
        if (child == 0)
            hold_and_die(t, guarded);
        int status = 0;
        assert_int_equal(waitpid(child, &status, 0), child);
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        if (guarded) {
            assert_true(mask_becomes((pid_t)holder, &before));
        } else {
            assert_true(get_mask_of((pid_t)holder, &m));
            assert_int_equal(mask_count(&m), 1); /* left narrowed */
            assert_int_equal(syscall(SYS_sched_setaffinity, (pid_t)holder, sizeof before.w, before.w), 0);
        }
    }
}

/* The thread followed is the last sample's GIL holder (a worker spinning
 * with it while the main thread waits), on the CPU it last ran on; the
 * main thread without a sample; the thread's CPU is not read again while
 * nothing suggests it moved, and is once recheck_ns has passed; the retry
 * hook moves to the thread a torn walk names; a process gone leaves the
 * caller where it was; stop gives the affinity back. */
void test_colocate_follows_gil_holder(void **state)
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
void test_colocate_mover(void **state)
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
