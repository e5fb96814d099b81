/* read_ahead.h — what a sample reads before it walks (read_ahead.c). */
#ifndef FPI_READ_AHEAD_H
#define FPI_READ_AHEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "interp_read.h"
#include "session.h"

/* The sample's first read, in one batch: the `span` bytes of _PyRuntime at
 * rt_addr into rt, and, from what the last sample saw, its first
 * interpreter's words (*spec; spec->addr 0: not read), its thread states,
 * their stacks, and the last sample's read-backs and thread-local bytecode
 * words.  Returns the number of thread states read with it (-1: the batch
 * failed and nothing of it may be used, the runtime words included). */
long fpi_first_read(fp_session *s, uint64_t rt_addr, uint8_t *rt, size_t span, fpi_interp_words *spec);

/* With the n thread states fpi_first_read read for interpreter ii: keeps
 * in s->ahead.pf those the list still links and reads, in one more batched read,
 * what of their stacks moved.  Best effort. */
void fpi_finish_thread_reads(fp_session *s, const fpi_interp_info *ii, size_t n);

/* For an interpreter the first read did not cover: its thread states of
 * the last sample (with `stacks`, their stacks) read ahead into s->ahead.pf.
 * Best effort (s->ahead.npf 0: nothing read ahead). */
void fpi_prefetch_threads(fp_session *s, const fpi_interp_info *ii, bool stacks);

#endif
