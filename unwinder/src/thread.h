/* thread.h — one walk of one thread state (thread.c). */
#ifndef FPI_THREAD_H
#define FPI_THREAD_H

#include <stdbool.h>
#include <stdint.h>

#include "interp_read.h"
#include "session.h"

/* One walk of one thread: what it starts from, and what it tells besides
 * its return code. */
typedef struct fpi_thread_walk {
    uint64_t link;                  /* the pointer that led to the thread state */
    uint64_t ts;                    /* the thread state */
    const fpi_thread_prefetch *pre; /* its bytes, read ahead or by a retry's read (NULL: the walk reads them) */
    fpi_chain *chain;               /* where it records its chain (walk_record.h) */
    struct fpi_walk_batch *batch;   /* non-NULL: the walk is kept there for the interpreter's one read-back
                                     * (batch.c) instead of being read back and resolved alone */
    bool spec_frames;               /* frames outside the data stack may start from the frame cache's proven bytes */
    bool stopped;                   /* the thread is stopped alone (pause_torn): the walk reads one instant of it
                                       (so does every walk of a blocking sample, which needs not say it) */
    bool alone;                     /* walked on its own, not in a batch (retry.c): its read-backs are recorded
                                     * for, and taken from, a retry's one read (s->rb_retry) */
    uint64_t next;                  /* out: its next link, once its thread state was read (else left as it was) */
    bool link_moved;                /* out: a read-back found the link naming another thread state, which a
                                     * retry through the same link would meet again */
} fpi_thread_walk;

/* One walk of the thread state w->ts: pushes the thread (and, unless the
 * batch is collecting, its frames) to the sample.  A walk that fails
 * leaves the thread in the sample with its error. */
int fpi_walk_thread_once(fp_session *s, fp_sample *sm, fpi_interp_info *ii, fpi_thread_walk *w);

#endif
