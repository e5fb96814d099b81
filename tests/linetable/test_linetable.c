/* test_linetable.c — unit and vector tests for the location-table decoder.
 *
 * Owns: hand-made tables with exact expected positions for every entry kind,
 * varint edge cases and corrupt tables; and the vector test, which checks
 * the decoder against code.co_positions() for every code unit of every code
 * object in corpora/linetables/<id>/ (format: corpora/linetables/FORMAT.md),
 * one TAP test case per interpreter id.  The corpus directory comes from
 * argv[1] or the FP_LINETABLE_CORPUS environment variable.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "frameproof/frameproof.h"
#include "linetable.h"

#define NONE FP_POS_NONE
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------------
 * Hand-made tables.  The expected positions of the no-location, long-form
 * and "line -1" tables were confirmed against co_positions() of CPython
 * 3.11 to 3.15 (GIL, free-threaded and debug builds) by putting the same
 * bytes in a code object with code.replace(co_linetable=...).
 * ------------------------------------------------------------------------ */

/* Entry header byte for a code and a length in units (1..8). */
#define HDR(code, len) ((uint8_t)(0x80u | ((unsigned)(code) << 3) | ((unsigned)(len) - 1u)))

enum { K_SHORT0 = 0, K_SHORT9 = 9, K_ONE0 = 10, K_ONE1 = 11, K_ONE2 = 12,
       K_NOCOL = 13, K_LONG = 14, K_NONE = 15 };

typedef struct want_entry {
    uint32_t start, length;
    int32_t line, end_line, column, end_column;
} want_entry;

/* Decodes the whole table with the iterator and compares entry by entry,
 * then checks fpi_linetable_lookup() on every unit plus two past the end. */
static void check_table(const uint8_t *t, size_t len, int32_t first,
                        const want_entry *want, size_t nwant)
{
    fpi_linetable_iter it;
    fpi_linetable_entry e;
    fpi_linetable_iter_init(&it, t, len, first);
    for (size_t i = 0; i < nwant; i++) {
        assert_int_equal(fpi_linetable_next(&it, &e), 1);
        assert_int_equal(e.start, want[i].start);
        assert_int_equal(e.length, want[i].length);
        assert_int_equal(e.pos.line, want[i].line);
        assert_int_equal(e.pos.end_line, want[i].end_line);
        assert_int_equal(e.pos.column, want[i].column);
        assert_int_equal(e.pos.end_column, want[i].end_column);
    }
    assert_int_equal(fpi_linetable_next(&it, &e), 0);
    assert_int_equal(fpi_linetable_next(&it, &e), 0); /* stays at the end */

    uint32_t total = nwant ? want[nwant - 1].start + want[nwant - 1].length : 0;
    size_t k = 0;
    for (uint32_t u = 0; u < total + 2; u++) {
        fpi_position p;
        assert_int_equal(fpi_linetable_lookup(t, len, first, u, &p), 0);
        while (k < nwant && u >= want[k].start + want[k].length) {
            k++;
        }
        if (k < nwant) {
            assert_int_equal(p.line, want[k].line);
            assert_int_equal(p.end_line, want[k].end_line);
            assert_int_equal(p.column, want[k].column);
            assert_int_equal(p.end_column, want[k].end_column);
        } else {
            assert_int_equal(p.line, NONE);
            assert_int_equal(p.end_line, NONE);
            assert_int_equal(p.column, NONE);
            assert_int_equal(p.end_column, NONE);
        }
    }
}

/* Expects the iterator to yield `good` valid entries, then FP_E_CORRUPT
 * (twice: the error is sticky), and lookup of a unit past them to fail. */
static void check_corrupt(const uint8_t *t, size_t len, int32_t first,
                          size_t good)
{
    fpi_linetable_iter it;
    fpi_linetable_entry e;
    uint32_t units = 0;
    fpi_linetable_iter_init(&it, t, len, first);
    for (size_t i = 0; i < good; i++) {
        assert_int_equal(fpi_linetable_next(&it, &e), 1);
        units += e.length;
    }
    assert_int_equal(fpi_linetable_next(&it, &e), FP_E_CORRUPT);
    assert_int_equal(fpi_linetable_next(&it, &e), FP_E_CORRUPT);
    fpi_position p;
    assert_int_equal(fpi_linetable_lookup(t, len, first, units, &p), FP_E_CORRUPT);
    if (units > 0) { /* units before the bad entry still resolve */
        assert_int_equal(fpi_linetable_lookup(t, len, first, units - 1, &p), 0);
    }
}

static void test_short_forms(void **state)
{
    (void)state;
    const uint8_t t[] = {
        HDR(0, 1), 0x00,          /* col 0, width 0 */
        HDR(0, 2), 0x7f,          /* col 7, width 15 */
        HDR(1, 3), 0x23,          /* col 8 + 2, width 3 */
        HDR(5, 8), 0x4f,          /* col 40 + 4, width 15 */
        HDR(K_SHORT9, 4), 0x70,   /* col 72 + 7 = 79, width 0 */
        HDR(K_SHORT9, 1), 0x7f,   /* the largest short form: 79 .. 94 */
    };
    const want_entry w[] = {
        {0, 1, 7, 7, 0, 0},   {1, 2, 7, 7, 7, 22},  {3, 3, 7, 7, 10, 13},
        {6, 8, 7, 7, 44, 59}, {14, 4, 7, 7, 79, 79}, {18, 1, 7, 7, 79, 94},
    };
    check_table(t, sizeof t, 7, w, ARRAY_LEN(w));
}

