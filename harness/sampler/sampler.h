/* sampler.h — the sampling loop above libframeproof (policy above
 * mechanism): the library takes one consistent sample per call; this small
 * static library repeats it by count, duration and rate (fixed or Poisson
 * spacing), classifies each outcome as ok, transient (retry at the next
 * tick) or fatal (stop), and keeps the statistics of the run.  It prints
 * nothing and holds no global state: everything lives in the caller's
 * config and stats and in fps_run's locals. */
#ifndef FPS_SAMPLER_H
#define FPS_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frameproof/frameproof.h"

/* Limits of a configuration (larger values are FP_E_INVALID_ARG). */
#define FPS_MAX_RATE_HZ 1e6               /* one tick per microsecond, beyond any sample's cost */
#define FPS_MAX_DURATION_S (7.0 * 86400.0) /* one week */
#define FPS_SLICE_NS 100000ull            /* a paced run's time slice (sched_runtime; the kernel's least) */
#define FPS_RT_PRIORITY 1                 /* a real-time run's SCHED_FIFO priority: the lowest */
#define FPS_TORN_IDS_MAX 256              /* threads one attempt of FPS_FAULT_DROP_TORN remembers as torn */
#define FPS_RETRY_QUIET_MAX 64            /* takes of one attempt under FPS_FAULT_RETRY_QUIET */
#define FPS_OFFLOAD_MARGIN_NS 10000       /* offload: the callback thread wakes this long after an attempt's expected end */

/* stats.by_error[-rc] counts the attempts that returned rc, for FP_OK (0)
 * down to FP_E_STATE (-13); a code outside that range is only counted as
 * fatal. */
#define FPS_ERROR_SLOTS 14
/* Room for the message of the fatal error that stopped a run. */
#define FPS_ERRMSG_MAX 512

/* What one attempt's return code means for the run. */
enum fps_class {
    FPS_OK = 0,        /* a sample was taken */
    FPS_TRANSIENT = 1, /* the target moved under the walk: the next attempt may succeed */
    FPS_FATAL = 2,     /* no later attempt can succeed: the run stops */
};

/* The class of an fp_session_sample() return code (enum fps_class). */
int fps_classify(int rc);
/* "ok", "transient", "fatal" ("?" for anything else). */
const char *fps_class_name(int cls);

/* Self-test faults (fps_config.fault): samplers biased on purpose, which
 * an accuracy verdict must fail.  Each tells apart what a sampler may not
 * do: leave out, or move to a later instant, the samples whose stack
 * changed while they were read. */
enum fps_fault {
    FPS_FAULT_NONE = 0,
    /* Every thread whose walk tore at least once in an attempt (the
     * session's retry hook heard of it) is left out of that attempt's
     * sample, even when a retry then walked it: fps_outcome.skip_ids. */
    FPS_FAULT_DROP_TORN = 1,
    /* An attempt in which any walk tore, or which failed transiently, is
     * taken again at once, up to FPS_RETRY_QUIET_MAX times; the first take
     * in which nothing tore is the attempt's sample (the last take when
     * none is quiet). */
    FPS_FAULT_RETRY_QUIET = 2,
};

/* The unbiased policy, the default of `record` and `bench`: colocate_pid
 * set to the target and hold on (at every attempt the target's running
 * thread is held on the CPU the sampler woke on, so that it runs nowhere
 * while it is read; a thread whose walk tore is held there too), offload
 * on for a paced run (the held thread waits for the read only; back to
 * back the callback runs after the release, on the sampling thread) and
 * the session opened with
 * fp_options.pause_torn (a thread torn again is stopped alone and walked
 * exactly).  Which ticks are sampled and the instant a sample describes
 * are then set by the schedule, not by the stack: a tick is lost only when
 * a sample overran it or the sample failed outright.  Without colocation
 * a running thread's walk tears on most ticks, and the retries move the
 * sample to a later, quieter instant: short-lived stacks are then
 * under-represented. */

/* How a run is paced and bounded.  A run with neither count nor duration
 * is accepted only with a callback, which is then what ends it (or a
 * fatal error); without one it is FP_E_INVALID_ARG. */
