/* read_ahead.c — a sample's reads before its walks, planned from what the
 * last sample saw (s->seen_last): the first read takes the runtime's words,
 * the first interpreter's, its thread states, their newest chunks and
 * _PyCFrames and older chunks, then the last sample's read-backs
 * (readback_ahead.c) and thread-local bytecode words (tlbc_ahead.c), in
 * one batched read; what moved is read in one more.  Everything read
 * here is a guess the walk checks: an address that does not match is read
 * again by the walk itself. */
#include <string.h>

#include "chain.h"
#include "grow.h"
#include "read.h"
#include "read_ahead.h"

/* Plans the read-ahead of the thread states interpreter `interp` had in the
 * previous sample: s->ahead.pf and the ranges from `first` on of
 * s->ahead.first_read (its first `first` left for the caller to fill, its n
 * set past the last planned); with `stacks`, also each one's newest chunk
 * and _PyCFrame where the previous sample saw them, after all the thread
 * states (fpi_finish_thread_reads keeps them where the thread states still
 * point there).  Returns how many threads (0: none, fewer than `min`, or no
 * memory). */
static size_t plan_thread_reads(fp_session *s, uint64_t interp, size_t first, size_t min, bool stacks)
{
    fpi_read_ahead *a = &s->ahead;
    const fpi_seen_last *sl = &s->seen_last;
    a->npf = 0;
    a->spec_bytes = 0;
    size_t n = 0;
    for (size_t i = 0; i < sl->nlast; i++)
        if (sl->last[i].interp == interp)
            n++;
    if (n < min || n == 0 || n > s->opts.max_threads)
        return 0; /* nothing to gain, or nothing known */
    fpi_thread_prefetch *pf = fpi_grow(a->pf, &a->pf_cap, n, sizeof *pf, n);
    if (!pf)
        return 0;
    a->pf = pf;
    size_t tslen = s->ts_read_len;
    uint8_t *tb = fpi_grow(a->ts_bufs, &a->ts_bufs_cap, n * tslen, 1, n * tslen);
    if (!tb)
        return 0;
    a->ts_bufs = tb;
    size_t spec = 0; /* bytes of chunks to read ahead */
    for (size_t i = 0; stacks && i < sl->nlast; i++) {
        const fpi_thread_memo *t = &sl->last[i];
        uint64_t bytes = t->chunk_read;
        for (unsigned j = 0; j < t->nold; j++)
            bytes += t->old_len[j];
        if (t->interp == interp && spec + bytes <= FPI_MAX_STACK_COPY)
            spec += (size_t)bytes;
    }
    uint8_t *cb = spec ? fpi_grow(a->chunk_bufs, &a->chunk_bufs_cap, spec, 1, FPI_STACK_COPY_INITIAL) : NULL;
    if (cb)
        a->chunk_bufs = cb;
    size_t most = first + (stacks ? (3 + FPI_SPEC_OLD_CHUNKS) * n : n);
    fpi_read_set *rs = &a->first_read;
    fpi_read_set_clear(rs);
    if (!fpi_read_set_reserve(rs, most))
        return 0;
    fp_iov *iov = rs->iov;
    size_t k = 0, m = first + n;
    for (size_t i = 0; i < sl->nlast && k < n; i++) {
        const fpi_thread_memo *t = &sl->last[i];
        if (t->interp != interp)
            continue;
        pf[k] = (fpi_thread_prefetch){.ts = t->ts, .tsbuf = k * tslen};
        iov[first + k] = (fp_iov){pf[k].ts, tb + k * tslen, tslen};
        if (stacks && t->cframe && s->layout.cframe_current_frame != FPI_OFF_NONE) {
            pf[k].spec_cframe = t->cframe;
            iov[m++] = (fp_iov){t->cframe + (uint64_t)s->layout.cframe_current_frame, &pf[k].cframe_top,
                                sizeof pf[k].cframe_top};
        }
        if (cb && t->chunk && a->spec_bytes + t->chunk_read <= spec) {
            size_t first_chunk = m;
            pf[k].spec_chunk = t->chunk;
            pf[k].spec_chunkbuf = a->spec_bytes;
            pf[k].spec_chunklen = (size_t)t->chunk_read;
            iov[m++] = (fp_iov){t->chunk, cb + a->spec_bytes, (size_t)t->chunk_read};
            a->spec_bytes += (size_t)t->chunk_read;
            /* Older chunks change only where the stack is as deep as them:
             * read whole as last copied, they save a read each. */
            for (unsigned j = 0; j < t->nold && a->spec_bytes + t->old_len[j] <= spec; j++) {
                pf[k].spec_old[j] = t->old[j];
                pf[k].spec_old_buf[j] = a->spec_bytes;
                pf[k].spec_old_len[j] = (size_t)t->old_len[j];
                pf[k].spec_nold = j + 1;
                iov[m++] = (fp_iov){t->old[j], cb + a->spec_bytes, (size_t)t->old_len[j]};
                a->spec_bytes += (size_t)t->old_len[j];
            }
            /* Read oldest first, as the read-back does (verify.c, plan). */
            for (size_t lo = first_chunk, hi = m; lo + 1 < hi; lo++, hi--) {
                fp_iov tmp = iov[lo];
                iov[lo] = iov[hi - 1];
                iov[hi - 1] = tmp;
            }
        }
        k++;
    }
    rs->n = m;
    return n;
}

