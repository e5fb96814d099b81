/* thread_list.h — the rules an interpreter's thread list must keep within
 * one sample, and what the sample found in it (thread_list.c). */
#ifndef FPI_THREAD_LIST_H
#define FPI_THREAD_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "interp_read.h"
#include "session.h"

/* Whether the link that led to thread state ts, read now, names another
 * (*now: what it names); false too when it cannot be read. */
bool fpi_link_moved_from(fp_session *s, uint64_t link, uint64_t ts, uint64_t *now);

/* Notes that the interpreter had the thread state ts in this sample (the
 * next sample's first read plans from it); FP_E_INCOMPLETE when it already
 * had it (the list changed under the walk). */
int fpi_remember_thread(fp_session *s, uint64_t interp, uint64_t ts);

/* After a thread's walk failed: true when its state's next link (as the
 * failed walk read `next`) and the link that led to it both still hold,
 * so that the list may be followed on. */
bool fpi_list_link_holds(fp_session *s, uint64_t link, uint64_t ts, uint64_t next);

/* The main interpreter lists its main thread's state for as long as it
 * runs (3.12+: threads.main; before, the state with the runtime's main
 * thread id).  FP_E_INCOMPLETE (with the message) when the `count` threads
 * from sm->threads[first] walked for interpreter ii hold none marked main:
 * the list was read while it was being changed. */
int fpi_check_main_listed(fp_session *s, const fp_sample *sm, size_t first, size_t count, const fpi_interp_info *ii);

/* Leaves the main flag on one thread of interpreter fi at most (by_ids:
 * without threads.main; cut: the list was not followed to its end, where a
 * frameless state with the main thread's ids is failed as torn). */
void fpi_one_main_thread(fp_sample *sm, const fp_interp *fi, bool by_ids, bool cut);

#endif
