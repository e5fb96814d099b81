/* test_linetable.c — unit and vector tests for the location-table decoder.
 *
 * Owns: hand-made tables with exact expected positions for every entry kind,
 * varint edge cases and corrupt tables; and runs the vector test
 * (linetable_vectors.c), which checks the decoder against
 * code.co_positions() for every code unit of every code object in
 * corpora/linetables/<id>/, one TAP test case per interpreter id.  The corpus directory comes from
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
#include "linetable_vectors.h"

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
