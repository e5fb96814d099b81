/* linetable.c — decoder for the CPython 3.11+ location table (co_linetable).
 *
 * Owns the entry iterator and the unit -> position lookup declared in
 * linetable.h.  Every byte read is bounds-checked, varints are bounded, all
 * arithmetic is done in 64 bits and checked against the int32 range, and the
 * work is linear in the table size (no recursion, no allocation).
 *
 * Agreement with code.co_positions(): CPython keeps positions in C ints and
 * shows exactly the value -1 as None.  Because FP_POS_NONE is also -1, a
 * value that *computes* to -1 (a long-form column stored as 0, an end line
 * of line + n landing on -1, a running line that walks down to -1) comes out
 * as FP_POS_NONE here too, with no special case; any other value, negative
 * or not, is reported as computed.  Where CPython would silently wrap or
 * read past the table we report FP_E_CORRUPT instead.
 */
#include "linetable.h"

#include "frameproof/frameproof.h"

#include <limits.h>

/* Entry header byte: bit 7 marks the first byte of an entry. */
#define LT_ENTRY_START_BIT 0x80u
#define LT_CODE_SHIFT 3u
#define LT_CODE_MASK 0x0fu
#define LT_LENGTH_MASK 0x07u

/* Entry kinds (the 4-bit code). */
#define LT_CODE_SHORT_LAST 9     /* 0..9: short forms */
#define LT_CODE_ONE_LINE0 10     /* 10..12: one-line forms, line delta 0..2 */
#define LT_CODE_ONE_LINE2 12
#define LT_CODE_NO_COLUMNS 13
#define LT_CODE_LONG 14
#define LT_CODE_NO_LOCATION 15

/* Short form: column = code * 8 + high 3 bits of the second byte; the low
 * 4 bits are the width. */
#define LT_SHORT_COL_MULT 8
#define LT_SHORT_COL_SHIFT 4u
#define LT_SHORT_COL_MASK 0x07u
#define LT_SHORT_WIDTH_MASK 0x0fu

/* Varints: 6-bit chunks, least significant first, 0x40 = more follows. */
#define LT_VARINT_CHUNK_BITS 6u
#define LT_VARINT_CHUNK_MASK 0x3fu
#define LT_VARINT_MORE 0x40u
/* Values must fit 32 bits: 6 chunks carry 36 bits, checked below. */
#define LT_VARINT_MAX_CHUNKS 6u
#define LT_VARINT_MAX_VALUE UINT32_MAX

typedef struct lt_cursor {
    const uint8_t *table;
    size_t len;
    size_t pos;
} lt_cursor;

/* Reads one byte that continues the current entry (bit 7 must be clear). */
static int lt_read_cont(lt_cursor *c, uint32_t *out)
{
    if (c->pos >= c->len) {
        return FP_E_CORRUPT;
    }
    uint8_t b = c->table[c->pos];
    if (b & LT_ENTRY_START_BIT) {
        return FP_E_CORRUPT;
    }
    c->pos++;
    *out = b;
    return 0;
}

static int lt_read_varint(lt_cursor *c, uint32_t *out)
{
    uint64_t val = 0;
    unsigned shift = 0;
    for (unsigned i = 0; i < LT_VARINT_MAX_CHUNKS; i++) {
        uint32_t b;
        int rc = lt_read_cont(c, &b);
        if (rc < 0) {
            return rc;
        }
        val |= (uint64_t)(b & LT_VARINT_CHUNK_MASK) << shift;
        if (val > LT_VARINT_MAX_VALUE) {
            return FP_E_CORRUPT;
        }
        if (!(b & LT_VARINT_MORE)) {
            *out = (uint32_t)val;
            return 0;
        }
        shift += LT_VARINT_CHUNK_BITS;
    }
    return FP_E_CORRUPT; /* more chunks than a 32-bit value can need */
}

static int lt_read_svarint(lt_cursor *c, int64_t *out)
{
    uint32_t u;
    int rc = lt_read_varint(c, &u);
    if (rc < 0) {
        return rc;
    }
    int64_t mag = (int64_t)(u >> 1);
    *out = (u & 1u) ? -mag : mag;
    return 0;
}

static int lt_fits_i32(int64_t v)
{
    return v >= INT32_MIN && v <= INT32_MAX;
}

void fpi_linetable_iter_init(fpi_linetable_iter *it, const uint8_t *table,
                            size_t len, int32_t firstlineno)
{
    it->table = table;
    it->len = len;
    it->pos = 0;
    it->line = firstlineno;
    it->unit = 0;
}

