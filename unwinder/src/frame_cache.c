/* frame_cache.c — what a walk may reuse from earlier samples without
 * trusting it.
 *
 * Two tables, both safe against a frame address being reused by another
 * call chain (the "ABA" case):
 *
 *  - Resolved frames: the function, position and call-site verdict of a
 *    frame, keyed by everything they derive from — the frame's address,
 *    its code object, its instruction pointer, whether it is a generator
 *    frame and whether a Python frame above it was called from it — and by
 *    the serial number of the code cache entry the code object was decoded
 *    into (the code cache proves that entry for this sample: by the
 *    interpreter's code-object generation, or by re-reading the header).
 *    A hit is the same computation on the same inputs; the frame's fields
 *    themselves are always read in this sample.  A key that matched on
 *    the address alone would hand a frame of one chain to another.
 *    Beside the table, each position in the sample (the n-th frame
 *    resolved) keeps a copy of the entry it met last, compared whole
 *    before the table is hashed: a steady stack meets the same keys in the
 *    same order, and the table's scattered lines cost more than the rest
 *    of a hit.
 *
 *  - Frames outside the data stack: their bytes as the last read-back of a
 *    verified walk saw them.  The walk may start from these bytes instead
 *    of reading the frame (a read saved per generator frame); the
 *    read-back of this walk then reads the frame and requires every field
 *    the walk used to be unchanged, exactly as for a frame it read itself.
 *    The top frame is never taken from here: its instruction is not
 *    compared (it runs on).
 *
 * Both tables are set-associative: a key may sit in any of the
 * FPI_FRAME_CACHE_WAYS entries of its set, newest first, so that a few
 * keys hashing alike (a sample's frames outside the data stack, one per
 * thread or more, collide in a direct-mapped table a third of the time at
 * 16 threads) do not evict each other on every sample; a full set drops
 * its oldest entry. */
#include <stdlib.h>
#include <string.h>

#include "frame_cache.h"
#include "grow.h"
#include "frameproof/frameproof.h"

#define RECENT_INITIAL 256u /* positions */

static size_t mix(uint64_t a)
{
    a ^= a >> 33;
    a *= 0xff51afd7ed558ccdULL;
    a ^= a >> 33;
    a *= 0xc4ceb9fe1a85ec53ULL;
    a ^= a >> 33;
    return (size_t)a;
}

/* The first entry of the key's set in a table of `slots` entries. */
static size_t set_of(size_t hash, size_t slots)
{
    return hash & (slots - 1u) & ~(size_t)(FPI_FRAME_CACHE_WAYS - 1u);
}

static size_t key_set(const fpi_frame_key *k)
{
    return set_of(mix(k->addr ^ mix(k->instr) ^ (k->code << 1)), FPI_FRAME_CACHE_SLOTS);
}

static bool same_key(const fpi_frame_key *a, const fpi_frame_key *b)
{
    return a->addr == b->addr && a->code == b->code && a->instr == b->instr && a->code_serial == b->code_serial &&
           a->generator == b->generator && a->called_directly == b->called_directly;
}

void fpi_frame_cache_init(fpi_frame_cache *fc)
{
    memset(fc, 0, sizeof *fc);
}

void fpi_frame_cache_free(fpi_frame_cache *fc)
{
    free(fc->resolved);
    free(fc->recent);
    free(fc->spec);
    fpi_frame_cache_init(fc);
}

/* Keeps *r as the last resolution met at position `at` (best effort: past
 * FPI_FRAME_CACHE_RECENT, or without memory, only the table keeps it). */
static void remember_at(fpi_frame_cache *fc, size_t at, const fpi_resolved_frame *r)
{
    if (at >= FPI_FRAME_CACHE_RECENT)
        return;
    if (at >= fc->recent_cap) {
        size_t old = fc->recent_cap;
        fpi_resolved_frame *nr = fpi_grow(fc->recent, &fc->recent_cap, at + 1, sizeof *nr, RECENT_INITIAL);
        if (!nr)
            return;
        fc->recent = nr;
        memset(nr + old, 0, (fc->recent_cap - old) * sizeof *nr);
    }
    fc->recent[at] = *r;
}

const fpi_resolved_frame *fpi_frame_cache_find(fpi_frame_cache *fc, size_t at, const fpi_frame_key *k)
{
    if (at < fc->recent_cap && fc->recent[at].used && same_key(&fc->recent[at].key, k))
        return &fc->recent[at];
    if (!fc->resolved)
        return NULL;
    const fpi_resolved_frame *set = &fc->resolved[key_set(k)];
    for (size_t w = 0; w < FPI_FRAME_CACHE_WAYS; w++)
        if (set[w].used && same_key(&set[w].key, k)) {
            remember_at(fc, at, &set[w]);
            return &set[w];
        }
    return NULL;
}

int fpi_frame_cache_store(fpi_frame_cache *fc, size_t at, const fpi_resolved_frame *r)
{
    const fpi_frame_key *k = &r->key;
    if (!fc->resolved && !(fc->resolved = calloc(FPI_FRAME_CACHE_SLOTS, sizeof *fc->resolved)))
        return FP_E_NOMEM;
    fpi_resolved_frame *set = &fc->resolved[key_set(k)];
    size_t w = 0;
    while (w + 1 < FPI_FRAME_CACHE_WAYS && set[w].used && !same_key(&set[w].key, k))
        w++;
    memmove(set + 1, set, w * sizeof *set); /* newest first; the way replaced (or the oldest) drops out */
    set[0] = *r;
    set[0].used = true;
    remember_at(fc, at, &set[0]);
    return FP_OK;
}

const uint8_t *fpi_frame_cache_spec(const fpi_frame_cache *fc, uint64_t addr, size_t len)
{
    if (!fc->spec || len > FPI_SPEC_FRAME_BYTES || addr == 0)
        return NULL;
    const fpi_spec_frame *set = &fc->spec[set_of(mix(addr), FPI_SPEC_FRAME_SLOTS)];
    for (size_t w = 0; w < FPI_FRAME_CACHE_WAYS; w++)
        if (set[w].addr == addr)
            return set[w].bytes;
    return NULL;
}

void fpi_frame_cache_note(fpi_frame_cache *fc, uint64_t addr, const uint8_t *bytes, size_t len)
{
    if (len > FPI_SPEC_FRAME_BYTES || addr == 0)
        return;
    if (!fc->spec && !(fc->spec = calloc(FPI_SPEC_FRAME_SLOTS, sizeof *fc->spec)))
        return; /* best effort: the walk reads such frames itself */
    fpi_spec_frame *set = &fc->spec[set_of(mix(addr), FPI_SPEC_FRAME_SLOTS)];
    size_t w = 0;
    while (w + 1 < FPI_FRAME_CACHE_WAYS && set[w].addr && set[w].addr != addr)
        w++;
    memmove(set + 1, set, w * sizeof *set); /* newest first; the way replaced (or the oldest) drops out */
    set[0].addr = addr;
    memcpy(set[0].bytes, bytes, len);
}
