/* test_debug_offsets.c — _Py_DebugOffsets parsing and validation against
 * real tables captured from every 3.13+ build of the matrix, and rejection
 * of corrupted ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "debug_offsets.h"
#include "frameproof/frameproof.h"

#define TABLE_BYTES 8192

static const char *data_dir(void)
{
    const char *d = getenv("FP_TEST_DATA");
    return d ? d : "tests/data";
}

static void load(const char *id, uint8_t *buf)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/debug_offsets/%s.bin", data_dir(), id);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    size_t n = fread(buf, 1, TABLE_BYTES, f);
    fclose(f);
    assert_int_equal(n, TABLE_BYTES);
}

static void put_u64(uint8_t *t, size_t pos, uint64_t v)
{
    memcpy(t + pos, &v, sizeof v);
}

typedef struct expect {
    const char *id;
    uint32_t minor;
    bool ft;
    int32_t ts_current_frame, ts_base_frame, ts_native_thread_id, ts_datastack_chunk, ts_holds_gil;
    int32_t fr_owner, fr_tlbc_index, co_qualname, co_code_adaptive, co_tlbc, ob_type, uni_ascii_size;
    int32_t interp_threads_head, gil_locked, gil_last_holder, co_firsttraceable;
    uint32_t uni_kind_shift;
    uint64_t tag_mask;
} expect;

/* Values decoded from the real binaries (see the internals reference). */
static const expect expected[] = {
    {"3.13", 13, false, 72, FPI_OFF_NONE, 160, 232, FPI_OFF_NONE, 70, FPI_OFF_NONE, 128, 200, FPI_OFF_NONE, 8, 40, 7344, 16, 8, 184, 2, 0},
    {"3.13-dbg", 13, false, 72, FPI_OFF_NONE, 160, 232, FPI_OFF_NONE, 70, FPI_OFF_NONE, 128, 200, FPI_OFF_NONE, 8, 40, 7344, 16, 8, 184, 2, 0},
    {"3.13.0-pyenv", 13, false, 72, FPI_OFF_NONE, 160, 232, FPI_OFF_NONE, 70, FPI_OFF_NONE, 128, 200, FPI_OFF_NONE, 8, 40, 7344, 16, 8, 184, 2, 0},
    {"3.13t", 13, true, 72, FPI_OFF_NONE, 160, 232, FPI_OFF_NONE, 70, FPI_OFF_NONE, 144, 216, FPI_OFF_NONE, 24, 56, 7344, 24, 16, 200, 2, 0},
    {"3.14", 14, false, 72, FPI_OFF_NONE, 160, 232, 36, 74, FPI_OFF_NONE, 128, 208, FPI_OFF_NONE, 8, 40, 7344, 16, 8, 192, 2, 3},
    {"3.14-dbg", 14, false, 72, FPI_OFF_NONE, 160, 232, 36, 74, FPI_OFF_NONE, 128, 208, FPI_OFF_NONE, 8, 40, 7344, 16, 8, 192, 2, 3},
    {"3.15", 15, false, 72, 80, 184, 256, 36, 74, FPI_OFF_NONE, 128, 208, FPI_OFF_NONE, 8, 40, 7336, 16, 8, 192, 2, 3},
    {"3.15-dbg", 15, false, 72, 80, 184, 256, 36, 74, FPI_OFF_NONE, 128, 208, FPI_OFF_NONE, 8, 40, 7336, 16, 8, 192, 2, 3},
    /* 3.14t and 3.15t: tables instantiated from the headers (gen_debug_offsets.c) */
    {"3.14t", 14, true, 72, FPI_OFF_NONE, 160, 232, 36, 78, 72, 144, 232, 224, 24, 56, 7344, 24, 16, 208, 8, 1},
    {"3.15t", 15, true, 72, 80, 184, 256, 36, 78, 72, 144, 232, 224, 24, 56, 7336, 24, 16, 208, 8, 3},
};

static void test_real_tables(void **state)
{
    (void)state;
    static uint8_t t[TABLE_BYTES];
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
        const expect *e = &expected[i];
        load(e->id, t);
        fpi_layout l;
        fpi_errbuf eb = {{0}};
        int rc = fpi_debug_offsets_parse(t, sizeof t, &l, &eb);
        if (rc)
            fail_msg("%s: %s", e->id, eb.msg);
        assert_int_equal(l.minor, e->minor);
        assert_int_equal(l.free_threaded, e->ft);
        assert_int_equal(l.ts_current_frame, e->ts_current_frame);
        assert_int_equal(l.ts_base_frame, e->ts_base_frame);
        assert_int_equal(l.ts_native_thread_id, e->ts_native_thread_id);
        assert_int_equal(l.ts_datastack_chunk, e->ts_datastack_chunk);
        assert_int_equal(l.ts_holds_gil, e->ts_holds_gil);
        assert_int_equal(l.fr_owner, e->fr_owner);
        assert_int_equal(l.fr_tlbc_index, e->fr_tlbc_index);
        assert_int_equal(l.co_qualname, e->co_qualname);
        assert_int_equal(l.co_code_adaptive, e->co_code_adaptive);
        assert_int_equal(l.co_tlbc, e->co_tlbc);
        assert_int_equal(l.ob_type, e->ob_type);
        assert_int_equal(l.uni_ascii_size, e->uni_ascii_size);
        assert_int_equal(l.interp_threads_head, e->interp_threads_head);
        assert_int_equal(l.gil_locked, e->gil_locked);
        assert_int_equal(l.gil_last_holder, e->gil_last_holder);
        assert_int_equal(l.co_firsttraceable, e->co_firsttraceable);
        assert_int_equal(l.uni_kind_shift, e->uni_kind_shift);
        assert_int_equal(l.executable_tag_mask, e->tag_mask);
    }
}

