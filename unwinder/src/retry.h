/* retry.h — a thread's walk, retried until it holds (retry.c). */
#ifndef FPI_RETRY_H
#define FPI_RETRY_H

#include <stdbool.h>
#include <stdint.h>

#include "interp_read.h"
#include "session.h"

/* Walks the thread state at ts (reached through the pointer at link), from
 * `pre` first when it was read ahead, retried from fresh reads while it
 * fails for any reason but a fatal one or FP_E_LIMIT, within
 * FPI_THREAD_WALK_ATTEMPTS (with fp_options.pause_torn, after
 * FPI_PAUSE_TORN_AFTER torn walks, with the thread stopped); returns the
 * last attempt's code.  *link_left: the retries ended because the link
 * that led to the thread state was read naming *link_now. */
int fpi_walk_thread(fp_session *s, fp_sample *sm, fpi_interp_info *ii, uint64_t link, uint64_t ts,
                    const fpi_thread_prefetch *pre, uint64_t *next, bool *link_left, uint64_t *link_now);

#endif
