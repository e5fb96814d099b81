/* offload.h — the callback thread of an offloaded run (fps_config.offload):
 * attempts are handed over, in order, to a second thread that runs the
 * run's callback, so that the sampling thread goes back to sleep as soon
 * as an attempt is taken.  With a hold, the sampling thread then never
 * leaves the held thread's CPU (no migration out and back per tick) while
 * what the callback does with a sample (a profile's bookkeeping, output)
 * runs on the other CPUs.  The callback has until the next tick: a
 * sample's strings are the session's and change with its next
 * fp_session_sample, so the sampling thread takes no attempt while the
 * callback still reads the last one. */
#ifndef FPS_OFFLOAD_H
#define FPS_OFFLOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "sampler.h"

typedef struct fps_offload fps_offload;

/* What the thread calls for each attempt handed over, in order: its
 * return is the callback's (nonzero: stop). */
typedef int (*fps_deliver)(void *ctx, const fps_outcome *o);

/* Starts the thread for attempts taken into sm, at SCHED_FIFO priority
 * rt_priority when it is above 0 (a real-time run's: a callback preempted
 * by other work would delay the next tick, and the longest callbacks are
 * those of the deepest stacks), else at SCHED_OTHER.  FP_OK, or
 * FP_E_NOMEM / FP_E_IO with the reason in msg. */
int fps_offload_start(fps_offload **out, fp_sample *sm, int rt_priority, fps_deliver fn, void *ctx, char *msg,
                      size_t msglen);

/* The sample to take the next attempt into, once the callback is done
 * with the last one (it waits until then). */
fp_sample *fps_offload_next(fps_offload *q);

/* Hands the attempt taken into fps_offload_next's sample over; what o
 * points at outside that sample (errmsg, skip_ids) is copied. */
void fps_offload_post(fps_offload *q, const fps_outcome *o);

/* The sampling thread expects to hand the next attempt over by at_ns
 * (CLOCK_MONOTONIC): the thread sleeps until then instead of being woken
 * by the hand-over.  Without it, or when the attempt comes later, the
 * hand-over wakes the thread. */
void fps_offload_expect(fps_offload *q, int64_t at_ns);

/* Whether the callback has asked to stop (it is then not called again). */
bool fps_offload_stopped(fps_offload *q);

/* Keeps the thread off CPU cpu (its affinity: mask, of len bytes, less
 * cpu; mask itself when that leaves none); -1 gives it mask. */
void fps_offload_avoid(fps_offload *q, int cpu, const void *mask, size_t len);

/* Lets the thread finish the attempt handed over (unless stopped), joins
 * and frees it; returns the hand-overs that had to wake it (0 for NULL). */
uint64_t fps_offload_finish(fps_offload *q);

#endif
