/* walk_record.h — what one walk of one thread records: the live parts of
 * its data-stack chunks copied, every frame it followed, and the Python
 * frames it found.  The chain stage (chain.c) writes it; the read-back
 * (verify.c, through fpi_walk_used), the interpreter's batch (batch.c) and
 * the frames' resolution (emit.c) read it. */
#ifndef FPI_WALK_RECORD_H
#define FPI_WALK_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fpi_limits.h"

/* A copied data-stack chunk: its live part, from the header up to the
 * thread's datastack_top (newest chunk) or the chunk's saved top (older
 * chunks).  Frames between the live end and the chunk's end are dead. */
typedef struct fpi_chunk_copy {
    uint64_t remote;          /* address of the chunk header */
    uint64_t size;            /* bytes copied (header included): the live part */
    uint64_t alloc;           /* the chunk's allocated size */
    size_t local;             /* offset in the session's stack buffer */
    uint64_t lowest;          /* the lowest frame the walk followed in it (remote + size: none yet) */
} fpi_chunk_copy;

/* Does addr lie in the chunk's allocation (live part or not)? */
static inline bool fpi_chunk_holds(const fpi_chunk_copy *c, uint64_t addr)
{
    return addr >= c->remote && addr - c->remote < c->alloc;
}

/* Every frame a walk followed, with the fields that decide the stack; the
 * read-back check (verify.c) requires them unchanged. */
typedef struct fpi_seen_frame {
    uint64_t addr;
    uint64_t previous, executable, instr;
    uint32_t tlbc_index;
    uint8_t owner;
    uint8_t is_entry;         /* 3.11: entered from C code */
    int16_t gen_state;        /* 3.11, a generator's frame outside the data stack: gi_frame_state; else -1 */
    int32_t chunk;            /* the walk's chunk copy holding it (fpi_walk_used.chunks), or
                                 FPI_OUTSIDE_CHUNKS: read on its own */
    int32_t stacktop;         /* its saved stack depth (fpi_frame_depth) */
} fpi_seen_frame;

#define FPI_OUTSIDE_CHUNKS (-1)
#define FPI_STACKTOP_RUNNING (-1)  /* 3.11-3.13 stacktop of a frame its evaluation is running (3.14+ debug
                                      builds: a NULL stack pointer) */
#define FPI_DEPTH_UNKNOWN INT32_MIN /* 3.14+: a stack pointer that does not point into the frame's slots */

/* A frame found on the chain, before its code object is resolved. */
typedef struct fpi_pending_frame {
    uint64_t addr, code, instr;
    int32_t tlbc_index;
    int32_t stacktop;         /* its saved stack depth (fpi_frame_depth) */
    bool top;                 /* the frame the thread names as its top */
    bool generator;
    bool called_directly;     /* the frame above it is a Python frame its own instruction pushed */
    bool popping;             /* a stopped thread's top frame at its data stack's top, taken for one it is
                                 popping (chain.c); emit.c accepts it only at RETURN_GENERATOR */
    bool slots_known;         /* 3.11-3.13: `slots` were in the walk's copy */
    uint64_t funcobj;         /* 3.11-3.13: its function object (0: not known) */
    uint64_t slots[2];        /* the two stack slots at its saved depth (a CALL's callable) */
} fpi_pending_frame;

/* One walk's record.  Its arrays keep their capacity from walk to walk
 * (the session holds the one every walk reuses); each walk starts it anew
 * (fpi_copy_chunks, fpi_collect_chain). */
typedef struct fpi_chain {
    uint8_t *stack_buf;          /* the chunks' copies, back to back (fpi_chunk_copy.local) */
    size_t stack_cap;
    fpi_chunk_copy *chunks;      /* newest first */
    size_t nchunks, chunks_cap;
    fpi_seen_frame *seen;        /* every frame followed, top first */
    size_t nseen, seen_cap;
    fpi_pending_frame *pending;  /* the Python frames among them, top first */
    size_t npending, pending_cap;
    uint8_t frame_buf[FPI_MAX_STRUCT_READ]; /* a frame outside the data stack, read on its own */
} fpi_chain;

/* Frees the record's arrays (chain.c). */
void fpi_chain_free(fpi_chain *c);

#endif