/* Decodes the entry at it->pos.  Nothing in *it changes unless the whole
 * entry is valid, so a corrupt table keeps returning FP_E_CORRUPT. */
int fpi_linetable_next(fpi_linetable_iter *it, fpi_linetable_entry *e)
{
    if (it->len > FPI_LINETABLE_MAX_BYTES ||
        (it->table == NULL && it->len != 0)) {
        return FP_E_CORRUPT;
    }
    if (it->pos >= it->len) {
        return 0;
    }
    lt_cursor c = {it->table, it->len, it->pos};
    uint8_t first = c.table[c.pos++];
    if (!(first & LT_ENTRY_START_BIT)) {
        return FP_E_CORRUPT;
    }
    unsigned code = (first >> LT_CODE_SHIFT) & LT_CODE_MASK;
    uint32_t length = (uint32_t)(first & LT_LENGTH_MASK) + 1u;
    if (it->unit > UINT32_MAX - length) {
        return FP_E_CORRUPT;
    }

    int64_t line = it->line; /* running line after this entry */
    int64_t pline, pend_line, pcol, pend_col;
    uint32_t a, b;
    int64_t delta;
    int rc;

    if (code <= LT_CODE_SHORT_LAST) {
        if ((rc = lt_read_cont(&c, &a)) < 0) {
            return rc;
        }
        pline = pend_line = line;
        pcol = (int64_t)code * LT_SHORT_COL_MULT +
               ((a >> LT_SHORT_COL_SHIFT) & LT_SHORT_COL_MASK);
        pend_col = pcol + (a & LT_SHORT_WIDTH_MASK);
    } else if (code <= LT_CODE_ONE_LINE2) {
        if ((rc = lt_read_cont(&c, &a)) < 0 ||
            (rc = lt_read_cont(&c, &b)) < 0) {
            return rc;
        }
        line += (int64_t)code - LT_CODE_ONE_LINE0;
        pline = pend_line = line;
        pcol = a;
        pend_col = b;
    } else if (code == LT_CODE_NO_COLUMNS) {
        if ((rc = lt_read_svarint(&c, &delta)) < 0) {
            return rc;
        }
        line += delta;
        pline = pend_line = line;
        pcol = pend_col = FP_POS_NONE;
    } else if (code == LT_CODE_LONG) {
        uint32_t span, col1, end_col1;
        if ((rc = lt_read_svarint(&c, &delta)) < 0 ||
            (rc = lt_read_varint(&c, &span)) < 0 ||
            (rc = lt_read_varint(&c, &col1)) < 0 ||
            (rc = lt_read_varint(&c, &end_col1)) < 0) {
            return rc;
        }
        line += delta;
        pline = line;
        pend_line = line + span;
        /* Columns are stored plus one; stored 0 is "no column" (-1). */
        pcol = (int64_t)col1 - 1;
        pend_col = (int64_t)end_col1 - 1;
    } else { /* LT_CODE_NO_LOCATION: running line unchanged */
        pline = pend_line = pcol = pend_col = FP_POS_NONE;
    }

    if (!lt_fits_i32(line) || !lt_fits_i32(pline) || !lt_fits_i32(pend_line) ||
        !lt_fits_i32(pcol) || !lt_fits_i32(pend_col)) {
        return FP_E_CORRUPT;
    }

    e->start = it->unit;
    e->length = length;
    e->pos.line = (int32_t)pline;
    e->pos.end_line = (int32_t)pend_line;
    e->pos.column = (int32_t)pcol;
    e->pos.end_column = (int32_t)pend_col;

    it->pos = c.pos;
    it->line = line;
    it->unit += length;
    return 1;
}

int fpi_linetable_lookup(const uint8_t *table, size_t len, int32_t firstlineno,
                        uint32_t unit, fpi_position *out)
{
    if (len > FPI_LINETABLE_MAX_BYTES || (table == NULL && len != 0)) {
        return FP_E_CORRUPT;
    }
    fpi_linetable_iter it;
    fpi_linetable_entry e;
    fpi_linetable_iter_init(&it, table, len, firstlineno);
    for (;;) {
        int rc = fpi_linetable_next(&it, &e);
        if (rc < 0) {
            return rc;
        }
        if (rc == 0) {
            break;
        }
        if (unit >= e.start && unit - e.start < e.length) {
            *out = e.pos;
            return 0;
        }
    }
    out->line = out->end_line = FP_POS_NONE;
    out->column = out->end_column = FP_POS_NONE;
    return 0;
}
