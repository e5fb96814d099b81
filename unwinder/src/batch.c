/* batch.c — the store of an interpreter's walks awaiting one read-back:
 * a thread's walk handed a batch (fpi_thread_walk.batch) appends its chunk
 * copies, followed frames, recorded frames and thread-state copy here
 * instead of reading them back itself. */
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "grow.h"

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

/* Keeps the walk just collected (ch: its chunks, frames followed and found; the
 * thread state copy in want) for the interpreter's batched read-back. */
int fpi_batch_defer(fp_session *s, fpi_walk_batch *b, const fpi_chain *ch, const fp_sample *sm, const fp_thread *th,
                    const fpi_verify_want *want)
{
    fpi_deferred_walk d = {
        .want = *want,
        .thread = (size_t)(th - sm->threads),
        .chunks = b->nchunks, .nchunks = ch->nchunks,
        .seen = b->nseen, .nseen = ch->nseen,
        .pending = b->npending, .npending = ch->npending,
    };
    size_t tslen = s->ts_read_len, tsused = b->n * tslen;
    if (!batch_append((void **)&b->chunks, &b->nchunks, &b->chunks_cap, ch->chunks, ch->nchunks, sizeof *ch->chunks) ||
        !batch_append((void **)&b->seen, &b->nseen, &b->seen_cap, ch->seen, ch->nseen, sizeof *ch->seen) ||
        !batch_append((void **)&b->pending, &b->npending, &b->pending_cap, ch->pending, ch->npending,
                      sizeof *ch->pending) ||
        !batch_append((void **)&b->ts, &tsused, &b->ts_cap, want->tsbuf, tslen, 1) ||
        !batch_append((void **)&b->walks, &b->n, &b->cap, &d, 1, sizeof d))
        return fpi_err(&s->err, FP_E_NOMEM, "out of memory: keeping %zu walks for one read-back", b->n + 1);
    return FP_OK;
}