typedef struct fps_config {
    double rate_hz;    /* samples per second on a fixed schedule; 0 = back to back, as fast as possible */
    double duration_s; /* stop when the next sample would start at or after this; 0 = no time bound */
    uint64_t count;    /* stop after this many attempts; 0 = no count bound */
    bool poisson;      /* exponential gaps of mean 1/rate_hz (needs rate_hz) instead of fixed ones */
    uint64_t seed;     /* seeds the gaps of a Poisson schedule: equal seeds, equal schedules */
    bool realtime;     /* a paced run (needs rate_hz) at SCHED_FIFO priority FPS_RT_PRIORITY, see fps_run */
    int colocate_pid;  /* > 0: the session's target; each attempt is made from the CPU its running thread
                          last ran on (colocate.h); 0: wherever the scheduler puts the caller */
    bool hold;         /* with colocate_pid: the followed thread is held on the sampler's CPU during each
                          attempt (fps_colocate_hold), so that it can run nowhere while it is read */
    int fault;         /* enum fps_fault: FPS_FAULT_NONE but in self-tests */
    /* A paced run whose attempts hold the target still (a blocking
     * session, colocate): each tick comes later by the time the attempts
     * before it held the target, so that ticks are spaced in the target's
     * own running time.  Spaced in wall time, a stack that takes longer to
     * read (a deeper one) stretches the target's wall time under it and
     * gets more ticks than its share of the program's time. */
    bool target_time;
    /* The callback runs on a second thread (at SCHED_OTHER, kept off the
     * hold's CPU), in order, while the next attempt is taken: the sampling
     * thread sleeps again as soon as an attempt is handed over and, with
     * hold, stays on the held thread's CPU between ticks
     * (fps_colocate_release_stay) instead of stepping aside and coming back
     * each tick, so that the held thread waits only for the read.  The
     * callback must then not use the session (the outcome carries what it
     * needs: reads, bytes, errmsg); it is not called again once it asked
     * to stop, and attempts taken meanwhile are neither called back nor
     * counted.  Ignored without a callback. */
    bool offload;
    /* Each attempt calls take(take_ctx, s, sm) instead of
     * fp_session_sample(s, sm), classified the same way (e.g. an asyncio
     * graph read with its sample, whose graph the callback then finds
     * through its own context); NULL: fp_session_sample.  Not with offload
     * or a fault (FP_E_INVALID_ARG). */
    int (*take)(void *take_ctx, fp_session *s, fp_sample *sm);
    void *take_ctx;
} fps_config;

/* Back to back, unbounded, fixed spacing, seed 0, not real-time. */
void fps_config_init(fps_config *c);

/* One attempt, as the callback sees it. */
typedef struct fps_outcome {
    uint64_t index;          /* 0-based attempt number */
    int64_t t_ns;            /* when the attempt started, ns since the run started (CLOCK_MONOTONIC) */
    int64_t cost_ns;         /* time spent inside fp_session_sample */
    int rc;                  /* its return code */
    int cls;                 /* fps_classify(rc) */
    const fp_sample *sample; /* valid during the callback on FP_OK and on FP_E_INCOMPLETE
                                when a thread carries the failure (the threads that could
                                be walked); NULL otherwise */
    const char *errmsg;      /* fp_session_get_errmsg(), "" on FP_OK */
    /* FPS_FAULT_DROP_TORN: the native ids of the sample's threads to leave
     * out as torn (nskip of them); NULL and 0 otherwise. */
    const uint64_t *skip_ids;
    size_t nskip;
    uint32_t takes;          /* fp_session_sample calls the attempt made (more than 1 only with FPS_FAULT_RETRY_QUIET) */
    uint64_t reads, bytes;   /* the session's remote reads during the attempt, and the bytes they asked for
                                (fp_read_stats.calls and .bytes) */
} fps_outcome;

/* Called after every attempt, fatal ones included; nonzero stops the run
 * (stop reason FPS_STOP_CALLBACK unless the attempt was fatal).  With
 * fps_config.offload it is called on another thread (o and what it
 * points to stay valid until it returns). */
typedef int (*fps_callback)(void *ctx, const fps_outcome *o);

/* Why a run ended. */
enum fps_stop {
    FPS_STOP_NONE = 0,     /* never started: the arguments were invalid */
    FPS_STOP_COUNT = 1,    /* config.count attempts were made */
    FPS_STOP_DURATION = 2, /* the next attempt would have started after config.duration_s */
    FPS_STOP_CALLBACK = 3, /* the callback returned nonzero */
    FPS_STOP_FATAL = 4,    /* an attempt failed fatally */
};

