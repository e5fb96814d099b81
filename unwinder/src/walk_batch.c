/* walk_batch.c — the read-back of every thread of an interpreter at once.
 *
 * When the sample read every thread state of an interpreter ahead (the
 * thread list of the last sample still holds), each thread is walked from
 * its read-ahead copy, and what every walk used is read back in one
 * batched read, as verify.c reads back one thread's walk (twice, or once
 * and again after the frames for the walks whose frames owe it): the same
 * fields must be unchanged, so the sample is as consistent as one made
 * thread by thread, in a few reads whatever the number of threads.  Only
 * then are the frames resolved.  Anything short of every thread proven
 * (a thread not read ahead, a walk that failed, a change in the read-back)
 * leaves the sample as it was, and the interpreter is walked again thread
 * by thread, each thread retried on its own. */
#include <stdlib.h>

#include "batch.h"
#include "emit.h"
#include "grow.h"
#include "read.h"
#include "thread.h"
#include "thread_list.h"
#include "verify.h"
#include "walk_batch.h"

#define BATCH_INITIAL 16u

/* Reads back every deferred walk in one batched read, twice; FP_OK when
 * all of them are unchanged.  *torn_ts: the thread state of the walk found
 * changed (0: none). */
static int verify_batch(fp_session *s, uint64_t *torn_ts)
{
    fpi_walk_batch *b = s->batch;
    fpi_verify_want *ws = fpi_grow(b->wants, &b->wants_cap, b->n ? b->n : 1, sizeof *ws, BATCH_INITIAL);
    if (ws)
        b->wants = ws;
    fpi_walk_used *us = ws ? fpi_grow(b->used, &b->used_cap, b->n ? b->n : 1, sizeof *us, BATCH_INITIAL) : NULL;
    if (!us)
        return fpi_err(&s->err, FP_E_NOMEM, "out of memory: the read-back of %zu walks", b->n);
    b->used = us;
    for (size_t i = 0; i < b->n; i++) {
        const fpi_deferred_walk *d = &b->walks[i];
        ws[i] = d->want;
        ws[i].tsbuf = b->ts + i * s->ts_read_len;
        us[i] = (fpi_walk_used){b->chunks + d->chunks, d->nchunks, b->seen + d->seen, d->nseen};
    }
    int rc = FP_OK;
    unsigned first = fpi_verify_reads_first(&s->layout);
    for (unsigned r = 0; !rc && r < first; r++) {
        for (size_t i = 0; i < b->n; i++)
            ws[i].last = r + 1 == first;
        size_t failed;
        rc = fpi_verify_batch(s, ws, us, b->n, &failed);
        if (rc != FP_E_INCOMPLETE || failed >= b->n)
            continue; /* proven, or the read-back itself failed: no thread to blame */
        if (ws[failed].generation_seen != ws[failed].generation) {
            fpi_code_cache_invalidate(&s->cc); /* code objects were freed: the walk again trusts none */
            s->code_generation = ws[failed].generation_seen;
        }
        /* The thread found changed is walked again from fresh reads, not
         * from its read-ahead copy or the frame cache's bytes, either of
         * which may be what failed. */
        s->ahead.pf[failed].ts = 0;
        *torn_ts = ws[failed].ts;
        s->reads.torn++;
        if (s->retry_hook) /* the caller hears of it before the retry (fp_session_set_retry_hook) */
            s->retry_hook(s->retry_hook_ctx, ws[failed].native_id);
    }
    for (size_t i = 0; !rc && i < b->n; i++)
        fpi_take_top_instr(b->pending + b->walks[i].pending, b->walks[i].npending, &us[i], &ws[i]);
    return rc;
}

/* Resolves every proven walk's frames into its thread, in list order. */
static int emit_batch(fp_session *s, fp_sample *sm)
{
    fpi_walk_batch *b = s->batch;
    /* Every thread's cached code objects confirmed in one read (before
     * 3.14); each emit_frames then finds them confirmed. */
    fpi_code_prevalidate(s, b->pending, b->npending);
    for (size_t i = 0; i < b->n; i++) {
        fpi_deferred_walk *d = &b->walks[i];
        fp_thread *th = &sm->threads[d->thread];
        th->first_frame = sm->nframes;
        fpi_frames_mark mark = fpi_frames_mark_now(s);
        int rc = fpi_emit_frames(s, sm, th, b->pending + d->pending, d->npending, d->want.stopped);
        if (rc)
            return rc;
        d->owes_links = fpi_frames_owe(s, mark) != FPI_OWED_NONE;
    }
    return FP_OK;
}

