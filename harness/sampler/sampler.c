/* sampler.c — fps_run, the sampling loop of sampler.h: validation of the
 * config, the schedule (back to back, fixed ticks or Poisson gaps on
 * absolute CLOCK_MONOTONIC times), the classification of each attempt and
 * the statistics of the run. */
#include "sampler.h"

#include "clock.h"
#include "colocate.h"
#include "fault.h"
#include "offload.h"

#include <errno.h>
#include <linux/sched.h>       /* SCHED_NORMAL, SCHED_BATCH, SCHED_IDLE, SCHED_FIFO, SCHED_FLAG_RESET_ON_FORK */
#include <linux/sched/types.h> /* struct sched_attr */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NS_PER_S ((double)FPS_NS_PER_S) /* for rates and deadlines */
#define TIMER_SLACK_NS 1ul  /* the timer slack of a paced run (prctl PR_SET_TIMERSLACK) */

_Static_assert(-FP_E_STATE < FPS_ERROR_SLOTS, "stats.by_error has a slot for every FP_E_* code");

int fps_classify(int rc)
{
    switch (rc) {
    case FP_OK:
        return FPS_OK;
    /* A running target's memory changes between the reads of one walk, so
     * each of these can come from the target having moved, and the next
     * sample sees it at another instant: */
    case FP_E_INCOMPLETE: /* a thread was torn on every retry of the walk */
    case FP_E_READ:       /* a pointer followed into memory freed or unmapped meanwhile */
    case FP_E_CORRUPT:    /* a value read half-updated (a list relinked, a field in flux) */
    case FP_E_LIMIT:      /* a stack that was too deep may have shrunk by the next sample */
        return FPS_TRANSIENT;
    /* Everything else does not change by sampling again: the process is
     * gone, access is denied, memory or the session is unusable, or the
     * target is not (a supported) Python. */
    default:
        return FPS_FATAL;
    }
}

const char *fps_class_name(int cls)
{
    switch (cls) {
    case FPS_OK: return "ok";
    case FPS_TRANSIENT: return "transient";
    case FPS_FATAL: return "fatal";
    default: return "?";
    }
}

void fps_config_init(fps_config *c)
{
    memset(c, 0, sizeof *c);
}

/* A paced run's thread asks the scheduler for a short time slice (a
 * custom slice, Linux 6.12 on; earlier kernels ignore sched_runtime
 * outside SCHED_DEADLINE): with the default one, of milliseconds, a
 * sampler woken for its tick waits behind a CPU-bound target thread on its
 * CPU until that thread's slice ends, and misses the tick.  Policy, nice
 * and flags are kept as they are; *old gets what to restore.  False when
 * nothing was changed (not SCHED_NORMAL, or the calls refused). */
static bool shorten_slice(struct sched_attr *old)
{
    memset(old, 0, sizeof *old);
    if (syscall(SYS_sched_getattr, 0, old, (unsigned)sizeof *old, 0u) != 0 || old->sched_policy != SCHED_NORMAL)
        return false;
    struct sched_attr a = *old;
    a.size = sizeof a;
    a.sched_runtime = FPS_SLICE_NS;
    return syscall(SYS_sched_setattr, 0, &a, 0u) == 0;
}

/* A real-time run's thread runs at SCHED_FIFO priority FPS_RT_PRIORITY
 * (sampler.h); *old gets what to restore.  FP_OK, or FP_E_PERMISSION /
 * FP_E_IO with the reason in msg. */
static int go_realtime(struct sched_attr *old, char *msg, size_t msglen)
{
    memset(old, 0, sizeof *old);
    struct sched_attr a = {.size = sizeof a,
                           .sched_policy = SCHED_FIFO,
                           .sched_flags = SCHED_FLAG_RESET_ON_FORK,
                           .sched_priority = FPS_RT_PRIORITY};
    if (syscall(SYS_sched_getattr, 0, old, (unsigned)sizeof *old, 0u) == 0 &&
        syscall(SYS_sched_setattr, 0, &a, 0u) == 0)
        return FP_OK;
    int e = errno;
    snprintf(msg, msglen,
             "cannot sample at real-time priority (SCHED_FIFO %d): %s%s", FPS_RT_PRIORITY, strerror(e),
             e == EPERM ? " (it needs CAP_SYS_NICE or an RLIMIT_RTPRIO of at least 1)" : "");
    return e == EPERM ? FP_E_PERMISSION : FP_E_IO;
}

static bool fair_policy(unsigned policy)
{
    return policy == SCHED_NORMAL || policy == SCHED_BATCH || policy == SCHED_IDLE;
}