static void test_one_line_forms(void **state)
{
    (void)state;
    const uint8_t t[] = {
        HDR(K_ONE0, 2), 3, 9,      /* line +0 */
        HDR(K_ONE1, 1), 0, 127,    /* line +1 */
        HDR(K_ONE2, 8), 127, 0,    /* line +2 (end before start is kept) */
        HDR(K_ONE0, 1), 5, 6,
    };
    const want_entry w[] = {
        {0, 2, 100, 100, 3, 9},    {2, 1, 101, 101, 0, 127},
        {3, 8, 103, 103, 127, 0},  {11, 1, 103, 103, 5, 6},
    };
    check_table(t, sizeof t, 100, w, ARRAY_LEN(w));
}

static void test_no_columns(void **state)
{
    (void)state;
    const uint8_t t[] = {
        HDR(K_NOCOL, 1), 0x00,         /* +0 */
        HDR(K_NOCOL, 3), 0x07,         /* -3 (svarint 7: odd -> negative) */
        HDR(K_NOCOL, 2), 0x0c,         /* +6 */
        HDR(K_NOCOL, 1), 0x01,         /* -0 */
        HDR(K_NOCOL, 1), 0x41, 0x01,   /* varint 65: -32 */
        HDR(K_NOCOL, 1), 0x40, 0x01,   /* varint 64: +32 */
    };
    const want_entry w[] = {
        {0, 1, 50, 50, NONE, NONE}, {1, 3, 47, 47, NONE, NONE},
        {4, 2, 53, 53, NONE, NONE}, {6, 1, 53, 53, NONE, NONE},
        {7, 1, 21, 21, NONE, NONE}, {8, 1, 53, 53, NONE, NONE},
    };
    check_table(t, sizeof t, 50, w, ARRAY_LEN(w));
}

static void test_long_form(void **state)
{
    (void)state;
    const uint8_t t[] = {
        /* line +2, end +3, col 4, end col 200 (varint 201 = 9 + 3*64) */
        HDR(K_LONG, 2), 0x04, 0x03, 0x05, 0x49, 0x03,
        /* line -1, end +0, stored 0 columns: both NONE */
        HDR(K_LONG, 1), 0x03, 0x00, 0x00, 0x00,
        /* line +0, end +1, col NONE, end col 0 */
        HDR(K_LONG, 8), 0x00, 0x01, 0x00, 0x01,
        /* large columns: col 4095 (varint 4096 = 0 + 0 + 1<<12) */
        HDR(K_LONG, 1), 0x00, 0x00, 0x40, 0x40, 0x01, 0x40, 0x40, 0x01,
    };
    const want_entry w[] = {
        {0, 2, 12, 15, 4, 200},      {2, 1, 11, 11, NONE, NONE},
        {3, 8, 11, 12, NONE, 0},     {11, 1, 11, 11, 4095, 4095},
    };
    check_table(t, sizeof t, 10, w, ARRAY_LEN(w));
}

static void test_no_location(void **state)
{
    (void)state;
    const uint8_t t[] = {
        HDR(K_ONE1, 1), 1, 2,       /* line 21 */
        HDR(K_NONE, 3),             /* NONE; running line stays 21 */
        HDR(K_NONE, 8),
        HDR(0, 1), 0x12,            /* line 21 again */
        HDR(K_ONE2, 1), 0, 1,       /* 23 */
    };
    const want_entry w[] = {
        {0, 1, 21, 21, 1, 2},          {1, 3, NONE, NONE, NONE, NONE},
        {4, 8, NONE, NONE, NONE, NONE}, {12, 1, 21, 21, 1, 3},
        {13, 1, 23, 23, 0, 1},
    };
    check_table(t, sizeof t, 20, w, ARRAY_LEN(w));
}

/* CPython 3.13.0, def f(a, b): x = a + b; return g(x, a * b) over 4 lines. */
static void test_worked_example(void **state)
{
    (void)state;
    const uint8_t t[] = {
        0x80, 0x00, 0xd8, 0x08, 0x09, 0x89, 0x05, 0x80, 0x41, 0xdc,
        0x0b, 0x0c, 0x88, 0x51, 0xd8, 0x0d, 0x0e, 0x89, 0x55, 0xf3,
        0x03, 0x01, 0x0c, 0x14, 0xf0, 0x00, 0x01, 0x05, 0x14,
    };
    static const int32_t want[][4] = {
        {1, 1, 0, 0},    {2, 2, 8, 9},    {2, 2, 8, 13},   {2, 2, 8, 13},
        {2, 2, 4, 5},    {3, 3, 11, 12},  {3, 3, 11, 12},  {3, 3, 11, 12},
        {3, 3, 11, 12},  {3, 3, 11, 12},  {3, 3, 13, 14},  {4, 4, 13, 14},
        {4, 4, 13, 18},  {4, 4, 13, 18},  {3, 4, 11, 19},  {3, 4, 11, 19},
        {3, 4, 11, 19},  {3, 4, 11, 19},  {3, 4, 4, 19},
    };
    for (uint32_t u = 0; u < ARRAY_LEN(want) + 1; u++) {
        fpi_position p;
        assert_int_equal(fpi_linetable_lookup(t, sizeof t, 1, u, &p), 0);
        const int32_t *x = u < ARRAY_LEN(want) ? want[u] : NULL;
        assert_int_equal(p.line, x ? x[0] : NONE);
        assert_int_equal(p.end_line, x ? x[1] : NONE);
        assert_int_equal(p.column, x ? x[2] : NONE);
        assert_int_equal(p.end_column, x ? x[3] : NONE);
    }
}

