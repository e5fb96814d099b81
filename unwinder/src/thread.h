/* thread.h — one walk of one thread state (thread.c). */
#ifndef FPI_THREAD_H
#define FPI_THREAD_H

#include <stdint.h>

#include "interp_read.h"
#include "session.h"

/* One walk of the thread state at ts (reached through the pointer at link),
 * from `pre` when it was read ahead: pushes the thread (and, unless the
 * batch is collecting, its frames) to the sample; *next is its next link.
 * A walk that fails leaves the thread in the sample with its error. */
int fpi_walk_thread_once(fp_session *s, fp_sample *sm, fpi_interp_info *ii, uint64_t link, uint64_t ts,
                         const fpi_thread_prefetch *pre, uint64_t *next);

#endif
