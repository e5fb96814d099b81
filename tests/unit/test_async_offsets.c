/* test_async_offsets.c — asyncio's C module layout (_Py_AsyncioModuleDebugOffsets,
 * async_offsets.c) and the 3.14+ debug-table fields its graph reads through:
 * real tables of every 3.14+ GIL build of the matrix parse to the values
 * decoded from their binaries, and every corruption the parser guards
 * against is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "async_offsets.h"
#include "debug_offsets.h"
#include "frameproof/frameproof.h"

#define TABLE_BYTES 8192

typedef struct build {
    const char *id;
    uint64_t asyncio[13]; /* the .AsyncioDebug section of the build, word by word */
} build;

/* Sections decoded from Debian's builds (3.14.10, 3.15.2, their -dbg). */
static const build builds[] = {
    {"3.14", {168, 136, 96, 108, 109, 128, 152, 225864, 10880, 936, 864, 872, 880}},
    {"3.14-dbg", {168, 136, 96, 108, 109, 128, 152, 225880, 10888, 936, 864, 872, 880}},
    {"3.15", {168, 136, 96, 108, 109, 128, 152, 226240, 10856, 1104, 1024, 1032, 1048}},
    {"3.15-dbg", {168, 136, 96, 108, 109, 128, 152, 226256, 10864, 1104, 1024, 1032, 1048}},
};

static void load_layout(const char *id, fpi_layout *l)
{
    const char *d = getenv("FP_TEST_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/debug_offsets/%s.bin", d ? d : "tests/data", id);
    static uint8_t buf[TABLE_BYTES];
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    assert_int_equal(n, sizeof buf);
    fpi_errbuf eb = {{0}};
    if (fpi_debug_offsets_parse(buf, sizeof buf, l, &eb) != FP_OK)
        fail_msg("%s: %s", id, eb.msg);
}

static void to_bytes(const uint64_t *w, uint8_t *t)
{
    memcpy(t, w, FPI_ASYNC_TABLE_SIZE);
}

static void test_layout_fields(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof builds / sizeof builds[0]; i++) {
        fpi_layout l;
        load_layout(builds[i].id, &l);
        assert_int_equal(l.tp_flags, 168);
        assert_int_equal(l.set_used, 24);
        assert_int_equal(l.set_table, 40);
        assert_int_equal(l.set_mask, 32);
        assert_int_equal(l.long_lv_tag, 16);
        assert_int_equal(l.long_digits, 24);
        assert_int_equal(l.gen_iframe, 72);
        assert_int_equal(l.gen_frame_state, 67);
    }
    /* 3.13: no generator layout in its table; the type flags (built in)
     * and sys.modules (from the table) the 3.11-3.13 reader follows */
    static const struct { const char *id; int32_t flags, modules; } before[] = {
        {"3.13", 168, 7656}, {"3.13-dbg", 168, 7656}, {"3.13t", 184, 7664},
    };
    for (size_t i = 0; i < sizeof before / sizeof before[0]; i++) {
        fpi_layout l;
        load_layout(before[i].id, &l);
        assert_int_equal(l.gen_iframe, FPI_OFF_NONE);
        assert_int_equal(l.tp_flags, before[i].flags);
        assert_int_equal(l.interp_modules, before[i].modules);
    }
}

static void test_real_sections(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof builds / sizeof builds[0]; i++) {
        fpi_layout l;
        load_layout(builds[i].id, &l);
        uint8_t t[FPI_ASYNC_TABLE_SIZE];
        to_bytes(builds[i].asyncio, t);
        fpi_async_offsets o;
        fpi_errbuf eb = {{0}};
        if (fpi_async_offsets_parse(t, sizeof t, &l, &o, &eb) != FP_OK)
            fail_msg("%s: %s", builds[i].id, eb.msg);
        assert_int_equal(o.task_size, 168);
        assert_int_equal(o.task_state, 104);
        assert_int_equal(o.task_node, 152);
        assert_int_equal(o.interp_tasks_head, builds[i].asyncio[8]);
        assert_int_equal(o.ts_tasks_head, builds[i].asyncio[12]);
    }
}

/* Each corruption: the word at index `word` set to `value`. */
static const struct { unsigned word; uint64_t value; const char *what; } corruptions[] = {
    {0, 0, "task size 0"},
    {0, FPI_MAX_SMALL_STRUCT + 1, "task size over the bound"},
    {1, 168, "task name at the task's end"},
    {6, 160, "task node past the task's end"},
    {3, 2, "is_task with no room for the state before it"},
    {4, 110, "awaited_by_is_set not right after is_task"},
    {7, 225000, "interpreter size unlike the runtime's"},
    {8, 225864, "interpreter list at the interpreter's end"},
    {9, 100, "thread state smaller than PyThreadState"},
    {12, 930, "thread list past the thread state's end"},
    {11, ~0ull, "running task at an absurd offset"},
};

static void test_corrupt_sections(void **state)
{
    (void)state;
    fpi_layout l;
    load_layout("3.14", &l);
    for (size_t i = 0; i < sizeof corruptions / sizeof corruptions[0]; i++) {
        uint64_t w[13];
        memcpy(w, builds[0].asyncio, sizeof w);
        w[corruptions[i].word] = corruptions[i].value;
        uint8_t t[FPI_ASYNC_TABLE_SIZE];
        to_bytes(w, t);
        fpi_async_offsets o;
        fpi_errbuf eb = {{0}};
        if (fpi_async_offsets_parse(t, sizeof t, &l, &o, &eb) != FP_E_CORRUPT)
            fail_msg("accepted: %s", corruptions[i].what);
        assert_non_null(strstr(eb.msg, "asyncio debug offsets"));
    }
    uint8_t t[FPI_ASYNC_TABLE_SIZE];
    to_bytes(builds[0].asyncio, t);
    fpi_async_offsets o;
    fpi_errbuf eb = {{0}};
    assert_int_equal(fpi_async_offsets_parse(t, sizeof t - 1, &l, &o, &eb), FP_E_CORRUPT);
}

/* The debug table's new fields are validated too: a coroutine frame at or
 * before its state byte, or digits before an int's tag, are refused. */
static void test_corrupt_debug_fields(void **state)
{
    (void)state;
    const char *d = getenv("FP_TEST_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/debug_offsets/3.15.bin", d ? d : "tests/data");
    static uint8_t buf[TABLE_BYTES];
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fread(buf, 1, sizeof buf, f), sizeof buf);
    fclose(f);
    static const struct { size_t pos; uint64_t value; } bad[] = {
        {808, 64},   /* gi_iframe before gi_frame_state */
        {808, 4096}, /* gi_iframe past the generator */
        {808, 76},   /* gi_iframe unaligned */
        {680, 16},   /* ob_digit on lv_tag */
        {600, 4000}, /* set used past the set */
        {504, 4096}, /* tp_flags past the type */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint8_t t[TABLE_BYTES];
        memcpy(t, buf, sizeof t);
        memcpy(t + bad[i].pos, &bad[i].value, 8);
        fpi_layout l;
        fpi_errbuf eb = {{0}};
        if (fpi_debug_offsets_parse(t, sizeof t, &l, &eb) != FP_E_CORRUPT)
            fail_msg("accepted: byte %zu = %llu", bad[i].pos, (unsigned long long)bad[i].value);
    }
}

int main(void)
{
    cmocka_set_message_output(CM_OUTPUT_TAP);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_fields),
        cmocka_unit_test(test_real_sections),
        cmocka_unit_test(test_corrupt_sections),
        cmocka_unit_test(test_corrupt_debug_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