static void test_varint_edges(void **state)
{
    (void)state;
    /* 2^32 - 1 as a varint: five full chunks and a final 3. */
    const uint8_t max_span[] = {HDR(K_LONG, 1), 0x00,
                                0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x03, 0x01, 0x01};
    /* Redundant zero chunks up to the bound decode as 0. */
    const uint8_t padded[] = {HDR(K_NOCOL, 1), 0x40, 0x40, 0x40, 0x40, 0x40, 0x00};
    /* svarint 2^32 - 1: odd, so -(2^31 - 1). */
    const uint8_t most_negative[] = {HDR(K_NOCOL, 1),
                                     0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x03};
    /* svarint 2^32 - 2: +(2^31 - 1). */
    const uint8_t most_positive[] = {HDR(K_NOCOL, 1),
                                     0x7e, 0x7f, 0x7f, 0x7f, 0x7f, 0x03};
    /* Long-form column varint 2^31: column = INT32_MAX. */
    const uint8_t big_col[] = {HDR(K_LONG, 1), 0x00, 0x00,
                               0x40, 0x40, 0x40, 0x40, 0x40, 0x02, 0x01};
    fpi_position p;

    /* Span 2^32 - 1 pushes end_line out of int32. */
    assert_int_equal(fpi_linetable_lookup(max_span, sizeof max_span, 1, 0, &p),
                     FP_E_CORRUPT);
    assert_int_equal(fpi_linetable_lookup(padded, sizeof padded, 9, 0, &p), 0);
    assert_int_equal(p.line, 9);
    assert_int_equal(fpi_linetable_lookup(most_negative, sizeof most_negative,
                                         1, 0, &p), 0);
    assert_int_equal(p.line, 1 - INT32_MAX);
    assert_int_equal(p.end_line, 1 - INT32_MAX);
    assert_int_equal(fpi_linetable_lookup(most_positive, sizeof most_positive,
                                         0, 0, &p), 0);
    assert_int_equal(p.line, INT32_MAX);
    assert_int_equal(fpi_linetable_lookup(most_positive, sizeof most_positive,
                                         1, 0, &p), FP_E_CORRUPT);
    assert_int_equal(fpi_linetable_lookup(big_col, sizeof big_col, 1, 0, &p), 0);
    assert_int_equal(p.column, INT32_MAX);
    assert_int_equal(p.end_column, 0);
}

/* A line that computes to exactly -1 reads as "absent", as co_positions()
 * shows it (None); other values, 0 and negatives included, are kept. */
static void test_line_minus_one(void **state)
{
    (void)state;
    const uint8_t t[] = {
        HDR(K_ONE0, 1), 1, 2,      /* line 0 */
        HDR(K_NOCOL, 1), 0x03,     /* -1: line -1 */
        HDR(K_ONE0, 1), 1, 2,      /* still -1 */
        HDR(K_LONG, 1), 0x03, 0x01, 0x01, 0x01, /* -2, end -2 + 1 = -1 */
    };
    const want_entry w[] = {
        {0, 1, 0, 0, 1, 2},  {1, 1, NONE, NONE, NONE, NONE},
        {2, 1, NONE, NONE, 1, 2}, {3, 1, -2, NONE, 0, 0},
    };
    check_table(t, sizeof t, 0, w, ARRAY_LEN(w));
}

static void test_empty_and_past_end(void **state)
{
    (void)state;
    const uint8_t t[] = {HDR(0, 4), 0x01};
    fpi_position p = {1, 2, 3, 4};
    assert_int_equal(fpi_linetable_lookup(NULL, 0, 5, 0, &p), 0);
    assert_int_equal(p.line, NONE);
    assert_int_equal(p.end_line, NONE);
    assert_int_equal(p.column, NONE);
    assert_int_equal(p.end_column, NONE);
    assert_int_equal(fpi_linetable_lookup(t, sizeof t, 5, 3, &p), 0);
    assert_int_equal(p.line, 5);
    assert_int_equal(p.end_column, 1);
    assert_int_equal(fpi_linetable_lookup(t, sizeof t, 5, 4, &p), 0);
    assert_int_equal(p.line, NONE);
    assert_int_equal(p.column, NONE);
    assert_int_equal(fpi_linetable_lookup(t, sizeof t, 5, UINT32_MAX, &p), 0);
    assert_int_equal(p.end_line, NONE);
    assert_int_equal(p.end_column, NONE);
}