/* The read-back the resolved frames owe: every walk, strictly, after a
 * code object was read outside the read-back (one walk's late code object
 * is trusted by the walks resolved after it); otherwise only the walks
 * with a link the callee check did not compare, gathered at the front of
 * the batch's want and used arrays. */
static int verify_owed(fp_session *s, fpi_owed owed)
{
    fpi_walk_batch *b = s->batch;
    if (owed == FPI_OWED_CODE)
        return fpi_verify_after_frames(s, b->wants, b->used, b->n, true);
    size_t m = 0;
    for (size_t i = 0; i < b->n; i++) {
        if (!b->walks[i].owes_links)
            continue;
        b->wants[m] = b->wants[i];
        b->used[m] = b->used[i];
        m++;
    }
    /* None marked (a link counted outside the frames): every walk. */
    return fpi_verify_after_frames(s, b->wants, b->used, m ? m : b->n, false);
}


/* The fast path for an interpreter whose threads were all read ahead:
 * every thread's walk from its read-ahead copy, one batched read-back of
 * all of them (twice, or once and again after the frames: verify.c), then
 * the frames.  FP_OK: the interpreter's threads
 * are in the sample, proven together.  Any other outcome but a fatal one
 * (a thread not read ahead, torn, failed, the batch changed) leaves the
 * sample and the thread list as they were, for the thread-by-thread walk,
 * which retries each thread on its own. */
int fpi_walk_interp_batched(fp_session *s, fp_sample *sm, fpi_interp_info *ii, uint64_t *torn_ts)
{
    const fpi_layout *l = &s->layout;
    if (!s->batch && !(s->batch = calloc(1, sizeof *s->batch)))
        return FP_E_INCOMPLETE; /* no memory for the fast path: the walk proper will say */
    fpi_walk_batch *b = s->batch;
    b->n = b->nchunks = b->nseen = b->npending = 0;
    size_t nthreads0 = sm->nthreads, nframes0 = sm->nframes, ncur0 = s->seen_last.ncur;
    uint64_t ts = ii->threads_head, link = ii->addr + (uint64_t)l->interp_threads_head;
    int rc = FP_OK;
    for (size_t k = 0; !rc && ts; k++) {
        if (k >= s->ahead.npf || s->ahead.pf[k].ts != ts) {
            rc = FP_E_INCOMPLETE; /* not read ahead (or more threads than the list had) */
            break;
        }
        if ((rc = fpi_remember_thread(s, ii->addr, ts)))
            break;
        fpi_thread_walk w = {.link = link,
                             .ts = ts,
                             .pre = &s->ahead.pf[k],
                             .chain = &s->chain,
                             .batch = b,
                             .spec_frames = s->opts.cache_frames && s->opts.cache_code};
        rc = fpi_walk_thread_once(s, sm, ii, &w);
        link = ts + (uint64_t)l->ts_next;
        ts = w.next;
    }
    if (!rc)
        rc = verify_batch(s, torn_ts);
    fpi_frames_mark mark = fpi_frames_mark_now(s);
    if (!rc)
        rc = emit_batch(s, sm);
    if (!rc)
        rc = fpi_check_main_listed(s, sm, nthreads0, sm->nthreads - nthreads0, ii);
    fpi_owed owed = rc ? FPI_OWED_NONE : fpi_frames_owe(s, mark);
    if (owed != FPI_OWED_NONE)
        rc = verify_owed(s, owed);
    if (rc && !fpi_walk_fatal(rc)) {
        sm->nthreads = nthreads0;
        sm->nframes = nframes0;
        s->seen_last.ncur = ncur0;
        s->err.msg[0] = 0;
    }
    return rc;
}