/* Gives back what *old holds.  A fair task's slice written as a number
 * becomes a custom one, which stays put when the kernel's default
 * changes; written as 0 it is the default again.  The kernel reports
 * both alike, so the caller's slice is written back as 0 first, and as
 * itself only when that is not the default it then reports. */
static void restore_sched(struct sched_attr *old)
{
    old->size = sizeof *old;
    const uint64_t slice = old->sched_runtime;
    if (fair_policy(old->sched_policy))
        old->sched_runtime = 0;
    if (syscall(SYS_sched_setattr, 0, old, 0u) != 0 || old->sched_runtime == slice)
        return;
    struct sched_attr now = {0};
    if (syscall(SYS_sched_getattr, 0, &now, (unsigned)sizeof now, 0u) == 0 && now.sched_runtime != slice) {
        old->sched_runtime = slice;
        syscall(SYS_sched_setattr, 0, old, 0u);
    }
}

int fps_realtime_check(char *msg, size_t msglen)
{
    struct sched_attr old;
    int rc = go_realtime(&old, msg, msglen);
    if (rc == FP_OK)
        restore_sched(&old);
    return rc;
}

/* The schedule of rate mode: tick k at `at` ns after the start. Fixed
 * ticks are computed from k (no drift); Poisson ticks add exponential gaps
 * drawn from a splitmix64 generator whose state lives here. */
typedef struct schedule {
    double rate_hz;
    bool poisson;
    uint64_t rng;
    uint64_t k;
    double at;
} schedule;

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

#define UNIFORM_BITS 53 /* a double's mantissa */

static void schedule_advance(schedule *sc)
{
    sc->k++;
    if (sc->poisson) {
        /* Inverse CDF of the exponential distribution at u in (0, 1]. */
        double u = (double)((splitmix64(&sc->rng) >> (64 - UNIFORM_BITS)) + 1) * ldexp(1.0, -UNIFORM_BITS);
        sc->at += -log(u) / sc->rate_hz * NS_PER_S;
    } else {
        sc->at = (double)sc->k / sc->rate_hz * NS_PER_S;
    }
}

static bool bad_amount(double x, double max)
{
    return !isfinite(x) || x < 0 || x > max;
}

static int check_config(const fp_session *s, const fp_sample *sm, const fps_config *c, fps_callback cb)
{
    if (!s || !sm || !c || bad_amount(c->rate_hz, FPS_MAX_RATE_HZ) || bad_amount(c->duration_s, FPS_MAX_DURATION_S))
        return FP_E_INVALID_ARG;
    if ((c->poisson || c->realtime) && c->rate_hz == 0)
        return FP_E_INVALID_ARG;
    if (c->colocate_pid < 0)
        return FP_E_INVALID_ARG;
    if (c->fault != FPS_FAULT_NONE && c->fault != FPS_FAULT_DROP_TORN && c->fault != FPS_FAULT_RETRY_QUIET)
        return FP_E_INVALID_ARG;
    if (!c->count && c->duration_s == 0 && !cb)
        return FP_E_INVALID_ARG;
    if (c->take && (c->offload || c->fault != FPS_FAULT_NONE))
        return FP_E_INVALID_ARG;
    return FP_OK;
}

/* One attempt: fp_session_sample (or the config's take), taken again
 * while fault FPS_FAULT_RETRY_QUIET finds it torn (tl logs the tears of
 * the last take; NULL without a fault). */
static int take_sample(fp_session *s, fp_sample *sm, const fps_config *c, fps_torn_log *tl, uint32_t *takes)
{
    int rc;
    *takes = 0;
    for (;;) {
        if (tl)
            fps_torn_log_reset(tl);
        rc = c->take ? c->take(c->take_ctx, s, sm) : fp_session_sample(s, sm);
        ++*takes;
        const bool torn = (tl && tl->tears > 0) || fps_classify(rc) == FPS_TRANSIENT;
        if (c->fault != FPS_FAULT_RETRY_QUIET || !torn || *takes >= FPS_RETRY_QUIET_MAX)
            return rc;
    }
}

/* Counts attempt o in st. */
static void count_attempt(fps_stats *st, const fps_outcome *o)
{
    st->attempts++;
    if (o->cls == FPS_OK)
        st->ok++;
    else if (o->cls == FPS_TRANSIENT)
        st->transient++;
    else
        st->fatal++;
    if (o->rc <= 0 && o->rc > -FPS_ERROR_SLOTS)
        st->by_error[-o->rc]++;
}

/* What follows each attempt, on the sampling thread or the callback
 * thread (fps_config.offload): counting it and the caller's callback. */
