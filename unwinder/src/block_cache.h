/* block_cache.h — reads of a stopped target served from whole aligned
 * blocks, each read once (block_cache.c).  A stopped target's memory cannot
 * change, so a block read once holds what every later read of it would
 * give, until the target runs again.  The caller that stopped the target
 * turns the cache on (fpi_block_cache_begin) and off before resuming it
 * (fpi_block_cache_end); in between, fpi_read serves reads from it.  Many
 * small objects close together (asyncio's tasks, their names and
 * coroutines) then cost one read per block instead of one per object. */
#ifndef FPI_BLOCK_CACHE_H
#define FPI_BLOCK_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frameproof/frameproof.h"
#include "frameproof/reader.h"

typedef struct fpi_block_cache {
    uint64_t *tag;     /* per slot: the address of the block it holds */
    uint32_t *gen;     /* per slot: the generation it was filled in (0: never) */
    uint8_t *ok;       /* per slot: 1 when the block was read whole, 0 when it could not be */
    uint8_t *data;     /* FPI_BLOCK_CACHE_SLOTS blocks of FPI_BLOCK_CACHE_BLOCK bytes */
    uint32_t cur;      /* the generation of the current stop */
    bool on;
} fpi_block_cache;

/* Turns c on for one stop of the target, every block it held forgotten.
 * FP_OK or FP_E_NOMEM (the cache stays off). */
int fpi_block_cache_begin(fpi_block_cache *c);
/* Turns c off: from now on the target may change. */
void fpi_block_cache_end(fpi_block_cache *c);
void fpi_block_cache_free(fpi_block_cache *c);

/* [addr, addr+len) into buf through c (on) from rd, counting the reader's
 * calls and bytes in *stats.  A block that cannot be read whole (the edge
 * of a memory image's region) is remembered as such, and the part of it
 * asked for is read directly.  A range larger than a block is read
 * directly.  FP_OK or the reader's negative FP_E_* code. */
int fpi_block_cache_read(fpi_block_cache *c, const fp_reader *rd, uint64_t addr, void *buf, size_t len,
                         fp_read_stats *stats);

#endif
