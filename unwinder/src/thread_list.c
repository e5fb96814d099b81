/* thread_list.c — an interpreter's thread list as one sample walks it: the
 * thread states it has met (a state met twice: the list changed), whether
 * a link still leads where it did, and which thread is the main one.
 * Each link is proven with its thread's walk; these rules are what is
 * left to prove of the list as a whole. */
#include <stdint.h>

#include "grow.h"
#include "read.h"
#include "thread_list.h"

#define MEMO_INITIAL 64u

/* Whether the link that led to a thread state, read now, names another:
 * a retry through it would tear again, and the interpreter's threads are
 * walked again from its list head instead (fpi_walk_all).  *now: what the
 * link names now (when the link is the list head, the head to start from). */
bool fpi_link_moved_from(fp_session *s, uint64_t link, uint64_t ts, uint64_t *now)
{
    return fpi_read(s, link, now, sizeof *now) == FP_OK && *now != ts;
}

/* Remembers which thread states the interpreter had, for the next sample. */
int fpi_remember_thread(fp_session *s, uint64_t interp, uint64_t ts)
{
    /* Each link was proven when its thread was, but not the list as a
     * whole: a thread that exits and whose state a new thread reuses at
     * the list's head can lead the walk back to threads it has listed. */
    fpi_seen_last *sl = &s->seen_last;
    for (size_t i = sl->ncur; i-- > 0 && sl->cur[i].interp == interp;)
        if (sl->cur[i].ts == ts)
            return fpi_err(&s->err, FP_E_INCOMPLETE,
                           "torn: the thread list of interpreter 0x%llx changed while it was walked (thread state "
                           "0x%llx reached twice)",
                           (unsigned long long)interp, (unsigned long long)ts);
    fpi_thread_memo *nl = fpi_grow(sl->cur, &sl->cur_cap, sl->ncur + 1, sizeof *nl, MEMO_INITIAL);
    if (!nl)
        return fpi_err(&s->err, FP_E_NOMEM, "out of memory: remembering %zu thread states", sl->ncur + 1);
    sl->cur = nl;
    sl->cur[sl->ncur++] = (fpi_thread_memo){.interp = interp, .ts = ts};
    return FP_OK;
}

/* After a thread's walk failed: its state's next link (as the failed walk
 * read it) and the link that led to the state, read back in that order
 * (the read-back order of verify.c), both unchanged.  A state reached
 * through a torn link, or freed meanwhile, fails it. */
bool fpi_list_link_holds(fp_session *s, uint64_t link, uint64_t ts, uint64_t next)
{
    uint64_t now_next, now_ts;
    if (fpi_read(s, ts + (uint64_t)s->layout.ts_next, &now_next, sizeof now_next) ||
        fpi_read(s, link, &now_ts, sizeof now_ts))
        return false;
    return now_next == next && now_ts == ts;
}

/* The main interpreter lists its main thread's state for as long as it
 * runs: a list walked without it was read while it was being changed. */
int fpi_check_main_listed(fp_session *s, const fp_sample *sm, size_t first, size_t count, const fpi_interp_info *ii)
{
    if (ii->id != 0 || (!ii->threads_main && !ii->main_thread_id))
        return FP_OK;
    for (size_t i = 0; i < count; i++)
        if (sm->threads[first + i].main)
            return FP_OK;
    return fpi_err(&s->err, FP_E_INCOMPLETE,
                   "incomplete sample: the main interpreter's thread list (%zu threads) lacks its main thread: it was "
                   "being changed",
                   count);
}

/* Leaves the main flag on one thread of the interpreter at most.  With
 * threads.main only that state carries it.  By the ids (3.11, 3.12, and
 * finalisation) it is the last state with the main thread's ids: new
 * states go to the list's head, the main thread's own is the oldest.  A
 * state made for a thread that has not started yet carries its creator's
 * ids (3.11: the native id too) and no frames; in a list the walk did not
 * follow to its end (`cut`), the main thread's own state may lie beyond,
 * and a frameless state with its ids may be either: it is failed as torn,
 * neither taken for the main thread (live scenario thread_churn, 3.11: a new
 * thread's state returned as a frameless main thread, the list cut after a
 * thread that exited under the walk) nor returned
 * as another thread (fuzz_live_consistency, 3.11: the main thread itself,
 * frameless, returned as a good thread that is not the main one). */
void fpi_one_main_thread(fp_sample *sm, const fp_interp *fi, bool by_ids, bool cut)
{
    size_t last = SIZE_MAX;
    for (size_t i = 0; i < fi->thread_count; i++)
        if (sm->threads[fi->first_thread + i].main)
            last = i;
    for (size_t i = 0; last != SIZE_MAX && i < last; i++)
        sm->threads[fi->first_thread + i].main = false;
    fp_thread *t = last != SIZE_MAX ? &sm->threads[fi->first_thread + last] : NULL;
    if (t && by_ids && cut && t->frame_count == 0) {
        t->main = false;
        if (!t->error)
            t->error = FP_E_INCOMPLETE;
    }
}
