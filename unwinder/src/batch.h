/* batch.h — an interpreter's walks kept for one read-back of all of them
 * (batch.c): what a walk collects into while the batch is on, and what
 * the batched walk (walk_batch.c) reads back and resolves. */
#ifndef FPI_BATCH_H
#define FPI_BATCH_H

#include <stdbool.h>
#include <stddef.h>

#include "session.h"
#include "verify.h"

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

/* Keeps the walk just collected (ch, and the thread state copy in want)
 * in b for its read-back. */
int fpi_batch_defer(fp_session *s, fpi_walk_batch *b, const fpi_chain *ch, const fp_sample *sm, const fp_thread *th,
                    const fpi_verify_want *want);
void fpi_walk_batch_free(fpi_walk_batch *b);

#endif
