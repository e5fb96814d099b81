/* fault.h — what fps_run's self-test faults (sampler.h, enum fps_fault)
 * need: a retry hook that keeps, for one attempt, the threads whose walk
 * the target tore, chained in front of the run's own hook. */
#ifndef FPS_FAULT_H
#define FPS_FAULT_H

#include <stddef.h>
#include <stdint.h>

#include "sampler.h"

typedef struct fps_torn_log {
    uint64_t ids[FPS_TORN_IDS_MAX]; /* native ids of the threads torn in this attempt, each once */
    size_t n;
    uint64_t tears;                 /* torn walks heard of in this attempt (a thread may tear again) */
    fp_retry_hook chain;            /* the hook it stands in front of (or NULL), called after it */
    void *chain_ctx;
} fps_torn_log;

/* An fp_retry_hook whose ctx is an fps_torn_log: notes native_id (0, a
 * thread not read, counts as a tear without an id; an id past
 * FPS_TORN_IDS_MAX distinct ones only as a tear), then calls the chained
 * hook. */
void fps_torn_log_hook(void *ctx, uint64_t native_id);

/* Forgets the last attempt's tears. */
void fps_torn_log_reset(fps_torn_log *l);

#endif