/* Points the kept read-ahead threads at the buffers their offsets count
 * from, once nothing grows them in this sample: the walks read the bytes
 * through the prefetch alone. */
static void bind_bytes(fp_session *s)
{
    for (size_t i = 0; i < s->ahead.npf; i++) {
        s->ahead.pf[i].ts_bytes = s->ahead.ts_bufs;
        s->ahead.pf[i].chunk_bytes = s->ahead.chunk_bufs;
    }
}

/* With the n planned thread states read: keeps the prefix whose `next`
 * links still match (the walk reads anything else itself) and reads, in
 * one more batched read, each one's current frame from its _PyCFrame
 * (3.11, 3.12) and the live part of its newest chunk.  Best effort: any
 * failure just leaves less (or nothing) read ahead. */
void fpi_finish_thread_reads(fp_session *s, const fpi_interp_info *ii, size_t n)
{
    const fpi_layout *l = &s->layout;
    size_t tslen = s->ts_read_len;
    fpi_thread_prefetch *pf = s->ahead.pf;
    const uint8_t *tb = s->ahead.ts_bufs;
    if (n == 0 || pf[0].ts != ii->threads_head)
        return;
    size_t valid = 1;
    while (valid < n && fpi_load_u64(tb + (valid - 1) * tslen, l->ts_next) == pf[valid].ts)
        valid++;
    s->ahead.npf = valid;
    size_t total = s->ahead.spec_bytes, m = 0;
    bool cframes = l->ts_current_frame == FPI_OFF_NONE;
    fpi_read_set *rs = &s->ahead.first_read; /* read, and free for this second read */
    fpi_read_set_clear(rs);
    if (!fpi_read_set_reserve(rs, 2 * valid)) {
        s->ahead.npf = 0;
        return;
    }
    fp_iov *iov = rs->iov;
    for (size_t i = 0; i < valid; i++) {
        pf[i].cframe = cframes ? fpi_load_u64(tb + i * tslen, l->ts_cframe) : 0;
        /* Read with the first read where the last sample saw it. */
        pf[i].has_cframe_top = pf[i].cframe && pf[i].cframe == pf[i].spec_cframe;
        if (pf[i].cframe && !pf[i].has_cframe_top)
            iov[m++] = (fp_iov){pf[i].cframe + (uint64_t)l->cframe_current_frame, &pf[i].cframe_top,
                                sizeof pf[i].cframe_top};
    }
    size_t first_chunk = m;
    for (size_t i = 0; i < valid; i++) {
        uint64_t chunk = fpi_load_u64(tb + i * tslen, l->ts_datastack_chunk);
        uint64_t top = fpi_load_u64(tb + i * tslen, l->ts_datastack_top);
        pf[i].chunk = chunk;
        pf[i].top = top;
        pf[i].chunklen = 0;
        if (!fpi_live_span(chunk, top))
            continue;
        size_t len = (size_t)(top - chunk);
        if (chunk == pf[i].spec_chunk && len <= pf[i].spec_chunklen) {
            pf[i].chunkbuf = pf[i].spec_chunkbuf; /* read with the first read */
            pf[i].chunklen = len;
        } else if (total + len <= FPI_MAX_STACK_COPY) {
            pf[i].chunkbuf = total;
            pf[i].chunklen = len;
            total += len;
            m++; /* its read is planned below, once the buffer has grown */
        }
    }
    if (m == 0) {
        bind_bytes(s);
        return;
    }
    uint8_t *cb = fpi_grow(s->ahead.chunk_bufs, &s->ahead.chunk_bufs_cap, total ? total : 1, 1, FPI_STACK_COPY_INITIAL);
    if (cb)
        s->ahead.chunk_bufs = cb;
    size_t r = first_chunk;
    for (size_t i = 0; cb && i < valid; i++)
        if (pf[i].chunklen && pf[i].chunkbuf >= s->ahead.spec_bytes)
            iov[r++] = (fp_iov){pf[i].chunk, cb + pf[i].chunkbuf, pf[i].chunklen};
    rs->n = m;
    if (!cb || fpi_read_all(s, rs) != FP_OK) {
        /* What this read was to bring is left to the walk. */
        for (size_t i = 0; i < valid; i++)
            if (pf[i].chunkbuf >= s->ahead.spec_bytes)
                pf[i].chunklen = 0;
        bind_bytes(s);
        return;
    }
    for (size_t i = 0; i < valid; i++)
        pf[i].has_cframe_top = pf[i].cframe != 0;
    bind_bytes(s);
}

