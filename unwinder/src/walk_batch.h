/* walk_batch.h — every thread of an interpreter walked from its read-ahead
 * copy and read back together (walk_batch.c). */
#ifndef FPI_WALK_BATCH_H
#define FPI_WALK_BATCH_H

#include "interp_read.h"
#include "session.h"

/* FP_OK: the interpreter's threads are in the sample, proven together.
 * Any other outcome but a fatal one (a thread not read ahead, torn,
 * failed, the batch changed) leaves the sample and the thread list as
 * they were, for the thread-by-thread walk.  *torn_ts: set to the thread
 * state whose read-back found it changed, which that walk must then take
 * from fresh bytes (fpi_thread_at.fresh); left as it was otherwise. */
int fpi_walk_interp_batched(fp_session *s, fp_sample *sm, fpi_interp_info *ii, uint64_t *torn_ts);

#endif
