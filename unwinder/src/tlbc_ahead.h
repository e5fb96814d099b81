/* tlbc_ahead.h — where the last sample found the thread-local bytecode of
 * its frames, read again with the next sample's first read (tlbc_ahead.c). */
#ifndef FPI_TLBC_AHEAD_H
#define FPI_TLBC_AHEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frameproof/frameproof.h"
#include "read_set.h"

#define FPI_TLBC_AHEAD_SLOTS 32u /* (code object, index) pairs remembered */

/* One resolution: code object `code`'s thread-local copy `idx`, found
 * through its co_tlbc array `arr`; and the words read again with a
 * sample's first read at the same places. */
typedef struct fpi_tlbc_memo {
    uint64_t code, arr;
    int32_t idx;
    uint64_t used_in;          /* the sample that last resolved it */
    uint64_t arr_now, size_now, entry_now; /* read with the first read of sample read_in */
    uint64_t read_in;
} fpi_tlbc_memo;

typedef struct fpi_tlbc_ahead {
    fpi_tlbc_memo memo[FPI_TLBC_AHEAD_SLOTS];
    size_t n, next_victim;
    uint64_t read_calls;       /* the reader's call count after the first read that read them */
} fpi_tlbc_ahead;

/* Appends to the first read's set the words of the resolutions sample
 * `sample_no - 1` made: each code object's co_tlbc (at its offset
 * `co_tlbc`), the array's size and the entry, in that order; returns how
 * many ranges (0 when none or out of memory). */
size_t fpi_tlbc_ahead_append(fpi_tlbc_ahead *t, uint64_t sample_no, int32_t co_tlbc, fpi_read_set *first_read);
/* The first read of sample `sample_no` succeeded with them; the reader's
 * call count after it. */
void fpi_tlbc_ahead_read(fpi_tlbc_ahead *t, uint64_t sample_no, uint64_t calls);
/* The copy `idx` of `code` as this sample's first read found it: true
 * with *entry when nothing was read since that read (`calls`: the reader's
 * call count now), so that the frame was copied and read back before
 * these words, and the code object's array was still the one remembered
 * (its size and entry then read from it, after it), holding idx. */
bool fpi_tlbc_ahead_take(fpi_tlbc_ahead *t, uint64_t sample_no, uint64_t calls, uint64_t code, int32_t idx,
                         uint64_t *entry);
/* A resolution made from fresh reads, to read ahead next time. */
void fpi_tlbc_ahead_note(fpi_tlbc_ahead *t, uint64_t sample_no, uint64_t code, int32_t idx, uint64_t arr);

#endif