static void test_bad_cookie(void **state)
{
    (void)state;
    static uint8_t t[TABLE_BYTES];
    load("3.15", t);
    t[0] = 'X';
    fpi_layout l;
    assert_int_equal(fpi_debug_offsets_parse(t, sizeof t, &l, NULL), FP_E_NOT_PYTHON);
}

static void test_versions(void **state)
{
    (void)state;
    static uint8_t t[TABLE_BYTES];
    fpi_layout l;
    fpi_errbuf eb = {{0}};
    load("3.15", t);
    put_u64(t, 8, 0x031000f0); /* 3.16 */
    assert_int_equal(fpi_debug_offsets_parse(t, sizeof t, &l, &eb), FP_E_UNSUPPORTED);
    assert_non_null(strstr(eb.msg, "3.16: not supported"));
    put_u64(t, 8, 0x030c00f0); /* 3.12 never had the table */
    assert_int_equal(fpi_debug_offsets_parse(t, sizeof t, &l, &eb), FP_E_CORRUPT);
    load("3.15", t);
    put_u64(t, 16, 7); /* free_threaded must be 0 or 1 */
    assert_int_equal(fpi_debug_offsets_parse(t, sizeof t, &l, &eb), FP_E_CORRUPT);
    load("3.14", t);
    assert_int_equal(fpi_debug_offsets_parse(t, FPI_DEBUG_OFFSETS_SIZE_314 - 8, &l, &eb), FP_E_CORRUPT);
}

/* Positions (3.15 table) of fields the walker uses, and what breaks them. */
static const struct { size_t pos; uint64_t value; const char *what; } corruptions_315[] = {
    {176, 0, "thread_state.size = 0"},
    {176, 1u << 30, "thread_state.size huge"},
    {208, 100000, "current_frame outside the thread state"},
    {216, 887, "base_frame straddles the end"},
    {256, 0xffffffffffffffffull, "datastack_chunk = -1"},
    {312, 0, "interpreter_frame.size = 0"},
    {352, 88, "owner at the end of the frame"},
    {376, 9000, "code_object.size beyond the bound"},
    {400, 4000, "qualname outside the code object"},
    {448, 100000, "co_code_adaptive beyond the bound"},
    {472, 64, "ob_type outside PyObject"},
    {736, 4, "asciiobject_size smaller than state"},
    {40, 1u << 30, "interpreters_head beyond the runtime"},
    {144, 5000000, "GIL locked field out of the interpreter"},
};

static void test_corruptions(void **state)
{
    (void)state;
    static uint8_t t[TABLE_BYTES];
    for (size_t i = 0; i < sizeof corruptions_315 / sizeof corruptions_315[0]; i++) {
        load("3.15", t);
        put_u64(t, corruptions_315[i].pos, corruptions_315[i].value);
        fpi_layout l;
        fpi_errbuf eb = {{0}};
        int rc = fpi_debug_offsets_parse(t, sizeof t, &l, &eb);
        if (rc != FP_E_CORRUPT)
            fail_msg("%s: expected FP_E_CORRUPT, got %d (%s)", corruptions_315[i].what, rc, eb.msg);
    }
}

/* Every single 8-byte word of every real table set to an extreme value:
 * the parser must accept or reject, and whatever it accepts must keep every
 * used thread-state and frame field inside its structure. */
static void test_every_word(void **state)
{
    (void)state;
    static uint8_t t[TABLE_BYTES];
    static const uint64_t extremes[] = {0, 1, 0x7fffffff, 0xffffffffffffffffull};
    static const char *const ids[] = {"3.13", "3.13t", "3.14", "3.14t", "3.15", "3.15t"};
    size_t checked = 0;
    for (size_t k = 0; k < sizeof ids / sizeof ids[0]; k++) {
        for (size_t pos = 24; pos < FPI_DEBUG_OFFSETS_SIZE_315; pos += 8) {
            for (size_t x = 0; x < sizeof extremes / sizeof extremes[0]; x++) {
                load(ids[k], t);
                put_u64(t, pos, extremes[x]);
                fpi_layout l;
                if (fpi_debug_offsets_parse(t, sizeof t, &l, NULL) == FP_OK) {
                    assert_true(l.ts_current_frame + 8 <= l.ts_size);
                    assert_true(l.ts_datastack_chunk + 8 <= l.ts_size);
                    assert_true(l.fr_owner + 1 <= l.fr_size);
                    assert_true(l.fr_previous + 8 <= l.fr_size);
                    assert_true(l.co_qualname + 8 <= l.co_code_adaptive);
                    assert_true(l.co_code_adaptive <= l.co_size);
                }
                checked++;
            }
        }
    }
    print_message("# %zu corrupted tables checked\n", checked);
}

/* The built-in 3.11/3.12 tables obey the same bounds as parsed ones. */
static void test_builtin_layouts_check(void **state)
{
    (void)state;
    char err[256] = "";
    assert_int_equal(fpi_layout_check(fpi_layout_builtin_311(), err, sizeof err), FP_OK);
    assert_int_equal(fpi_layout_check(fpi_layout_builtin_312(), err, sizeof err), FP_OK);
    fpi_layout bad = *fpi_layout_builtin_312();
    bad.co_qualname = bad.co_code_adaptive; /* past the copied header */
    assert_int_equal(fpi_layout_check(&bad, err, sizeof err), FP_E_CORRUPT);
    assert_non_null(strstr(err, "co_qualname"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_tables),
        cmocka_unit_test(test_bad_cookie),
        cmocka_unit_test(test_versions),
        cmocka_unit_test(test_corruptions),
        cmocka_unit_test(test_every_word),
        cmocka_unit_test(test_builtin_layouts_check),
    };
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