static void test_corrupt_truncated(void **state)
{
    (void)state;
    const uint8_t short_form[] = {HDR(0, 1), 0x01, HDR(3, 1)};
    const uint8_t one_line_a[] = {HDR(0, 1), 0x01, HDR(K_ONE1, 1)};
    const uint8_t one_line_b[] = {HDR(0, 1), 0x01, HDR(K_ONE1, 1), 4};
    const uint8_t nocol_a[] = {HDR(K_NOCOL, 1)};
    const uint8_t nocol_b[] = {HDR(K_NOCOL, 1), 0x40};   /* varint cut */
    const uint8_t long_a[] = {HDR(K_LONG, 1), 0x02};
    const uint8_t long_b[] = {HDR(K_LONG, 1), 0x02, 0x00};
    const uint8_t long_c[] = {HDR(K_LONG, 1), 0x02, 0x00, 0x01};
    const uint8_t long_d[] = {HDR(K_LONG, 1), 0x02, 0x00, 0x01, 0x41};
    check_corrupt(short_form, sizeof short_form, 1, 1);
    check_corrupt(one_line_a, sizeof one_line_a, 1, 1);
    check_corrupt(one_line_b, sizeof one_line_b, 1, 1);
    check_corrupt(nocol_a, sizeof nocol_a, 1, 0);
    check_corrupt(nocol_b, sizeof nocol_b, 1, 0);
    check_corrupt(long_a, sizeof long_a, 1, 0);
    check_corrupt(long_b, sizeof long_b, 1, 0);
    check_corrupt(long_c, sizeof long_c, 1, 0);
    check_corrupt(long_d, sizeof long_d, 1, 0);
    /* A no-location entry is one byte and can't be cut; the same table
     * with the bytes after it cut is fine. */
    const uint8_t none_ok[] = {HDR(K_NONE, 2)};
    const want_entry w[] = {{0, 2, NONE, NONE, NONE, NONE}};
    check_table(none_ok, sizeof none_ok, 1, w, ARRAY_LEN(w));
}

static void test_corrupt_bytes(void **state)
{
    (void)state;
    /* A continuation byte where an entry must start. */
    const uint8_t cont_first[] = {0x05, HDR(0, 1), 0x00};
    const uint8_t cont_later[] = {HDR(0, 1), 0x00, 0x00};
    const uint8_t cont_after_none[] = {HDR(K_NONE, 1), 0x00};
    /* An entry-start byte where a continuation byte is expected. */
    const uint8_t start_in_short[] = {HDR(0, 1), HDR(0, 1), 0x00};
    const uint8_t start_in_one_line[] = {HDR(K_ONE0, 1), 0x01, 0x80};
    const uint8_t start_in_varint[] = {HDR(K_LONG, 1), 0x00, 0x00, 0x40, 0x81, 0x01};
    /* Varints: seven chunks (beyond the bound), a value of 2^32. */
    const uint8_t seven_chunks[] = {HDR(K_NOCOL, 1),
                                    0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x00};
    const uint8_t two_pow_32[] = {HDR(K_NOCOL, 1),
                                  0x40, 0x40, 0x40, 0x40, 0x40, 0x04};
    /* Column 2^31 does not fit int32. */
    const uint8_t col_overflow[] = {HDR(K_LONG, 1), 0x00, 0x00,
                                    0x41, 0x40, 0x40, 0x40, 0x40, 0x02, 0x01};
    /* Lines out of int32: one-line +1 at INT32_MAX, and -(2^31 - 1) twice
     * from 0. */
    const uint8_t one_line_up[] = {HDR(K_ONE1, 1), 0, 0};
    const uint8_t down_twice[] = {HDR(K_NOCOL, 1), 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x03,
                                  HDR(K_NOCOL, 1), 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x03};
    check_corrupt(cont_first, sizeof cont_first, 1, 0);
    check_corrupt(cont_later, sizeof cont_later, 1, 1);
    check_corrupt(cont_after_none, sizeof cont_after_none, 1, 1);
    check_corrupt(start_in_short, sizeof start_in_short, 1, 0);
    check_corrupt(start_in_one_line, sizeof start_in_one_line, 1, 0);
    check_corrupt(start_in_varint, sizeof start_in_varint, 1, 0);
    check_corrupt(seven_chunks, sizeof seven_chunks, 1, 0);
    check_corrupt(two_pow_32, sizeof two_pow_32, 1, 0);
    check_corrupt(col_overflow, sizeof col_overflow, 1, 0);
    check_corrupt(one_line_up, sizeof one_line_up, INT32_MAX, 0);
    check_corrupt(down_twice, sizeof down_twice, 0, 1);
}

static void test_corrupt_limits(void **state)
{
    (void)state;
    const uint8_t t[] = {HDR(0, 1), 0x00};
    fpi_position p;
    fpi_linetable_iter it;
    fpi_linetable_entry e;
    /* The size check comes before any read, so a short buffer is safe. */
    assert_int_equal(fpi_linetable_lookup(t, (size_t)FPI_LINETABLE_MAX_BYTES + 1u,
                                         1, 0, &p), FP_E_CORRUPT);
    fpi_linetable_iter_init(&it, t, (size_t)FPI_LINETABLE_MAX_BYTES + 1u, 1);
    assert_int_equal(fpi_linetable_next(&it, &e), FP_E_CORRUPT);
    assert_int_equal(fpi_linetable_lookup(NULL, 2, 1, 0, &p), FP_E_CORRUPT);
    /* Corruption after the entry that covers the unit does not matter. */
    const uint8_t tail_bad[] = {HDR(0, 2), 0x00, 0x05};
    assert_int_equal(fpi_linetable_lookup(tail_bad, sizeof tail_bad, 1, 1, &p), 0);
    assert_int_equal(p.line, 1);
    assert_int_equal(fpi_linetable_lookup(tail_bad, sizeof tail_bad, 1, 2, &p),
                     FP_E_CORRUPT);
}

/* ------------------------------------------------------------------------
 * Vector files (corpora/linetables/FORMAT.md)
 * ------------------------------------------------------------------------ */

