/* retry_read.c — a torn walk's retry, read in one read.
 *
 * A walk that a running thread tore is tried again.  Read afresh, piece by
 * piece (the thread state, its chunks, then the read-backs, each a system
 * call of its own), the retry gave the thread as much time to move again
 * as the walk it replaced, and a thread whose stack changes every
 * microsecond or two tore almost every retry (frameproof bench on
 * targets/bench/running.py, 3.11: 94 % of retries torn, 8 tries a thread).
 * So a retry reads, in one process_vm_readv, the thread state, the chunks
 * where the torn attempt found them (the newest with a margin, as the next
 * sample's first read would: thread.c, remember_stack) and its _PyCFrame's
 * current frame (3.11, 3.12), and after all of those the ranges of the
 * read-backs that attempt planned (readback_ahead.c, in a second instance
 * of its own: s->rb_retry).  The walk checks every address it takes from
 * these bytes as it checks the sample's first read's, and a read-back
 * planned exactly like one of the torn attempt's, with nothing read since
 * the retry's read, is checked on the bytes read after the copy in that
 * same read: the argument of readback_ahead.c, with the torn attempt in
 * the place of the last sample. */
#include <string.h>

#include "chain.h"
#include "grow.h"
#include "read.h"
#include "readback_ahead.h"
#include "retry_read.h"

#define RETRY_IOV_FIXED (2u + FPI_SPEC_OLD_CHUNKS + 1u) /* thread state, _PyCFrame word, chunks */
#define RETRY_BUF_INITIAL 65536u

static const fpi_thread_memo *memo_of(const fp_session *s, uint64_t ts)
{
    for (size_t i = s->seen_last.ncur; i-- > 0;)
        if (s->seen_last.cur[i].ts == ts)
            return &s->seen_last.cur[i];
    return NULL;
}

bool fpi_retry_read(fp_session *s, uint64_t ts, fpi_thread_prefetch *pre)
{
    const fpi_layout *l = &s->layout;
    const fpi_thread_memo *m = memo_of(s, ts);
    if (!m)
        return false;
    size_t tslen = s->ts_read_len, bytes = tslen + (size_t)m->chunk_read;
    for (unsigned j = 0; j < m->nold; j++)
        bytes += (size_t)m->old_len[j];
    if (bytes > FPI_MAX_STACK_COPY)
        return false;
    uint8_t *nb = fpi_grow(s->retry_buf, &s->retry_cap, bytes, 1, RETRY_BUF_INITIAL);
    if (!nb)
        return false;
    s->retry_buf = nb;
    fpi_read_set *rs = &s->retry_read;
    fpi_read_set_clear(rs);
    if (!fpi_read_set_reserve(rs, RETRY_IOV_FIXED))
        return false;
    fp_iov *iov = rs->iov;
    *pre = (fpi_thread_prefetch){.ts = ts, .tsbuf = 0, .ts_bytes = nb, .chunk_bytes = nb};
    size_t n = 0, at = tslen;
    /* The thread state first, then its chunks oldest first: the order of
     * the sample's first read (read_ahead.c, plan_thread_reads). */
    iov[n++] = (fp_iov){ts, nb, tslen};
    if (m->cframe && l->cframe_current_frame != FPI_OFF_NONE) {
        pre->spec_cframe = m->cframe;
        iov[n++] = (fp_iov){m->cframe + (uint64_t)l->cframe_current_frame, &pre->cframe_top, FPI_PTR_SIZE};
    }
    for (unsigned j = m->nold; j-- > 0;) {
        pre->spec_old[j] = m->old[j];
        pre->spec_old_buf[j] = at;
        pre->spec_old_len[j] = (size_t)m->old_len[j];
        iov[n++] = (fp_iov){m->old[j], nb + at, (size_t)m->old_len[j]};
        at += (size_t)m->old_len[j];
    }
    pre->spec_nold = m->nold;
    if (m->chunk && m->chunk_read) {
        pre->spec_chunk = m->chunk;
        pre->spec_chunkbuf = at;
        pre->spec_chunklen = (size_t)m->chunk_read;
        iov[n++] = (fp_iov){m->chunk, nb + at, (size_t)m->chunk_read};
    }
    rs->n = n;
    size_t ahead = fpi_rb_ahead_append(&s->rb_retry, rs);
    bool ok = fpi_read_all(s, rs) == FP_OK;
    fpi_rb_ahead_after_first_read(&s->rb_retry, ahead, ok, s->reads.calls);
    if (!ok)
        return false;
    pre->cframe = l->ts_current_frame == FPI_OFF_NONE ? fpi_load_u64(nb, l->ts_cframe) : 0;
    pre->has_cframe_top = pre->cframe && pre->cframe == pre->spec_cframe;
    uint64_t chunk = fpi_load_u64(nb, l->ts_datastack_chunk), top = fpi_load_u64(nb, l->ts_datastack_top);
    pre->chunk = chunk;
    pre->top = top;
    if (chunk == pre->spec_chunk && fpi_live_span(chunk, top) && top - chunk <= pre->spec_chunklen) {
        pre->chunkbuf = pre->spec_chunkbuf;
        pre->chunklen = (size_t)(top - chunk);
    }
    return true;
}