typedef struct fps_stats {
    uint64_t attempts, ok, transient, fatal;
    uint64_t by_error[FPS_ERROR_SLOTS]; /* by_error[-rc]: attempts that returned rc */
    /* Rate mode: scheduled sample times that had already passed when the
     * previous attempt (and its callback) finished; they are skipped, never
     * caught up in a burst. */
    uint64_t missed_ticks;
    double elapsed_s;        /* wall time of the run */
    /* Rate mode: attempts per second of the schedule the run covered (from
     * the start to the deadline, or to the first tick it did not sample;
     * with target_time, less the time the target was held), so missed
     * ticks lower it; otherwise attempts per second of elapsed_s. */
    double achieved_rate_hz;
    uint64_t colocate_moves; /* colocate_pid: moves of the calling thread to another CPU */
    uint64_t colocate_unknown; /* ... attempts made where the followed thread's CPU was not known */
    uint64_t colocate_retry_follows; /* ... torn walks retried after a move to their thread's CPU */
    uint64_t colocate_escapes; /* ... walks of a thread standing mid-update on the sampler's CPU: the sampler left it */
    uint64_t colocate_holds; /* ... hold: attempts made with the followed thread held on the sampler's CPU */
    uint64_t colocate_hold_refused; /* ... hold: attempts whose hold the kernel refused (the thread ran free) */
    uint64_t colocate_unguarded; /* ... hold: holds made with no guard process to give the thread its affinity
                                    back should the sampler die (hold_guard.h: it could not be started) */
    char colocate_guard_error[128]; /* ... why not ("" when it ran) */
    uint64_t offload_wakes;  /* offload: attempts whose hand-over woke the callback thread (a paced run's
                                thread wakes on its own timer, after the attempt it expects) */
    double held_s;           /* target_time: the time the attempts held the target, by which the ticks moved */
    int stop_reason;         /* enum fps_stop */
    char first_fatal[FPS_ERRMSG_MAX]; /* the session's message of the fatal error, "" if none */
} fps_stats;

/* Can the calling thread run at real-time priority (a realtime run)?  It
 * tries and steps back at once: FP_OK, or FP_E_PERMISSION / FP_E_IO with
 * the reason in msg (msglen bytes). */
int fps_realtime_check(char *msg, size_t msglen);

/* Samples session s into sm as config c says, calling cb (may be NULL)
 * after each attempt.  Returns FP_OK when the run stopped on its count,
 * duration or callback; the FP_E_* code of the fatal attempt that stopped
 * it (fp_session_get_errmsg(s) still tells it); FP_E_INVALID_ARG for a NULL
 * s, sm or c, a negative, non-finite or too large rate or duration,
 * poisson or realtime without a rate, a negative colocate_pid, take with
 * offload or a fault, or neither count nor duration without cb; FP_E_IO when colocation cannot start
 * (first_fatal says why); FP_E_PERMISSION when realtime was asked for and the kernel
 * refused it (no CAP_SYS_NICE and RLIMIT_RTPRIO below FPS_RT_PRIORITY;
 * FP_E_IO for any other failure: nothing was sampled) and FP_E_IO if
 * sleeping until a tick fails (for both, first_fatal says so).  out
 * (may be NULL) receives the statistics in every case.  A paced run sets
 * the calling thread's timer slack to 1 ns while it runs (the default
 * 50 us would make every sleep overrun its tick) and, when it is
 * SCHED_NORMAL, asks the scheduler for a time slice of FPS_SLICE_NS (a
 * custom slice, Linux 6.12 on: woken for a tick, it then preempts a
 * CPU-bound thread instead of waiting for that thread's slice to end),
 * its policy and nice untouched; it restores both (a default slice as
 * the default, a caller's own as itself).  A realtime run
 * instead runs the calling thread at SCHED_FIFO priority FPS_RT_PRIORITY
 * (children it forks start as SCHED_NORMAL: SCHED_FLAG_RESET_ON_FORK) and
 * restores its policy, nice and slice afterwards: a CPU-bound target
 * thread can then neither delay a tick nor take the CPU from a sample
 * (a blocking sample's resume wakes the target's threads, which otherwise
 * preempt the sampler in the middle of it).  The time such a run takes
 * must stay below the kernel's real-time share (sched_rt_runtime_us of
 * sched_rt_period_us, 95 % by default), which throttles it beyond.  A
 * colocated run moves the calling thread before each attempt (colocate.h),
 * and before the retry of a torn walk to the CPU of the thread that tore
 * it (it sets the session's retry hook, fp_session_set_retry_hook, for the
 * run, calling the caller's own hook after each move, and puts the
 * caller's back at the end), and gives it its CPU affinity back at the
 * end.  A fault (fps_config.fault, FP_E_INVALID_ARG when unknown) sets the
 * session's retry hook too, chained the same way, and puts it back. */
int fps_run(fp_session *s, fp_sample *sm, const fps_config *c, fps_callback cb, void *ctx, fps_stats *out);

#endif