#define VEC_FILE_NAME "stdlib.fplt.z"
#define VEC_SAME_AS_NAME "SAME_AS"
#define VEC_MAGIC "FPLT"
#define VEC_MAGIC_LEN 4u
#define VEC_VERSION 1u
#define VEC_SECTIONS 8u
#define VEC_MAX_FILE_BYTES ((size_t)256 * 1024 * 1024)
#define VEC_MAX_PAYLOAD_BYTES ((size_t)1024 * 1024 * 1024)
#define VEC_INFLATE_CHUNK ((size_t)1 << 20)
#define VEC_UVAR_MAX_BYTES 10u
#define VEC_MAX_IDS 256u
#define VEC_MAX_ID_LEN 64u
#define VEC_MAX_PATH 4096u
#define VEC_MAX_REPORTED 20u
/* Also check fpi_linetable_lookup() at every run start of tables up to this
 * size (lookup is linear, so this is quadratic per code object). */
#define VEC_LOOKUP_TABLE_MAX 512u

typedef struct vec_totals {
    unsigned interpreters;
    uint64_t code_objects, units;
} vec_totals;

typedef struct vec_case {
    char id[VEC_MAX_ID_LEN];
    char name[VEC_MAX_ID_LEN + 16];
    char corpus[VEC_MAX_PATH];
    vec_totals *totals;
} vec_case;

typedef struct cursor {
    const uint8_t *p;
    size_t len, pos;
    int bad;
} cursor;

static uint64_t cur_uvar(cursor *c)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < VEC_UVAR_MAX_BYTES; i++) {
        if (c->pos >= c->len) {
            break;
        }
        uint8_t b = c->p[c->pos++];
        v |= (uint64_t)(b & 0x7fu) << (7u * i);
        if (!(b & 0x80u)) {
            return v;
        }
    }
    c->bad = 1;
    return 0;
}

static int64_t cur_svar(cursor *c)
{
    uint64_t u = cur_uvar(c);
    return (u & 1u) ? -(int64_t)(u >> 1) - 1 : (int64_t)(u >> 1);
}

/* Takes n bytes from c as a sub-cursor (or marks c bad). */
static cursor cur_take(cursor *c, uint64_t n)
{
    cursor s = {NULL, 0, 0, 1};
    if (c->bad || n > c->len - c->pos) {
        c->bad = 1;
        return s;
    }
    s.p = c->p + c->pos;
    s.len = (size_t)n;
    s.bad = 0;
    c->pos += (size_t)n;
    return s;
}

static uint8_t *read_whole_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        return NULL;
    }
    uint8_t *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : VEC_INFLATE_CHUNK;
            if (ncap > VEC_MAX_FILE_BYTES) {
                free(buf);
                fclose(f);
                return NULL;
            }
            uint8_t *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            break;
        }
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

static uint8_t *inflate_all(const uint8_t *in, size_t in_len, size_t *out_len)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit(&zs) != Z_OK) {
        return NULL;
    }
    uint8_t *out = NULL;
    size_t cap = 0, n = 0;
    int rc = Z_OK;
    zs.next_in = (Bytef *)(uintptr_t)in;
    zs.avail_in = (uInt)in_len;
    if ((size_t)zs.avail_in != in_len) {
        inflateEnd(&zs);
        return NULL;
    }
    while (rc != Z_STREAM_END) {
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : VEC_INFLATE_CHUNK;
            uint8_t *nb = ncap <= VEC_MAX_PAYLOAD_BYTES ? realloc(out, ncap) : NULL;
            if (!nb) {
                break;
            }
            out = nb;
            cap = ncap;
        }
        size_t room = cap - n;
        zs.next_out = out + n;
        zs.avail_out = room > UINT_MAX ? UINT_MAX : (uInt)room;
        uInt before = zs.avail_out;
        rc = inflate(&zs, Z_NO_FLUSH);
        n += before - zs.avail_out;
        if (rc != Z_OK && rc != Z_STREAM_END) {
            break;
        }
        if (rc == Z_OK && before == zs.avail_out && zs.avail_in == 0) {
            break; /* truncated stream */
        }
    }
    int ok = rc == Z_STREAM_END && zs.avail_in == 0;
    inflateEnd(&zs);
    if (!ok) {
        free(out);
        return NULL;
    }
    *out_len = n;
    return out;
}

static int valid_id(const char *s)
{
    if (!*s || strlen(s) >= VEC_MAX_ID_LEN || s[0] == '.') {
        return 0;
    }
    for (; *s; s++) {
        if (!isalnum((unsigned char)*s) && *s != '.' && *s != '-' && *s != '_') {
            return 0;
        }
    }
    return 1;
}

/* Resolves <corpus>/<id>/ to its vector file, following one SAME_AS. */
static int vector_path(const char *corpus, const char *id, char *out, size_t cap)
{
    struct stat st;
    int n = snprintf(out, cap, "%s/%s/%s", corpus, id, VEC_FILE_NAME);
    if (n > 0 && (size_t)n < cap && stat(out, &st) == 0) {
        return 0;
    }
    char same[VEC_MAX_PATH];
    n = snprintf(same, sizeof same, "%s/%s/%s", corpus, id, VEC_SAME_AS_NAME);
    if (n < 0 || (size_t)n >= sizeof same) {
        return -1;
    }
    FILE *f = fopen(same, "r");
    if (!f) {
        print_error("# %s: neither %s nor %s\n", id, VEC_FILE_NAME, VEC_SAME_AS_NAME);
        return -1;
    }
    char target[VEC_MAX_ID_LEN + 2] = {0};
    int got = fgets(target, sizeof target, f) != NULL;
    fclose(f);
    target[strcspn(target, " \t\r\n")] = '\0';
    if (!got || !valid_id(target) || strcmp(target, id) == 0) {
        print_error("# %s: bad %s\n", id, VEC_SAME_AS_NAME);
        return -1;
    }
    n = snprintf(out, cap, "%s/%s/%s", corpus, target, VEC_FILE_NAME);
    if (n < 0 || (size_t)n >= cap || stat(out, &st) != 0) {
        print_error("# %s: %s names %s, which has no %s\n", id,
                    VEC_SAME_AS_NAME, target, VEC_FILE_NAME);
        return -1;
    }
    return 0;
}

