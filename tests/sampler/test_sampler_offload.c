/* test_sampler_offload.c — offloaded runs: the callback on a thread of its
 * own, and a session's strings still valid when it gets them. */
#include "sampler_fixture.h"
#include "sampler_tests.h"

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
void test_offload_run(void **state)
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
void test_offload_strings(void **state)
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