/* Reads ahead, in one batched read, the thread states this interpreter had
 * in the previous sample and (with `stacks`) their newest chunks and
 * _PyCFrames where it saw them; a second batched read brings whatever of
 * those moved (a single thread gains nothing from a read of its own). */
void fpi_prefetch_threads(fp_session *s, const fpi_interp_info *ii, bool stacks)
{
    size_t n = plan_thread_reads(s, ii->addr, 0, 2, stacks);
    if (n && ii->threads_head == s->ahead.pf[0].ts && fpi_read_all(s, &s->ahead.first_read) == FP_OK)
        fpi_finish_thread_reads(s, ii, n);
    else
        s->ahead.npf = 0;
}

/* The sample's first read, in one batch: _PyRuntime's interpreter list
 * head and main thread id, and, speculating that the interpreter list
 * starts where it did in the last sample, that interpreter's words, the
 * thread states it had, and their newest chunks and _PyCFrames where they
 * were, and, after all of that, the last sample's read-backs
 * (readback_ahead.c): a steady-state sample of one interpreter makes no
 * other read.  Whatever the speculation got wrong is read again
 * by the walk (fpi_read_interp, fpi_finish_thread_reads check the addresses).
 * Returns the number of thread states read with it (-1: the batch failed
 * and nothing of it may be used, the runtime words included). */
long fpi_first_read(fp_session *s, uint64_t rt_addr, uint8_t *rt, size_t span, fpi_interp_words *spec)
{
    const fpi_layout *l = &s->layout;
    spec->addr = 0;
    if (!s->seen_last.interp)
        return -1;
    fp_iov fixed[1 + FPI_INTERP_IOV_MAX];
    size_t k = 0;
    fixed[k++] = (fp_iov){rt_addr, rt, span};
    const fpi_seen_last *sl = &s->seen_last;
    k += fpi_interp_iov(l, sl->interp, fpi_gil_base(l, s->info.runtime_addr, sl->gilp), spec, fixed + k);
    size_t n = plan_thread_reads(s, s->seen_last.interp, k, 1, true);
    fpi_read_set *rs = &s->ahead.first_read;
    size_t ahead = 0, tlbc = 0;
    if (n) {
        memcpy(rs->iov, fixed, k * sizeof *rs->iov); /* plan_thread_reads left k slots before the thread states */
        /* The last sample's read-backs, after everything the walks copy;
         * then where its frames' thread-local bytecode was. */
        ahead = fpi_rb_ahead_append(&s->rb_ahead, rs);
        if (l->co_tlbc != FPI_OFF_NONE)
            tlbc = fpi_tlbc_ahead_append(&s->tlbc_ahead, s->sample_no, l->co_tlbc, rs);
    }
    bool ok = (n ? fpi_read_all(s, rs) : fpi_readv(s, fixed, k)) == FP_OK;
    fpi_rb_ahead_after_first_read(&s->rb_ahead, ahead, ok, s->reads.calls);
    if (ok && tlbc)
        fpi_tlbc_ahead_read(&s->tlbc_ahead, s->sample_no, s->reads.calls);
    if (!ok) {
        spec->addr = 0;
        s->ahead.npf = 0;
        return -1;
    }
    return (long)n;
}