typedef struct vec_run {
    uint64_t count;
    int64_t line, end_line, col, end_col;
} vec_run;

/* Section indices, in file order. */
enum { S_META, S_QUAL, S_TABLE, S_COUNT, S_DLINE, S_DEND, S_COL, S_DENDCOL };

/* One parsed vector file; the sections are consumed as records are read. */
typedef struct vec_file {
    uint8_t *data;
    size_t len;
    cursor base;      /* id of the base directory, empty for none */
    cursor ranges;    /* (skip, take) pairs over the base's records */
    uint64_t nranges;
    uint64_t nfiles;
    cursor *names;
    uint64_t ncode;
    cursor s[VEC_SECTIONS];
} vec_file;

typedef struct vec_check {
    const vec_case *vc;
    uint64_t records, units, mismatches;
    unsigned reported;
} vec_check;

static void vec_file_free(vec_file *vf)
{
    free(vf->names);
    free(vf->data);
    memset(vf, 0, sizeof *vf);
}

/* Loads and parses the header of one vector file.  On failure returns -1
 * with a message in err. */
static int vec_file_load(const char *path, vec_file *vf, char *err, size_t errcap)
{
    memset(vf, 0, sizeof *vf);
    size_t raw_len = 0, len = 0;
    uint8_t *data = read_whole_file(path, &raw_len);
    if (!data) {
        snprintf(err, errcap, "cannot read %s", path);
        return -1;
    }
    len = raw_len;
    if (raw_len < VEC_MAGIC_LEN || memcmp(data, VEC_MAGIC, VEC_MAGIC_LEN) != 0) {
        uint8_t *raw = data;
        data = inflate_all(raw, raw_len, &len);
        free(raw);
        if (!data) {
            snprintf(err, errcap, "%s is not a valid zlib stream", path);
            return -1;
        }
    }
    vf->data = data;
    vf->len = len;
    if (len < VEC_MAGIC_LEN + 4 || memcmp(data, VEC_MAGIC, VEC_MAGIC_LEN) != 0) {
        snprintf(err, errcap, "bad magic in %s", path);
        return -1;
    }
    uint32_t version = (uint32_t)data[4] | (uint32_t)data[5] << 8 |
                       (uint32_t)data[6] << 16 | (uint32_t)data[7] << 24;
    if (version != VEC_VERSION) {
        snprintf(err, errcap, "%s: unsupported version %u", path, version);
        return -1;
    }
    cursor c = {data, len, VEC_MAGIC_LEN + 4, 0};
    vf->base = cur_take(&c, cur_uvar(&c));
    if (vf->base.len > 0) {
        vf->nranges = cur_uvar(&c);
        size_t start = c.pos;
        for (uint64_t i = 0; i < vf->nranges && !c.bad; i++) {
            (void)cur_uvar(&c);
            (void)cur_uvar(&c);
        }
        if (!c.bad) {
            vf->ranges = (cursor){data + start, c.pos - start, 0, 0};
        }
    }
    vf->nfiles = cur_uvar(&c);
    if (c.bad || vf->nfiles > len) {
        snprintf(err, errcap, "%s: bad header", path);
        return -1;
    }
    vf->names = calloc(vf->nfiles ? (size_t)vf->nfiles : 1u, sizeof *vf->names);
    if (!vf->names) {
        snprintf(err, errcap, "out of memory");
        return -1;
    }
    for (uint64_t i = 0; i < vf->nfiles; i++) {
        vf->names[i] = cur_take(&c, cur_uvar(&c));
    }
    vf->ncode = cur_uvar(&c);
    for (unsigned i = 0; i < VEC_SECTIONS; i++) {
        vf->s[i] = cur_take(&c, cur_uvar(&c));
    }
    if (c.bad || c.pos != c.len) {
        snprintf(err, errcap, "%s: malformed header or sections", path);
        return -1;
    }
    return 0;
}

static int same_pos(const fpi_position *p, const vec_run *r)
{
    return p->line == r->line && p->end_line == r->end_line &&
           p->column == r->col && p->end_column == r->end_col;
}

static void report(vec_check *ck, const char *how, const cursor *qual,
                   const char *file, uint64_t unit, const vec_run *r,
                   const fpi_position *p, int rc)
{
    ck->mismatches++;
    if (++ck->reported > VEC_MAX_REPORTED) {
        return;
    }
    print_error("# %s: %s: %.*s (%s) unit %llu: expected (%lld, %lld, %lld, "
                "%lld), got (%d, %d, %d, %d) rc %d\n", ck->vc->id, how,
                (int)qual->len, (const char *)qual->p, file,
                (unsigned long long)unit, (long long)r->line,
                (long long)r->end_line, (long long)r->col, (long long)r->end_col,
                p->line, p->end_line, p->column, p->end_column, rc);
}

/* Reads the next record of vf; if `compare`, checks the decoder against its
 * expected positions for every code unit.  Returns -1 if the file is
 * malformed. */
