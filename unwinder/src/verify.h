/* verify.h — the read-back check of a thread's walk (see verify.c). */
#ifndef FPI_VERIFY_H
#define FPI_VERIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "session.h"

/* What the walk of one thread used, to be found unchanged. */
typedef struct fpi_verify_want {
    uint64_t native_id;        /* for messages */
    uint64_t link_addr;        /* the pointer that led to the thread state */
    uint64_t ts;               /* the thread state (and the link's expected value) */
    const uint8_t *tsbuf;      /* its copy (s->ts_read_len bytes) */
    uint64_t cframe_addr;      /* 3.11/3.12: the _PyCFrame the top came from (0: none) */
    uint64_t top;              /* the top frame the walk started from */
    bool stopped;              /* the thread was stopped for the walk (fpi_thread_walk.stopped, or a blocking
                                  sample): one instant of it, whose top frame may be one it is popping, at
                                  its data stack's top (chain.c) */
    uint64_t generation_addr;  /* 3.14+: the interpreter's code_object_generation (0: none) */
    uint64_t generation;       /* its value when the code cache was last trusted */
    uint64_t generation_seen;  /* out: the value read back (= generation unless it changed) */
    bool last;                 /* the last read-back of the walk: keep what it proved (frame cache) */
    bool code_strict;          /* with last: a cached code object that changed tears the walk (fpi_verify_after_frames) */
    bool link_moved;           /* out: set when a read-back found the link naming another thread state */
    bool alone;                /* fpi_thread_walk.alone: a read-back also recorded for, and taken from, a
                                  retry's one read (s->rb_retry) */
    /* out, set by the last read-back: the top frame's instruction pointer
     * as that read-back found it, in a read of its own before everything
     * else it reads but the word naming the thread's top frame (the walk's
     * own copy's is ignored there: the top frame runs on).  This one is
     * what the walk reports: it was read just after that word named the
     * frame as the top again, so the frame was linked, set up whole, then;
     * and before this read-back found the chain and the thread state
     * unchanged.  The copy's may be a slot's previous frame's, under a
     * frame being set up in it; one read after the chain, with the frame's
     * other fields, may be a newer frame's set up in the slot since; one
     * read while the frame was popped, a frame's whose callers have been
     * pushed again since: stacks that never were. */
    uint64_t top_instr;
} fpi_verify_want;

/* How many times a walk is read back before its frames are resolved:
 * FPI_VERIFY_READS_CHECKED where the callee-function check applies (a walk
 * with a link it did not compare is then read back once more after its
 * frames, up to FPI_VERIFY_READS in all), FPI_VERIFY_READS elsewhere. */
unsigned fpi_verify_reads_first(const fpi_layout *l);

/* What one walk used besides its want: its chunk copies and every frame it
 * followed. */
typedef struct fpi_walk_used {
    const fpi_chunk_copy *chunks;
    size_t nchunks;
    const fpi_seen_frame *seen;
    size_t nseen;
} fpi_walk_used;

/* Reads back everything count walks used (for each: the link, the thread
 * state, its chunks, the frames it followed, the generation) in one batched
 * read: FP_OK when all of it is unchanged; FP_E_INCOMPLETE ("torn: ...")
 * when anything changed, *failed then the first walk found changed, or
 * SIZE_MAX when the read-back itself could not be read;
 * FP_E_PROCESS_GONE, FP_E_PERMISSION or FP_E_NOMEM.  Every error leaves a
 * message. */
int fpi_verify_batch(fp_session *s, fpi_verify_want *ws, const fpi_walk_used *us, size_t count, size_t *failed);

/* After the walks' frames: the walks ws/us read back once more; FP_OK when
 * they still hold.  code_strict (FPI_OWED_CODE): a cached code object that
 * changed tears them too. */
int fpi_verify_after_frames(fp_session *s, fpi_verify_want *ws, const fpi_walk_used *us, size_t count,
                            bool code_strict);

#endif
