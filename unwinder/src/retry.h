/* retry.h — a thread's walk, retried until it holds (retry.c). */
#ifndef FPI_RETRY_H
#define FPI_RETRY_H

#include <stdbool.h>
#include <stdint.h>

#include "interp_read.h"
#include "session.h"

/* One thread of the list, as the list walk reached it. */
typedef struct fpi_thread_at {
    uint64_t link;                  /* where the pointer to the thread state was read */
    uint64_t ts;                    /* the thread state */
    const fpi_thread_prefetch *pre; /* its read-ahead copy, or NULL */
    bool fresh;                     /* the first walk takes no frame bytes from the frame cache either: a
                                     * batched read-back found this thread changed, and those bytes may be
                                     * what changed */
} fpi_thread_at;

/* Walks the thread state at->ts, from at->pre first when it was read
 * ahead, retried from fresh reads while it fails for any reason but a
 * fatal one or FP_E_LIMIT, within FPI_THREAD_WALK_ATTEMPTS (with
 * fp_options.pause_torn, after FPI_PAUSE_TORN_AFTER torn walks, with the
 * thread stopped); returns the last attempt's code.  *link_left: the
 * retries ended because at->link was read naming *link_now. */
int fpi_walk_thread(fp_session *s, fp_sample *sm, fpi_interp_info *ii, const fpi_thread_at *at, uint64_t *next,
                    bool *link_left, uint64_t *link_now);

#endif