static int vec_record(vec_file *vf, int compare, vec_check *ck)
{
    cursor *s = vf->s;
    uint64_t fidx = cur_uvar(&s[S_META]);
    int64_t first = cur_svar(&s[S_META]);
    uint64_t nunits = cur_uvar(&s[S_META]);
    cursor qual = cur_take(&s[S_QUAL], cur_uvar(&s[S_META]));
    cursor tab = cur_take(&s[S_TABLE], cur_uvar(&s[S_META]));
    uint64_t nruns = cur_uvar(&s[S_META]);
    if (s[S_META].bad || s[S_QUAL].bad || s[S_TABLE].bad ||
        fidx >= vf->nfiles || first < INT32_MIN || first > INT32_MAX ||
        nunits > UINT32_MAX || nruns > nunits) {
        return -1;
    }
    char file[VEC_MAX_PATH];
    snprintf(file, sizeof file, "%.*s", (int)vf->names[fidx].len,
             (const char *)vf->names[fidx].p);

    fpi_linetable_iter it;
    fpi_linetable_entry e;
    int have = 0, rc = 0;
    fpi_linetable_iter_init(&it, tab.p, tab.len, (int32_t)first);
    int64_t prev_line = first;
    uint64_t unit = 0;
    for (uint64_t k = 0; k < nruns; k++) {
        vec_run r;
        r.count = cur_uvar(&s[S_COUNT]);
        r.line = prev_line + cur_svar(&s[S_DLINE]);
        r.end_line = r.line + cur_svar(&s[S_DEND]);
        r.col = cur_svar(&s[S_COL]);
        r.end_col = r.col + cur_svar(&s[S_DENDCOL]);
        prev_line = r.line;
        for (unsigned i = S_COUNT; i <= S_DENDCOL; i++) {
            if (s[i].bad) {
                return -1;
            }
        }
        if (r.count == 0 || r.count > nunits - unit) {
            return -1;
        }
        if (!compare) {
            unit += r.count;
            continue;
        }
        if (tab.len <= VEC_LOOKUP_TABLE_MAX) {
            fpi_position lp = {NONE, NONE, NONE, NONE};
            int lrc = fpi_linetable_lookup(tab.p, tab.len, (int32_t)first,
                                          (uint32_t)unit, &lp);
            if (lrc != 0 || !same_pos(&lp, &r)) {
                report(ck, "lookup", &qual, file, unit, &r, &lp, lrc);
            }
        }
        for (uint64_t j = 0; j < r.count; j++, unit++) {
            while (rc >= 0 && (!have || unit >= (uint64_t)e.start + e.length)) {
                rc = fpi_linetable_next(&it, &e);
                have = rc == 1;
                if (rc <= 0) {
                    break;
                }
            }
            fpi_position p = {NONE, NONE, NONE, NONE};
            if (have) {
                p = e.pos;
            }
            if (rc < 0 || !same_pos(&p, &r)) {
                report(ck, "iter", &qual, file, unit, &r, &p, rc);
            }
        }
    }
    if (unit != nunits) {
        return -1;
    }
    if (compare) {
        ck->records++;
        ck->units += unit;
    }
    return 0;
}

/* Checks all records of vf, or (select != NULL) those the (skip, take)
 * ranges in *select pick.  Returns -1 if a file is malformed. */
static int vec_check_file(vec_file *vf, vec_file *select, vec_check *ck)
{
    uint64_t skip = 0, take = 0, left = select ? select->nranges : 0;
    for (uint64_t rec = 0; rec < vf->ncode; rec++) {
        int compare = 1;
        if (select) {
            while (skip == 0 && take == 0 && left > 0) {
                skip = cur_uvar(&select->ranges);
                take = cur_uvar(&select->ranges);
                left--;
            }
            if (skip > 0) {
                skip--;
                compare = 0;
            } else if (take > 0) {
                take--;
            } else {
                compare = 0;
            }
        }
        if (vec_record(vf, compare, ck) < 0) {
            return -1;
        }
    }
    if (select && (skip || take || left || select->ranges.bad ||
                   select->ranges.pos != select->ranges.len)) {
        return -1; /* ranges run past the base's records */
    }
    for (unsigned i = 0; i < VEC_SECTIONS; i++) {
        if (vf->s[i].bad || vf->s[i].pos != vf->s[i].len) {
            return -1;
        }
    }
    return 0;
}

