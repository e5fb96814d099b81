/* readback_ahead.h — the last sample's read-backs, taken again with the
 * next sample's first read (readback_ahead.c). */
#ifndef FPI_READBACK_AHEAD_H
#define FPI_READBACK_AHEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frameproof/frameproof.h"
#include "read_set.h"

/* One read-back as a list of ranges: iov[first, first + count) of its
 * list, laid out as the read-back lays them out in its buffer (`span`
 * bytes). */
typedef struct fpi_rb_record {
    size_t first, count, span;
} fpi_rb_record;

/* A list of read-backs: their ranges, each range's buf holding its offset
 * in its read-back's buffer. */
typedef struct fpi_rb_list {
    fpi_read_set ranges;
    fpi_rb_record *rec;
    size_t nrec, rec_cap;
    size_t bytes;             /* the ranges' bytes in all */
    size_t spans;             /* the records' spans in all */
} fpi_rb_list;

typedef struct fpi_readback_ahead {
    fpi_rb_list seen;         /* this sample's read-backs so far, as planned */
    fpi_rb_list ahead;        /* the last sample's, read with this sample's first read */
    uint8_t *buf;             /* ... their bytes, each record's laid out as its read-back's, one after the other */
    size_t buf_cap;
    size_t next;              /* the record the next read-back must match */
    size_t next_byte;         /* where its buffer starts in buf */
    bool ready;               /* `ahead` was read, after the walks' copies, and has matched so far */
    bool recording;           /* no read-back of this sample has failed yet */
    uint64_t clean_calls;     /* reads.calls while the sample has read nothing but its first read and read-backs */
} fpi_readback_ahead;

void fpi_rb_ahead_free(fpi_readback_ahead *ra);

/* At the start of a sample (or of an attempt at one thread's walk,
 * retry_read.c): the last one's read-backs become the ones to read ahead;
 * when it recorded none, the ones read ahead for it stay. */
void fpi_rb_ahead_begin_sample(fpi_readback_ahead *ra);

/* Appends the ranges to read ahead to the first read's set, after
 * everything else it reads; returns how many (0: none, or no memory,
 * which only loses the read-ahead). */
size_t fpi_rb_ahead_append(fpi_readback_ahead *ra, fpi_read_set *first_read);

/* After the first read: whether it succeeded with `appended` ranges, and
 * the reader's call count then. */
void fpi_rb_ahead_after_first_read(fpi_readback_ahead *ra, size_t appended, bool ok, uint64_t calls);

/* Has the sample read nothing since its first read but its read-backs,
 * with the reader's call count at `calls`? */
bool fpi_rb_ahead_clean(const fpi_readback_ahead *ra, uint64_t calls);

/* A read-back planned as iov[0, n) (buf: offsets into its buffer of
 * `span` bytes), with the reader's call count at `calls`: when the ranges
 * read ahead for it are exactly these, laid out alike, and the sample is
 * clean, returns the buffer they were read into, laid out as planned (no
 * copy).  Otherwise returns NULL; the caller reads them and calls
 * fpi_rb_ahead_read_done with the call counts before and after. */
const uint8_t *fpi_rb_ahead_take(fpi_readback_ahead *ra, const fp_iov *iov, size_t n, size_t span, uint64_t calls);
void fpi_rb_ahead_read_done(fpi_readback_ahead *ra, uint64_t calls_before, uint64_t calls_after);

/* A read-back (iov[0, n), buf: pointers into `base`, or offsets when base
 * is NULL; a buffer of `span` bytes) that was taken or read whole:
 * recorded for the next sample when the sample was clean before it
 * (fpi_rb_ahead_clean). */
void fpi_rb_ahead_note(fpi_readback_ahead *ra, const fp_iov *iov, size_t n, size_t span, const uint8_t *base,
                       bool clean);

/* A read-back found a change: the rest of the sample retries from fresh
 * reads, which the next sample cannot replay. */
void fpi_rb_ahead_failed(fpi_readback_ahead *ra);

#endif
