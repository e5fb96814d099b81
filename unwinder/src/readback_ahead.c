/* readback_ahead.c — the last sample's read-backs, taken again with the
 * next sample's first read.
 *
 * A walk is proven by reading back everything it used, once or twice
 * (verify.c): the copy and its read-backs were two or three reads, and the thread had
 * all the time between them (the walk, the code lookups, two system
 * calls) to change, which tore most samples of a target whose stack
 * changes every microsecond or two.  In steady state a sample's
 * read-backs cover the same ranges as the last sample's.  So the first
 * read of a sample, after everything the walks copy, reads the last
 * sample's read-backs again, in their order, into buffers laid out as the
 * read-backs lay out theirs; a read-back whose ranges are exactly those
 * and that nothing was read before (but the first read and read-backs
 * taken from it or read as usual) is checked on those bytes in place
 * instead of reading.  A process_vm_readv reads its ranges one after the other, so
 * these bytes were read after the copy and in the read-backs' order: the
 * checks of verify.c hold as they are, and the window between copy and
 * read-backs shrinks to one system call.  A sample that reads anything
 * else (a thread not read ahead, a code object, a retry) reads its
 * read-backs as before.  The whole of a sample's steady state is one read.
 *
 * What a sample records is what the next may take: the read-backs made
 * while it had read nothing else, up to the first that found a change (a
 * sample that recorded none passes on the ones it was given). */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "readback_ahead.h"
#include "session.h"

#define RB_REC_INITIAL 8u
#define RB_BUF_INITIAL 65536u
#define NO_FIRST_READ UINT64_MAX

static void list_free(fpi_rb_list *l)
{
    fpi_read_set_free(&l->ranges);
    free(l->rec);
    memset(l, 0, sizeof *l);
}

void fpi_rb_ahead_free(fpi_readback_ahead *ra)
{
    list_free(&ra->seen);
    list_free(&ra->ahead);
    free(ra->buf);
    memset(ra, 0, sizeof *ra);
}

/* Appends the planned read-back iov[0, n) (buf: pointers into `base`, or
 * offsets when base is NULL) to the sample's record; false when it would
 * pass the limit or there is no memory (the sample then records no more). */
static bool record(fpi_readback_ahead *ra, const fp_iov *iov, size_t n, size_t span, const uint8_t *base)
{
    fpi_rb_list *l = &ra->seen;
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++)
        bytes += iov[i].len;
    if (l->bytes + bytes > FPI_MAX_READ_AHEAD_BYTES || l->spans + span > FPI_MAX_READ_AHEAD_BYTES) {
        ra->recording = false; /* too much to read ahead: the next sample reads its own */
        return false;
    }
    bool room = fpi_read_set_reserve(&l->ranges, n);
    fpi_rb_record *nr = room ? fpi_grow(l->rec, &l->rec_cap, l->nrec + 1, sizeof *nr, RB_REC_INITIAL) : NULL;
    if (!nr) {
        ra->recording = false;
        return false;
    }
    l->rec = nr;
    for (size_t i = 0; i < n; i++) {
        size_t off = base ? (size_t)((const uint8_t *)iov[i].buf - base) : (size_t)(uintptr_t)iov[i].buf;
        l->ranges.iov[l->ranges.n + i] = (fp_iov){iov[i].addr, (void *)(uintptr_t)off, iov[i].len};
    }
    l->rec[l->nrec++] = (fpi_rb_record){l->ranges.n, n, span};
    l->ranges.n += n;
    l->bytes += bytes;
    l->spans += span;
    return true;
}