static void test_vectors(void **state)
{
    vec_case *vc = *state;
    char path[VEC_MAX_PATH], err[VEC_MAX_PATH + 128];
    vec_file vf, base;
    vec_check ck = {vc, 0, 0, 0, 0};
    memset(&base, 0, sizeof base);
    if (vector_path(vc->corpus, vc->id, path, sizeof path) != 0) {
        fail_msg("%s: no vector file", vc->id);
    }
    if (vec_file_load(path, &vf, err, sizeof err) != 0) {
        vec_file_free(&vf);
        fail_msg("%s: %s", vc->id, err);
    }
    int bad = 0;
    if (vf.base.len > 0) {
        char id[VEC_MAX_ID_LEN] = {0}, bpath[VEC_MAX_PATH];
        if (vf.base.len < sizeof id) {
            memcpy(id, vf.base.p, vf.base.len);
        }
        int n = snprintf(bpath, sizeof bpath, "%s/%s/%s", vc->corpus, id,
                         VEC_FILE_NAME);
        if (!valid_id(id) || n < 0 || (size_t)n >= sizeof bpath) {
            snprintf(err, sizeof err, "bad base id in %s", path);
            bad = 1;
        } else if (vec_file_load(bpath, &base, err, sizeof err) != 0) {
            bad = 1;
        } else if (base.base.len > 0) {
            snprintf(err, sizeof err, "base %s has a base itself", bpath);
            bad = 1;
        } else if (vec_check_file(&base, &vf, &ck) != 0) {
            snprintf(err, sizeof err, "malformed base %s", bpath);
            bad = 1;
        }
    }
    if (!bad && vec_check_file(&vf, NULL, &ck) != 0) {
        snprintf(err, sizeof err, "malformed vector file %s", path);
        bad = 1;
    }
    vec_file_free(&base);
    vec_file_free(&vf);
    printf("# %s: %llu code objects, %llu code units checked\n", vc->id,
           (unsigned long long)ck.records, (unsigned long long)ck.units);
    if (!bad) {
        vc->totals->interpreters++;
        vc->totals->code_objects += ck.records;
        vc->totals->units += ck.units;
    }
    if (bad) {
        fail_msg("%s: %s", vc->id, err);
    }
    if (ck.mismatches) {
        fail_msg("%s: %llu code units differ from co_positions()", vc->id,
                 (unsigned long long)ck.mismatches);
    }
}

static void test_vectors_missing(void **state)
{
    const char *corpus = *state;
    fail_msg("no linetable vector directories found in %s", corpus);
}

static int cmp_ids(const void *a, const void *b)
{
    return strcmp(((const vec_case *)a)->id, ((const vec_case *)b)->id);
}

/* Lists <corpus>/<id>/ directories; returns the count or -1. */
static int list_ids(const char *corpus, vec_case *cases, size_t cap,
                    vec_totals *totals)
{
    DIR *d = opendir(corpus);
    if (!d) {
        return 0;
    }
    size_t n = 0;
    struct dirent *de;
    int rc = 0;
    while ((de = readdir(d)) != NULL) {
        char p[VEC_MAX_PATH];
        struct stat st;
        if (!valid_id(de->d_name)) {
            continue;
        }
        int len = snprintf(p, sizeof p, "%s/%s", corpus, de->d_name);
        if (len < 0 || (size_t)len >= sizeof p || stat(p, &st) != 0 ||
            !S_ISDIR(st.st_mode)) {
            continue;
        }
        if (n == cap) {
            rc = -1;
            break;
        }
        vec_case *vc = &cases[n];
        size_t idlen = strlen(de->d_name); /* < VEC_MAX_ID_LEN: valid_id() */
        size_t clen = strlen(corpus);
        if (clen >= sizeof vc->corpus) {
            continue;
        }
        memcpy(vc->id, de->d_name, idlen + 1);
        memcpy(vc->name, "vectors/", sizeof "vectors/");
        memcpy(vc->name + sizeof "vectors/" - 1, de->d_name, idlen + 1);
        memcpy(vc->corpus, corpus, clen + 1);
        vc->totals = totals;
        n++;
    }
    closedir(d);
    if (rc < 0) {
        return rc;
    }
    qsort(cases, n, sizeof *cases, cmp_ids);
    return (int)n;
}

int main(int argc, char **argv)
{
    static const struct CMUnitTest unit_tests[] = {
        cmocka_unit_test(test_short_forms),
        cmocka_unit_test(test_one_line_forms),
        cmocka_unit_test(test_no_columns),
        cmocka_unit_test(test_long_form),
        cmocka_unit_test(test_no_location),
        cmocka_unit_test(test_worked_example),
        cmocka_unit_test(test_varint_edges),
        cmocka_unit_test(test_line_minus_one),
        cmocka_unit_test(test_empty_and_past_end),
        cmocka_unit_test(test_corrupt_truncated),
        cmocka_unit_test(test_corrupt_bytes),
        cmocka_unit_test(test_corrupt_limits),
    };
    const char *corpus = argc > 1 ? argv[1] : getenv("FP_LINETABLE_CORPUS");
    if (!corpus || !*corpus) {
        corpus = "corpora/linetables";
    }
    cmocka_set_message_output(CM_OUTPUT_TAP);

    vec_totals totals = {0, 0, 0};
    vec_case *cases = calloc(VEC_MAX_IDS, sizeof *cases);
    struct CMUnitTest *tests =
        calloc(ARRAY_LEN(unit_tests) + VEC_MAX_IDS + 1u, sizeof *tests);
    if (!cases || !tests) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    size_t nt = 0;
    for (size_t i = 0; i < ARRAY_LEN(unit_tests); i++) {
        tests[nt++] = unit_tests[i];
    }
    int nids = list_ids(corpus, cases, VEC_MAX_IDS, &totals);
    for (int i = 0; i < nids; i++) {
        struct CMUnitTest t = {cases[i].name, test_vectors, NULL, NULL, &cases[i]};
        tests[nt++] = t;
    }
    if (nids <= 0) {
        struct CMUnitTest t = {"vectors", test_vectors_missing, NULL, NULL,
                               (void *)(uintptr_t)corpus};
        tests[nt++] = t;
    }
    int failed = _cmocka_run_group_tests("linetable", tests, nt, NULL, NULL);
    printf("# linetable vectors: %u interpreters, %llu code objects, "
           "%llu code units checked\n", totals.interpreters,
           (unsigned long long)totals.code_objects,
           (unsigned long long)totals.units);
    free(tests);
    free(cases);
    return failed ? 1 : 0;
}
