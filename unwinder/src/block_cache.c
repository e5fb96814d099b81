/* block_cache.c — reads of a stopped target from whole blocks read once
 * (block_cache.h). */
#include "block_cache.h"

#include <stdlib.h>
#include <string.h>

#include "fpi_limits.h"

#define BLOCK ((uint64_t)FPI_BLOCK_CACHE_BLOCK)

int fpi_block_cache_begin(fpi_block_cache *c)
{
    if (!c->data) {
        c->tag = calloc(FPI_BLOCK_CACHE_SLOTS, sizeof *c->tag);
        c->gen = calloc(FPI_BLOCK_CACHE_SLOTS, sizeof *c->gen);
        c->ok = calloc(FPI_BLOCK_CACHE_SLOTS, 1);
        c->data = malloc((size_t)FPI_BLOCK_CACHE_SLOTS * FPI_BLOCK_CACHE_BLOCK);
        if (!c->tag || !c->gen || !c->ok || !c->data) {
            fpi_block_cache_free(c);
            return FP_E_NOMEM;
        }
    }
    if (++c->cur == 0) { /* wrapped: no slot may look filled in this stop */
        memset(c->gen, 0, FPI_BLOCK_CACHE_SLOTS * sizeof *c->gen);
        c->cur = 1;
    }
    c->on = true;
    return FP_OK;
}

void fpi_block_cache_end(fpi_block_cache *c)
{
    c->on = false;
}

void fpi_block_cache_free(fpi_block_cache *c)
{
    free(c->tag);
    free(c->gen);
    free(c->ok);
    free(c->data);
    memset(c, 0, sizeof *c);
}

static int direct(const fp_reader *rd, uint64_t addr, void *buf, size_t len, fp_read_stats *stats)
{
    stats->calls++;
    stats->bytes += len;
    return fp_reader_read(rd, addr, buf, len);
}

int fpi_block_cache_read(fpi_block_cache *c, const fp_reader *rd, uint64_t addr, void *buf, size_t len,
                         fp_read_stats *stats)
{
    if (len > BLOCK || addr > UINT64_MAX - len)
        return direct(rd, addr, buf, len, stats);
    uint8_t *out = buf;
    while (len) {
        uint64_t block = addr & ~(BLOCK - 1), off = addr - block;
        size_t piece = (size_t)(BLOCK - off) < len ? (size_t)(BLOCK - off) : len;
        /* Fibonacci hashing of the block number: neighbouring blocks land
         * in different slots, and so do blocks a power of two apart. */
        size_t slot = (size_t)(((block / BLOCK) * 0x9E3779B97F4A7C15ull) >> (64 - FPI_BLOCK_CACHE_SLOT_BITS));
        uint8_t *data = c->data + slot * (size_t)BLOCK;
        if (c->gen[slot] != c->cur || c->tag[slot] != block) {
            int rc = direct(rd, block, data, (size_t)BLOCK, stats);
            if (rc == FP_E_PROCESS_GONE || rc == FP_E_PERMISSION)
                return rc;
            c->tag[slot] = block;
            c->gen[slot] = c->cur;
            c->ok[slot] = rc == FP_OK;
        }
        if (c->ok[slot])
            memcpy(out, data + off, piece);
        else {
            int rc = direct(rd, addr, out, piece, stats);
            if (rc)
                return rc;
        }
        out += piece;
        addr += piece;
        len -= piece;
    }
    return FP_OK;
}