typedef struct deliver_ctx {
    fps_stats *st;
    fps_callback cb;
    void *ctx;
} deliver_ctx;

static int deliver(void *ctx, const fps_outcome *o)
{
    deliver_ctx *d = ctx;
    count_attempt(d->st, o);
    return d->cb ? d->cb(d->ctx, o) : 0;
}

int fps_run(fp_session *s, fp_sample *sm, const fps_config *c, fps_callback cb, void *ctx, fps_stats *out)
{
    fps_stats local;
    fps_stats *st = out ? out : &local;
    memset(st, 0, sizeof *st);
    int ret = check_config(s, sm, c, cb);
    if (ret)
        return ret;
    const bool paced = c->rate_hz > 0;
    const double deadline = c->duration_s * NS_PER_S; /* ns after the start; 0 = none */
    schedule sc = {.rate_hz = c->rate_hz, .poisson = c->poisson, .rng = c->seed};
    struct sched_attr old_sched;
    bool sched_changed = false;
    if (c->realtime) {
        if ((ret = go_realtime(&old_sched, st->first_fatal, sizeof st->first_fatal)) != FP_OK) {
            st->stop_reason = FPS_STOP_FATAL;
            return ret;
        }
        sched_changed = true;
    } else {
        sched_changed = paced && shorten_slice(&old_sched);
    }
    /* The kernel lets a timed sleep overrun by the thread's timer slack
     * (50 us by default), which alone would cap a paced run near 20 kHz
     * and skew every tick: a paced run asks for 1 ns and restores it. */
    fps_colocation col;
    if (c->colocate_pid > 0 &&
        (ret = fps_colocate_start(&col, c->colocate_pid, st->first_fatal, sizeof st->first_fatal)) != FP_OK) {
        if (sched_changed)
            restore_sched(&old_sched);
        st->stop_reason = FPS_STOP_FATAL;
        return ret;
    }
    fp_retry_hook caller_hook = NULL; /* the caller's own retry hook: chained while the run's is set, then put back */
    void *caller_hook_ctx = NULL;
    if (c->colocate_pid > 0) {
        fp_session_get_retry_hook(s, &caller_hook, &caller_hook_ctx);
        col.chain = caller_hook;
        col.chain_ctx = caller_hook_ctx;
        fp_session_set_retry_hook(s, fps_colocate_retry_hook, &col); /* a torn walk's retry moves too */
    }
    fps_torn_log tl = {0};
    fp_retry_hook fault_saved = NULL; /* the hook the fault's log stands in front of, put back at the end */
    void *fault_saved_ctx = NULL;
    if (c->fault != FPS_FAULT_NONE) {
        fp_session_get_retry_hook(s, &fault_saved, &fault_saved_ctx);
        tl.chain = fault_saved;
        tl.chain_ctx = fault_saved_ctx;
        fp_session_set_retry_hook(s, fps_torn_log_hook, &tl);
    }
    deliver_ctx dc = {st, cb, ctx};
    fps_offload *q = NULL; /* fps_config.offload: the callback thread */
    if (c->offload && cb && (ret = fps_offload_start(&q, sm, c->realtime ? FPS_RT_PRIORITY : 0, deliver, &dc,
                                                     st->first_fatal,
                                                     sizeof st->first_fatal)) != FP_OK)
        st->stop_reason = FPS_STOP_FATAL;
    const fp_sample *last = NULL; /* the last attempt's usable sample, or NULL */
    int64_t last_cost = 0;        /* ... and its cost_ns */
    const int old_slack = paced ? prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0) : -1;
    if (old_slack > 0)
        prctl(PR_SET_TIMERSLACK, TIMER_SLACK_NS, 0, 0, 0);
    const int64_t t0 = fps_clock_ns();
    int64_t now = t0;
    double held = 0; /* target_time: ns the attempts so far held the target; every tick comes that much later */
    for (uint64_t index = 0; st->stop_reason == FPS_STOP_NONE; index++) {
        if (q && fps_offload_stopped(q)) {
            st->stop_reason = FPS_STOP_CALLBACK;
            break;
        }
        if (c->count && index >= c->count) {
            st->stop_reason = FPS_STOP_COUNT;
            break;
        }
        if (paced && index > 0) {
            schedule_advance(&sc);
            while (sc.at + held <= (double)(now - t0) && !(deadline > 0 && sc.at + held >= deadline)) {
                st->missed_ticks++;
                schedule_advance(&sc);
            }
        }
        if (deadline > 0 && (paced ? sc.at + held : (double)(now - t0)) >= deadline) {
            st->stop_reason = FPS_STOP_DURATION;
            break;
        }
        if (q && paced) /* the last attempt's time twice, and a margin: the callback thread's timer, not a wake-up */
            fps_offload_expect(q, t0 + (int64_t)(sc.at + held) + 2 * last_cost + FPS_OFFLOAD_MARGIN_NS);
        if (paced && fps_sleep_until(t0 + (int64_t)(sc.at + held)) != 0) {
            ret = FP_E_IO;
            st->stop_reason = FPS_STOP_FATAL;
            snprintf(st->first_fatal, sizeof st->first_fatal, "clock_nanosleep failed");
            break;
        }
        fps_outcome o = {.index = index};
        fp_sample *into = q ? fps_offload_next(q) : sm;
        const int64_t hold_from = c->target_time ? fps_clock_ns() : 0; /* the target is held from here */
        if (c->colocate_pid > 0) {
            if (c->hold)
                fps_colocate_hold(&col, last);
            else
                fps_colocate_follow(&col, s, last);
            if (q && col.hold_cpu >= 0)
                fps_offload_avoid(q, col.hold_cpu, col.old_mask, sizeof col.old_mask);
        }
        fp_read_stats before = {0}, after = {0};
        fp_session_get_read_stats(s, &before);
        const int64_t start = fps_clock_ns();
        o.rc = take_sample(s, into, c, c->fault != FPS_FAULT_NONE ? &tl : NULL, &o.takes);
        if (c->colocate_pid > 0) {
            if (q || !paced) /* back to back the next hold comes at once: no step aside and back */
                fps_colocate_release_stay(&col);
            else
                fps_colocate_release(&col);
        }
        now = fps_clock_ns();
        if (paced && c->target_time)
            held += (double)(now - hold_from);
        fp_session_get_read_stats(s, &after);
        o.reads = after.calls - before.calls;
        o.bytes = after.bytes - before.bytes;
        o.t_ns = start - t0;
        o.cost_ns = now - start;
        last_cost = o.cost_ns;
        o.cls = fps_classify(o.rc);
        o.sample = fp_sample_is_usable(into, o.rc) ? into : NULL;
        last = o.sample;
        o.errmsg = o.rc == FP_OK ? "" : fp_session_get_errmsg(s);
        if (c->fault == FPS_FAULT_DROP_TORN && o.sample && tl.n > 0) {
            o.skip_ids = tl.ids;
            o.nskip = tl.n;
        }
        int stop = 0;
        if (q)
            fps_offload_post(q, &o); /* a stop it asks for is seen at the next tick */
        else
            stop = deliver(&dc, &o);
        now = fps_clock_ns();
        if (o.cls == FPS_FATAL) {
            st->stop_reason = FPS_STOP_FATAL;
            snprintf(st->first_fatal, sizeof st->first_fatal, "%s", o.errmsg);
            ret = o.rc;
            break;
        }
        if (stop) {
            st->stop_reason = FPS_STOP_CALLBACK;
            break;
        }
    }
    now = fps_clock_ns();
    st->offload_wakes = fps_offload_finish(q);
    if (c->fault != FPS_FAULT_NONE)
        fp_session_set_retry_hook(s, fault_saved, fault_saved_ctx);
    if (c->colocate_pid > 0) {
        st->colocate_moves = col.moves;
        st->colocate_unknown = col.unknown;
        st->colocate_retry_follows = col.retry_follows;
        st->colocate_escapes = col.escapes;
        st->colocate_holds = col.holds;
        st->colocate_hold_refused = col.hold_refused;
        st->colocate_unguarded = col.unguarded;
        snprintf(st->colocate_guard_error, sizeof st->colocate_guard_error, "%s", col.unguarded ? col.guard_error : "");
        fp_session_set_retry_hook(s, caller_hook, caller_hook_ctx);
        fps_colocate_stop(&col);
    }
    if (old_slack > 0)
        prctl(PR_SET_TIMERSLACK, (unsigned long)old_slack, 0, 0, 0);
    if (sched_changed)
        restore_sched(&old_sched);
    st->elapsed_s = (double)(now - t0) / NS_PER_S;
    st->held_s = held / NS_PER_S;
    if (paced) {
        /* The covered schedule ends at the first tick not sampled, or at
         * the deadline that stopped the run. */
        if (st->stop_reason != FPS_STOP_DURATION)
            schedule_advance(&sc);
        const double span = st->stop_reason == FPS_STOP_DURATION ? deadline - held : sc.at;
        st->achieved_rate_hz = span > 0 ? (double)st->attempts / (span / NS_PER_S) : 0;
    } else {
        st->achieved_rate_hz = st->elapsed_s > 0 ? (double)st->attempts / st->elapsed_s : 0;
    }
    return ret;
}
