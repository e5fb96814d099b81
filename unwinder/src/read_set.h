/* read_set.h — a set of ranges read together, in one batched read
 * (read_set.c).  Every batched read a sample makes is one: its first read
 * (read_ahead.c), a walk's read-back (verify.c), a torn walk's retry
 * (retry_read.c), the code objects read ahead (code_cache.c), and the
 * read-backs kept to be read again (readback_ahead.c).  What is read where
 * stays with each of them; the set holds the ranges. */
#ifndef FPI_READ_SET_H
#define FPI_READ_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frameproof/frameproof.h"

/* The ranges, in the order they are read.  A range's buf is where its
 * bytes land, or, in a set planned before its buffer has its final size,
 * its offset in that buffer (fpi_read_set_add_at, fpi_read_set_place). */
typedef struct fpi_read_set {
    fp_iov *iov;
    size_t n;   /* ranges in the set */
    size_t cap; /* ranges allocated */
} fpi_read_set;

void fpi_read_set_free(fpi_read_set *rs);

/* Empties the set; its memory is kept for the next. */
static inline void fpi_read_set_clear(fpi_read_set *rs)
{
    rs->n = 0;
}

/* Room for `more` ranges after the set's n, so that iov[n, n + more) may
 * be written; false when memory runs out (the set is unchanged). */
bool fpi_read_set_reserve(fpi_read_set *rs, size_t more);

/* Appends the range [addr, addr + len) read into buf; false when memory
 * runs out (the set is unchanged). */
bool fpi_read_set_add(fpi_read_set *rs, uint64_t addr, void *buf, size_t len);

/* Appends the range [addr, addr + len) to land at offset `off` of a buffer
 * placed later; false when memory runs out (the set is unchanged). */
bool fpi_read_set_add_at(fpi_read_set *rs, uint64_t addr, size_t off, size_t len);

/* Turns the offsets of ranges [first, n) into pointers into base. */
void fpi_read_set_place(fpi_read_set *rs, size_t first, uint8_t *base);

#endif
