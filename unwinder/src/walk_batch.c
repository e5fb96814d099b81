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
#include <string.h>

#include "grow.h"
#include "walk.h"


/* An interpreter's walks, copied from the read-ahead and collected, kept
 * for one batched read-back of every thread (two, like a single walk's),
 * then resolved.  Anything short of every thread proven leaves the
 * interpreter to the thread-by-thread walk. */
typedef struct fpi_deferred_walk {
    fpi_verify_want want;
    size_t thread;                  /* index in the sample */
    size_t chunks, nchunks, seen, nseen, pending, npending; /* slices of the batch's arrays */
    bool owes_links;                /* its frames owe it a read-back (fpi_frames_owe: any but none) */
} fpi_deferred_walk;

typedef struct fpi_walk_batch {
    bool on;                        /* walk_frames defers instead of reading back */
    fpi_deferred_walk *walks;
    size_t n, cap;
    fpi_chunk_copy *chunks;
    size_t nchunks, chunks_cap;
    fpi_seen_frame *seen;
    size_t nseen, seen_cap;
    fpi_pending_frame *pending;
    size_t npending, pending_cap;
    uint8_t *ts;                    /* the thread-state copies, ts_read_len bytes each */
    size_t ts_cap;
    fpi_verify_want *wants;
    size_t wants_cap;
    fpi_walk_used *used;
    size_t used_cap;
} fpi_walk_batch;

bool fpi_batch_collecting(const fp_session *s)
{
    return s->batch && s->batch->on;
}

#define BATCH_INITIAL 16u

void fpi_walk_batch_free(fpi_walk_batch *b)
{
    if (!b)
        return;
    free(b->walks);
    free(b->chunks);
    free(b->seen);
    free(b->pending);
    free(b->ts);
    free(b->wants);
    free(b->used);
    free(b);
}

/* Appends n items of size sz to a growable array; false when out of memory. */
static bool batch_append(void **arr, size_t *len, size_t *cap, const void *items, size_t n, size_t sz)
{
    void *na = fpi_grow(*arr, cap, *len + n ? *len + n : 1, sz, BATCH_INITIAL);
    if (!na)
        return false;
    *arr = na;
    if (n)
        memcpy((uint8_t *)na + *len * sz, items, n * sz);
    *len += n;
    return true;
}

/* Keeps the walk just collected (s->chunks, s->seen, s->pending, the
 * thread state copy in want) for the interpreter's batched read-back. */
int fpi_batch_defer(fp_session *s, const fp_sample *sm, const fp_thread *th, const fpi_verify_want *want)
{
    fpi_walk_batch *b = s->batch;
    fpi_deferred_walk d = {
        .want = *want,
        .thread = (size_t)(th - sm->threads),
        .chunks = b->nchunks, .nchunks = s->nchunks,
        .seen = b->nseen, .nseen = s->nseen,
        .pending = b->npending, .npending = s->npending,
    };
    size_t tslen = s->ts_read_len, tsused = b->n * tslen;
    if (!batch_append((void **)&b->chunks, &b->nchunks, &b->chunks_cap, s->chunks, s->nchunks, sizeof *s->chunks) ||
        !batch_append((void **)&b->seen, &b->nseen, &b->seen_cap, s->seen, s->nseen, sizeof *s->seen) ||
        !batch_append((void **)&b->pending, &b->npending, &b->pending_cap, s->pending, s->npending,
                      sizeof *s->pending) ||
        !batch_append((void **)&b->ts, &tsused, &b->ts_cap, want->tsbuf, tslen, 1) ||
        !batch_append((void **)&b->walks, &b->n, &b->cap, &d, 1, sizeof d))
        return fpi_err(&s->err, FP_E_NOMEM, "out of memory: keeping %zu walks for one read-back", b->n + 1);
    return FP_OK;
}

/* Reads back every deferred walk in one batched read, twice; FP_OK when
 * all of them are unchanged. */
static int verify_batch(fp_session *s)
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
        s->pf[failed].ts = 0;
        s->batch_torn_ts = ws[failed].ts;
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
        int rc = fpi_emit_frames(s, sm, th, b->pending + d->pending, d->npending);
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
int fpi_walk_interp_batched(fp_session *s, fp_sample *sm, fpi_interp_info *ii)
{
    const fpi_layout *l = &s->layout;
    if (!s->batch && !(s->batch = calloc(1, sizeof *s->batch)))
        return FP_E_INCOMPLETE; /* no memory for the fast path: the walk proper will say */
    fpi_walk_batch *b = s->batch;
    b->n = b->nchunks = b->nseen = b->npending = 0;
    size_t nthreads0 = sm->nthreads, nframes0 = sm->nframes, ncur0 = s->ncur_ts;
    uint64_t ts = ii->threads_head, link = ii->addr + (uint64_t)l->interp_threads_head;
    int rc = FP_OK;
    b->on = true;
    for (size_t k = 0; !rc && ts; k++) {
        if (k >= s->npf || s->pf[k].ts != ts) {
            rc = FP_E_INCOMPLETE; /* not read ahead (or more threads than the list had) */
            break;
        }
        if ((rc = fpi_remember_thread(s, ii->addr, ts)))
            break;
        s->spec_frames = s->opts.cache_frames && s->opts.cache_code;
        uint64_t next = 0;
        rc = fpi_walk_thread_once(s, sm, ii, link, ts, &s->pf[k], &next);
        link = ts + (uint64_t)l->ts_next;
        ts = next;
    }
    b->on = false;
    if (!rc)
        rc = verify_batch(s);
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
        s->ncur_ts = ncur0;
        s->err.msg[0] = 0;
    }
    return rc;
}