void fpi_rb_ahead_begin_sample(fpi_readback_ahead *ra)
{
    /* A sample that recorded no read-back (its first one found a change, or
     * it failed before) leaves the ones read ahead for it to the next, and
     * one that recorded fewer passes on the rest: else one torn sample left
     * the next without them, which then tore far more often, and so on
     * (frameproof bench, 3.11: 70 % of first attempts without a read-back
     * read ahead, most of them torn). */
    if (ra->seen.nrec > 0) {
        /* A walk whose first read-back found a change never planned its
         * second, which its retry then reads as before. */
        for (size_t r = ra->seen.nrec; r < ra->ahead.nrec; r++) {
            const fpi_rb_record *rec = &ra->ahead.rec[r];
            if (!record(ra, ra->ahead.ranges.iov + rec->first, rec->count, rec->span, NULL))
                break;
        }
        fpi_rb_list t = ra->ahead;
        ra->ahead = ra->seen;
        ra->seen = t;
    }
    fpi_read_set_clear(&ra->seen.ranges);
    ra->seen.nrec = ra->seen.bytes = ra->seen.spans = 0;
    ra->next = ra->next_byte = 0;
    ra->ready = false;
    ra->recording = true;
    ra->clean_calls = NO_FIRST_READ;
}

size_t fpi_rb_ahead_append(fpi_readback_ahead *ra, fpi_read_set *first_read)
{
    const fpi_rb_list *a = &ra->ahead;
    const fpi_read_set *from = &a->ranges;
    if (from->n == 0)
        return 0;
    uint8_t *nb = fpi_grow(ra->buf, &ra->buf_cap, a->spans, 1, RB_BUF_INITIAL);
    if (!nb)
        return 0;
    ra->buf = nb;
    if (!fpi_read_set_reserve(first_read, from->n))
        return 0;
    fp_iov *to = first_read->iov + first_read->n;
    size_t base = 0;
    for (size_t r = 0; r < a->nrec; r++) {
        const fpi_rb_record *rec = &a->rec[r];
        for (size_t i = rec->first; i < rec->first + rec->count; i++)
            to[i] = (fp_iov){from->iov[i].addr, nb + base + (size_t)(uintptr_t)from->iov[i].buf, from->iov[i].len};
        base += rec->span;
    }
    first_read->n += from->n;
    return from->n;
}

void fpi_rb_ahead_after_first_read(fpi_readback_ahead *ra, size_t appended, bool ok, uint64_t calls)
{
    ra->ready = ok && appended > 0;
    ra->clean_calls = calls;
}

/* Were exactly the ranges iov[0, n) read ahead as the next record, laid
 * out alike? */
static bool matches(const fpi_readback_ahead *ra, const fp_iov *iov, size_t n, size_t span)
{
    if (ra->next >= ra->ahead.nrec)
        return false;
    const fpi_rb_record *r = &ra->ahead.rec[ra->next];
    if (r->count != n || r->span != span)
        return false;
    const fp_iov *a = ra->ahead.ranges.iov + r->first;
    for (size_t i = 0; i < n; i++)
        if (a[i].addr != iov[i].addr || a[i].len != iov[i].len || a[i].buf != iov[i].buf)
            return false;
    return true;
}

bool fpi_rb_ahead_clean(const fpi_readback_ahead *ra, uint64_t calls)
{
    return calls == ra->clean_calls;
}

const uint8_t *fpi_rb_ahead_take(fpi_readback_ahead *ra, const fp_iov *iov, size_t n, size_t span, uint64_t calls)
{
    if (!fpi_rb_ahead_clean(ra, calls) || !ra->ready || !matches(ra, iov, n, span)) {
        ra->ready = false; /* read from here on: what was read ahead is older than that read */
        return NULL;
    }
    const uint8_t *got = ra->buf + ra->next_byte;
    ra->next_byte += span;
    ra->next++;
    return got;
}

void fpi_rb_ahead_read_done(fpi_readback_ahead *ra, uint64_t calls_before, uint64_t calls_after)
{
    if (calls_before == ra->clean_calls)
        ra->clean_calls = calls_after; /* a read-back of its own: the sample is still clean */
}

void fpi_rb_ahead_note(fpi_readback_ahead *ra, const fp_iov *iov, size_t n, size_t span, const uint8_t *base,
                       bool clean)
{
    if (clean && ra->recording)
        (void)record(ra, iov, n, span, base);
}

void fpi_rb_ahead_failed(fpi_readback_ahead *ra)
{
    ra->recording = false;
    ra->ready = false;
}
