/* frame_cache.h — the frame cache (see frame_cache.c). */
#ifndef FPI_FRAME_CACHE_H
#define FPI_FRAME_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "call_site_kind.h"
#include "frameproof/frameproof.h"
#include "linetable.h"

#define FPI_FRAME_CACHE_SLOTS 4096u  /* resolved frames kept (a power of two) */
#define FPI_SPEC_FRAME_SLOTS 1024u   /* frames outside the data stack kept (a power of two) */
#define FPI_FRAME_CACHE_WAYS 4u      /* entries of either table one key may occupy (a power of two) */
#define FPI_SPEC_FRAME_BYTES 128u    /* bytes of one such frame kept; larger frames are not kept */
#define FPI_FRAME_CACHE_RECENT 65536u /* positions in a sample whose last resolution is also kept by position */

/* What decides a resolved frame: the frame's address and the fields read
 * from it, and the code cache entry (by serial number, never by pointer)
 * its code object was decoded into. */
typedef struct fpi_frame_key {
    uint64_t addr, code, instr, code_serial;
    bool generator, called_directly;
} fpi_frame_key;

typedef struct fpi_resolved_frame {
    fpi_frame_key key;
    bool used;
    bool visible;            /* at or past the code's first traceable instruction */
    bool at_call;            /* its instruction can be suspended in a call (fpi_call_site_ok) */
    fpi_resumer resumer;     /* what it is suspended in under a generator's frame (fpi_call_site_resumer) */
    enum fp_tristate delegating; /* a generator's frame: waits in a `yield from` or `await`
                                    (fpi_call_site_delegating); else FP_UNKNOWN */
    bool passes_callable;    /* ... in a CALL that keeps its callable (fpi_call_site_passes_callable) */
    bool waits;              /* a generator's frame: where it waits to be resumed (fpi_call_site_waits) */
    int32_t unit;            /* instruction offset in code units */
    fpi_position pos;
} fpi_resolved_frame;

/* The proven bytes of a frame that lives outside the data stack
 * (generator, coroutine or entry frame), as the read-back saw them. */
typedef struct fpi_spec_frame {
    uint64_t addr;
    uint8_t bytes[FPI_SPEC_FRAME_BYTES];
} fpi_spec_frame;

typedef struct fpi_frame_cache {
    fpi_resolved_frame *resolved;  /* FPI_FRAME_CACHE_SLOTS, NULL until first used */
    fpi_resolved_frame *recent;    /* by a frame's position in the sample: the last resolution met there */
    size_t recent_cap;
    fpi_spec_frame *spec;          /* FPI_SPEC_FRAME_SLOTS, NULL until first used */
    size_t resolved_in_sample;     /* frames resolved so far in this sample: the next one's position */
    uint64_t hits, misses, spec_hits;
} fpi_frame_cache;

void fpi_frame_cache_init(fpi_frame_cache *fc);
void fpi_frame_cache_free(fpi_frame_cache *fc);

/* At the start of a sample: its first frame resolved is at position 0. */
static inline void fpi_frame_cache_begin_sample(fpi_frame_cache *fc)
{
    fc->resolved_in_sample = 0;
}

/* The position of the frame being resolved among the frames the sample
 * resolves (in the order it resolves them; counted here). */
static inline size_t fpi_frame_cache_next_position(fpi_frame_cache *fc)
{
    return fc->resolved_in_sample++;
}

/* The resolved frame with exactly this key, or NULL.  `at` is the frame's
 * position among the frames the sample resolves: the entry last met there
 * is compared first (a steady stack meets the same keys in the same order,
 * and a key compared whole hands out nothing a hash lookup would not). */
const fpi_resolved_frame *fpi_frame_cache_find(fpi_frame_cache *fc, size_t at, const fpi_frame_key *k);

/* Remembers a frame resolved (and checked) in a verified walk: *r, its key
 * and what was derived from it (`used` is set here), at position `at`
 * too.  FP_OK or FP_E_NOMEM (the cache is then simply not used). */
int fpi_frame_cache_store(fpi_frame_cache *fc, size_t at, const fpi_resolved_frame *r);

/* The bytes the last read-back saw at addr (len bytes), or NULL. */
const uint8_t *fpi_frame_cache_spec(const fpi_frame_cache *fc, uint64_t addr, size_t len);

/* Remembers the read-back bytes of a frame outside the data stack. */
void fpi_frame_cache_note(fpi_frame_cache *fc, uint64_t addr, const uint8_t *bytes, size_t len);

#endif
