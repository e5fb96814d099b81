/* retry_read.h — a torn walk's retry, read in one read (retry_read.c). */
#ifndef FPI_RETRY_READ_H
#define FPI_RETRY_READ_H

#include <stdbool.h>
#include <stdint.h>

#include "session.h"

/* The retry of thread state ts, torn in the last attempt: reads in one
 * batched read its thread state, where that attempt found its chunks
 * (with a margin) and its _PyCFrame, and that attempt's read-backs' ranges
 * after them; fills *pre for fpi_walk_thread_once (its bytes in a buffer
 * of the session's, valid until the next retry's read).  False when nothing is known of the thread or the read
 * failed: the walk then reads everything itself. */
bool fpi_retry_read(fp_session *s, uint64_t ts, fpi_thread_prefetch *pre);

#endif
