/* test_compare.c — cf_compare on hand-built truths and samples: every
 * mismatch type with its exact object, the frame alignment, the fields an
 * unwinder does not report, the per-thread listing cap; cf_frame_describe
 * and cf_frame_to_json over several field masks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "compare.h"
#include "conform.h"
#include "cu_helpers.h"

#define MAIN_NID 100u
#define MAIN_TID 0x1000u
#define CHANNEL_NID 101u       /* the channel thread: listed in all_threads, never parked */
#define WORKER_NID 200u
#define WORKER_TID 0x2000u
#define STRANGER_NID 999u
#define NFRAMES 4u
#define DEEP 20u               /* frames of the listing-cap test (> CF_MAX_MISMATCHES_PER_THREAD) */
#define DEEP_NAME 8u

/* The expected JSON of a python frame with every field reported. */
#define FJ(fn, file, l, el, c, ec)                                                                                 \
    "{\"function\":\"" fn "\",\"name\":\"" fn "\",\"file\":\"" file "\",\"line\":" #l ",\"end_line\":" #el        \
    ",\"column\":" #c ",\"end_column\":" #ec ",\"kind\":\"python\"}"
#define PARK_J FJ("park", "fpgt.py", 186, 186, 4, 18)
#define INNER_J FJ("inner", "app.py", 10, 10, 4, 16)

/* A main thread parked in park() <- inner() <- outer() <- <module>; a
 * worker parked in outer() and the channel thread for the tests that
 * add them. */
typedef struct fx {
    cf_frame e[NFRAMES];
    cf_truth_thread tt[2];
    uint64_t all[2];       /* all_threads: the main thread, then what a test adds */
    cf_truth truth;
    cf_sample s;
    json_object *out;
    size_t count;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    f->e[0] = cu_frame("park", "fpgt.py", 186, 4, 14);
    f->e[1] = cu_frame("inner", "app.py", 10, 4, 12);
    f->e[2] = cu_frame("outer", "app.py", 20, 8, 10);
    f->e[3] = cu_frame("<module>", "app.py", 30, 0, 7);
    f->tt[0] = (cf_truth_thread){.native_id = MAIN_NID, .thread_id = MAIN_TID, .main = true,
                                 .frames = f->e, .nframes = NFRAMES};
    f->tt[1] = (cf_truth_thread){.native_id = WORKER_NID, .thread_id = WORKER_TID, .frames = f->e + 2,
                                 .nframes = 2};
    f->all[0] = MAIN_NID;
    f->truth = (cf_truth){.name = "cp", .seq = 0, .threads = f->tt, .nthreads = 1, .all_ids = f->all, .nall = 1};
    cf_sample_init(&f->s);
    f->s.fields = CF_FIELDS_ALL;
    f->out = json_object_new_array();
    *state = f;
    return f->out ? 0 : -1;
}

static int teardown(void **state)
{
    fx *f = *state;
    cf_sample_free(&f->s);
    json_object_put(f->out);
    free(f);
    return 0;
}

/* The main thread as the truth has it (main, not handling an exception). */
static cf_thread *add_main(fx *f, const cf_frame *frames, size_t n)
{
    cf_thread *t = cu_add_thread(&f->s, MAIN_NID, MAIN_TID, frames, n);
    t->main = true;
    t->exception = CF_NO;
    return t;
}

static void compare(fx *f, const char *expected)
{
    assert_int_equal(cf_compare(&f->truth, &f->s, f->out, &f->count), CF_OK);
    cu_assert_json(f->out, expected);
}

static void test_equal(void **state)
{
    fx *f = *state;
    add_main(f, f->e, NFRAMES);
    compare(f, "[]");
    assert_int_equal(f->count, 0);
}

static void test_dropped_innermost(void **state)
{
    fx *f = *state;
    add_main(f, f->e, NFRAMES);
    cf_sample_inject(&f->s, CF_FAULT_DROP_FRAME, MAIN_NID);
    compare(f, "[{\"type\":\"frame_missing\",\"thread\":100,"
               "\"message\":\"thread 100 (main): missing frame 0: park (fpgt.py:186:4-18)\","
               "\"index\":0,\"expected\":" PARK_J "}]");
    assert_int_equal(f->count, 1);
}

static void test_shifted_line(void **state)
{
    fx *f = *state;
    add_main(f, f->e, NFRAMES);
    cf_sample_inject(&f->s, CF_FAULT_SHIFT_LINE, MAIN_NID);
    compare(f, "[{\"type\":\"frame_differs\",\"thread\":100,"
               "\"message\":\"thread 100 (main): frame 0: expected park (fpgt.py:186:4-18) "
               "got park (fpgt.py:187:4-186:18) (differs: line 186 vs 187)\","
               "\"index\":0,\"actual_index\":0,\"expected\":" PARK_J
               ",\"actual\":" FJ("park", "fpgt.py", 187, 186, 4, 18) ",\"fields\":[\"line\"]}]");
    assert_int_equal(f->count, 1);
}

static void test_wrong_file(void **state)
{
    fx *f = *state;
    cf_frame a[NFRAMES];
    memcpy(a, f->e, sizeof a);
    a[2].file = "lib.py";
    add_main(f, a, NFRAMES);
    compare(f, "[{\"type\":\"frame_differs\",\"thread\":100,"
               "\"message\":\"thread 100 (main): frame 2: expected outer (app.py:20:8-18) "
               "got outer (lib.py:20:8-18) (differs: file \\\"app.py\\\" vs \\\"lib.py\\\")\","
               "\"index\":2,\"actual_index\":2,\"expected\":" FJ("outer", "app.py", 20, 20, 8, 18)
               ",\"actual\":" FJ("outer", "lib.py", 20, 20, 8, 18) ",\"fields\":[\"file\"]}]");
    assert_int_equal(f->count, 1);
}

static void test_extra_outer_frame(void **state)
{
    fx *f = *state;
    cf_frame a[NFRAMES + 1];
    memcpy(a, f->e, sizeof f->e);
    a[NFRAMES] = cu_frame("runner", "boot.py", 5, 0, 9);
    add_main(f, a, NFRAMES + 1);
    compare(f, "[{\"type\":\"frame_extra\",\"thread\":100,"
               "\"message\":\"thread 100 (main): extra frame 4: runner (boot.py:5:0-9)\","
               "\"actual_index\":4,\"actual\":" FJ("runner", "boot.py", 5, 5, 0, 9) "}]");
    assert_int_equal(f->count, 1);
}

/* park, helper, inner (one line lower), outer, <module>: the alignment
 * pairs inner with inner and reports helper as extra, not every frame
 * from index 1 on as different. */
static void test_inserted_middle_frame(void **state)
{
    fx *f = *state;
    cf_frame a[NFRAMES + 1] = {f->e[0], cu_frame("helper", "app.py", 15, 4, 6), cu_frame("inner", "app.py", 11, 4, 12),
                               f->e[2], f->e[3]};
    add_main(f, a, NFRAMES + 1);
    compare(f, "[{\"type\":\"frame_extra\",\"thread\":100,"
               "\"message\":\"thread 100 (main): extra frame 1: helper (app.py:15:4-10)\","
               "\"actual_index\":1,\"actual\":" FJ("helper", "app.py", 15, 15, 4, 10) "},"
               "{\"type\":\"frame_differs\",\"thread\":100,"
               "\"message\":\"thread 100 (main): frame 1: expected inner (app.py:10:4-16) got inner "
               "(app.py:11:4-16) (sampled frame 2) (differs: line 10 vs 11 end_line 10 vs 11)\","
               "\"index\":1,\"actual_index\":2,\"expected\":" INNER_J
               ",\"actual\":" FJ("inner", "app.py", 11, 11, 4, 16) ",\"fields\":[\"line\",\"end_line\"]}]");
    assert_int_equal(f->count, 2);
}

static void test_missing_thread(void **state)
{
    fx *f = *state;
    f->truth.nthreads = 2;
    f->all[1] = WORKER_NID;
    f->truth.nall = 2;
    add_main(f, f->e, NFRAMES);
    compare(f, "[{\"type\":\"thread_missing\",\"thread\":200,"
               "\"message\":\"thread 200 missing (parked at the checkpoint with 2 frames)\"}]");
    assert_int_equal(f->count, 1);
}

static void test_missing_listed_thread(void **state)
{
    fx *f = *state;
    f->all[1] = CHANNEL_NID;
    f->truth.nall = 2;
    add_main(f, f->e, NFRAMES);
    compare(f, "[{\"type\":\"thread_missing\",\"thread\":101,"
               "\"message\":\"thread 101 missing (listed in all_threads)\"}]");
    assert_int_equal(f->count, 1);
}

static void test_extra_thread(void **state)
{
    fx *f = *state;
    f->all[1] = CHANNEL_NID;
    f->truth.nall = 2;
    add_main(f, f->e, NFRAMES);
    cu_add_thread(&f->s, CHANNEL_NID, 0, NULL, 0);
    cu_add_thread(&f->s, STRANGER_NID, 0, f->e, NFRAMES);
    cu_add_thread(&f->s, STRANGER_NID + 1, 0, f->e + 3, 1);
    compare(f, "[{\"type\":\"thread_extra\",\"thread\":999,"
               "\"message\":\"thread 999 extra (not in all_threads; 4 frames: park (fpgt.py:186:4-18) <- "
               "inner (app.py:10:4-16) <- outer (app.py:20:8-18) <- ...)\"},"
               "{\"type\":\"thread_extra\",\"thread\":1000,"
               "\"message\":\"thread 1000 extra (not in all_threads; 1 frame: <module> (app.py:30:0-7))\"}]");
    assert_int_equal(f->count, 2);
}

/* Unwinders that list only some threads, or without native ids, are not
 * asked for the threads of all_threads. */
static void test_extra_thread_needs_all_threads_and_native_ids(void **state)
{
    fx *f = *state;
    add_main(f, f->e, NFRAMES);
    cu_add_thread(&f->s, STRANGER_NID, 0, f->e, 1);
    f->s.fields = CF_FIELDS_ALL & ~CF_FIELD_ALL_THREADS;
    compare(f, "[]");
    assert_int_equal(f->count, 0);
    f->s.fields = CF_FIELDS_ALL & ~CF_FIELD_NATIVE_ID;
    compare(f, "[]");
    assert_int_equal(f->count, 0);
}

static void test_walk_error(void **state)
{
    fx *f = *state;
    add_main(f, NULL, 0)->error = "cannot read frame at 0x7f00";
    compare(f, "[{\"type\":\"walk_error\",\"thread\":100,"
               "\"message\":\"thread 100 (main): stack walk failed: cannot read frame at 0x7f00\"}]");
    assert_int_equal(f->count, 1);
}

static void test_column_not_reported(void **state)
{
    fx *f = *state;
    cf_frame a[NFRAMES];
    memcpy(a, f->e, sizeof a);
    a[1].column = 5;
    add_main(f, a, NFRAMES);
    compare(f, "[{\"type\":\"frame_differs\",\"thread\":100,"
               "\"message\":\"thread 100 (main): frame 1: expected inner (app.py:10:4-16) got inner "
               "(app.py:10:5-16) (differs: column 4 vs 5)\","
               "\"index\":1,\"actual_index\":1,\"expected\":" INNER_J
               ",\"actual\":" FJ("inner", "app.py", 10, 10, 5, 16) ",\"fields\":[\"column\"]}]");
    json_object_array_del_idx(f->out, 0, 1);
    f->s.fields = CF_FIELDS_ALL & ~CF_FIELD_COLUMN;
    compare(f, "[]");
    assert_int_equal(f->count, 0);
    /* Another difference in that frame: the column is neither compared,
     * described nor written. */
    f->s.frames[1].line = f->s.frames[1].end_line = 12;
    compare(f, "[{\"type\":\"frame_differs\",\"thread\":100,"
               "\"message\":\"thread 100 (main): frame 1: expected inner (app.py:10:?-16) got inner "
               "(app.py:12:?-16) (differs: line 10 vs 12 end_line 10 vs 12)\","
               "\"index\":1,\"actual_index\":1,"
               "\"expected\":{\"function\":\"inner\",\"name\":\"inner\",\"file\":\"app.py\",\"line\":10,"
               "\"end_line\":10,\"end_column\":16,\"kind\":\"python\"},"
               "\"actual\":{\"function\":\"inner\",\"name\":\"inner\",\"file\":\"app.py\",\"line\":12,"
               "\"end_line\":12,\"end_column\":16,\"kind\":\"python\"},"
               "\"fields\":[\"line\",\"end_line\"]}]");
    assert_int_equal(f->count, 1);
}

static void test_matched_on_thread_id_without_native_ids(void **state)
{
    fx *f = *state;
    add_main(f, f->e, NFRAMES)->native_id = 0;
    f->s.fields = CF_FIELDS_ALL & ~CF_FIELD_NATIVE_ID;
    compare(f, "[]");
    assert_int_equal(f->count, 0);
    /* The same sample matched on native ids has no thread 100. */
    f->s.fields = CF_FIELDS_ALL & ~CF_FIELD_ALL_THREADS;
    compare(f, "[{\"type\":\"thread_missing\",\"thread\":100,"
               "\"message\":\"thread 100 (main) missing (parked at the checkpoint with 4 frames)\"}]");
    assert_int_equal(f->count, 1);
}

static void test_thread_fields(void **state)
{
    fx *f = *state;
    cf_thread *t = add_main(f, f->e, NFRAMES);
    t->thread_id = MAIN_TID + 1;
    t->main = false;
    t->exception = CF_YES;
    compare(f, "[{\"type\":\"thread_field\",\"thread\":100,"
               "\"message\":\"thread 100 (main): thread_id expected 0x1000 got 0x1001\","
               "\"field\":\"thread_id\",\"expected_value\":\"0x1000\",\"actual_value\":\"0x1001\"},"
               "{\"type\":\"thread_field\",\"thread\":100,"
               "\"message\":\"thread 100 (main): main expected yes got no\","
               "\"field\":\"main\",\"expected_value\":\"yes\",\"actual_value\":\"no\"},"
               "{\"type\":\"thread_field\",\"thread\":100,"
               "\"message\":\"thread 100 (main): exception expected no got yes\","
               "\"field\":\"exception\",\"expected_value\":\"no\",\"actual_value\":\"yes\"}]");
    assert_int_equal(f->count, 3);
    /* An exception state the unwinder does not know is not compared. */
    json_object_array_del_idx(f->out, 0, 3);
    t->thread_id = MAIN_TID;
    t->main = true;
    t->exception = CF_UNKNOWN;
    compare(f, "[]");
}

static void test_listing_cap(void **state)
{
    fx *f = *state;
    char names[DEEP][DEEP_NAME];
    cf_frame e[DEEP], a[DEEP];
    for (size_t i = 0; i < DEEP; i++) {
        snprintf(names[i], sizeof names[i], "f%zu", i);
        e[i] = cu_frame(names[i], "deep.py", (int32_t)(100 + i), 0, 4);
        a[i] = e[i];
        a[i].line++;
    }
    f->tt[0].frames = e;
    f->tt[0].nframes = DEEP;
    add_main(f, a, DEEP);
    assert_int_equal(cf_compare(&f->truth, &f->s, f->out, &f->count), CF_OK);
    assert_int_equal(f->count, DEEP);
    assert_int_equal(json_object_array_length(f->out), CF_MAX_MISMATCHES_PER_THREAD + 1);
    for (size_t i = 0; i < CF_MAX_MISMATCHES_PER_THREAD; i++) {
        json_object *m = json_object_array_get_idx(f->out, i);
        json_object *idx = json_object_object_get(m, "index");
        assert_string_equal(json_object_get_string(json_object_object_get(m, "type")), "frame_differs");
        assert_int_equal(json_object_get_int64(idx), i);
    }
    cu_assert_json(json_object_array_get_idx(f->out, CF_MAX_MISMATCHES_PER_THREAD),
                   "{\"type\":\"truncated\",\"thread\":100,\"message\":\"thread 100 (main): further frame "
                   "differences not listed (expected 20 frames, got 20)\"}");
}

static void describe_is(const cf_frame *fr, unsigned mask, const char *expected)
{
    cf_strbuf sb;
    cf_sb_init(&sb);
    assert_int_equal(cf_frame_describe(fr, mask, &sb), CF_OK);
    assert_string_equal(cf_sb_str(&sb), expected);
    cf_sb_free(&sb);
}

static const cf_frame GEN = {.function = "Outer.meth", .name = "meth", .file = "app.py", .line = 10, .end_line = 12,
                             .column = 4, .end_column = 9, .kind = CF_KIND_GENERATOR};

static void test_describe(void **state)
{
    (void)state;
    const unsigned where = CF_FIELD_FUNCTION | CF_FIELD_FILE;
    describe_is(&GEN, CF_FIELDS_ALL, "Outer.meth [generator] (app.py:10:4-12:9)");
    describe_is(&GEN, CF_FIELDS_ALL & ~CF_FIELD_KIND, "Outer.meth (app.py:10:4-12:9)");
    describe_is(&GEN, CF_FIELDS_ALL & ~CF_FIELD_FUNCTION, "meth [generator] (app.py:10:4-12:9)");
    describe_is(&GEN, where | CF_FIELD_LINE, "Outer.meth (app.py:10)");
    describe_is(&GEN, where, "Outer.meth (app.py)");
    describe_is(&GEN, CF_FIELD_FUNCTION | CF_FIELD_LINE, "Outer.meth (?:10)");
    describe_is(&GEN, where | CF_FIELD_LINE | CF_FIELD_END_LINE, "Outer.meth (app.py:10:?-12:?)");
    describe_is(&GEN, where | CF_FIELD_LINE | CF_FIELD_END_COLUMN, "Outer.meth (app.py:10:?-9)");
    describe_is(&GEN, 0, "? (?)");

    cf_frame unknown = GEN;
    unknown.kind = CF_KIND_PYTHON;
    unknown.line = unknown.end_line = unknown.column = unknown.end_column = CF_POS_NONE;
    describe_is(&unknown, CF_FIELDS_ALL, "Outer.meth (app.py:?)");
    unknown.line = unknown.end_line = 7;
    describe_is(&unknown, CF_FIELDS_ALL, "Outer.meth (app.py:7:?-?)");

    char longname[CF_NAME_SHOWN + 40];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    cf_frame lf = cu_frame(longname, "a.py", 1, 0, 1);
    char expected[CF_NAME_SHOWN + 64];
    snprintf(expected, sizeof expected, "%.*s...(%zu bytes) (a.py:1)", (int)CF_NAME_SHOWN, longname,
             sizeof longname - 1);
    describe_is(&lf, where | CF_FIELD_LINE, expected);
}

static void to_json_is(const cf_frame *fr, unsigned mask, const char *expected)
{
    json_object *o = cf_frame_to_json(fr, mask);
    assert_non_null(o);
    cu_assert_json(o, expected);
    json_object_put(o);
}

static void test_to_json(void **state)
{
    (void)state;
    to_json_is(&GEN, CF_FIELDS_ALL,
               "{\"function\":\"Outer.meth\",\"name\":\"meth\",\"file\":\"app.py\",\"line\":10,\"end_line\":12,"
               "\"column\":4,\"end_column\":9,\"kind\":\"generator\"}");
    to_json_is(&GEN, CF_FIELD_NAME | CF_FIELD_LINE | CF_FIELD_NATIVE_ID, "{\"name\":\"meth\",\"line\":10}");
    to_json_is(&GEN, 0, "{}");
    cf_frame unknown = GEN;
    unknown.line = unknown.end_line = unknown.column = unknown.end_column = CF_POS_NONE;
    to_json_is(&unknown, CF_FIELD_LINE | CF_FIELD_END_LINE | CF_FIELD_COLUMN | CF_FIELD_END_COLUMN,
               "{\"line\":null,\"end_line\":null,\"column\":null,\"end_column\":null}");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_equal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dropped_innermost, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shifted_line, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_extra_outer_frame, setup, teardown),
        cmocka_unit_test_setup_teardown(test_inserted_middle_frame, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_thread, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_listed_thread, setup, teardown),
        cmocka_unit_test_setup_teardown(test_extra_thread, setup, teardown),
        cmocka_unit_test_setup_teardown(test_extra_thread_needs_all_threads_and_native_ids, setup, teardown),
        cmocka_unit_test_setup_teardown(test_walk_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_column_not_reported, setup, teardown),
        cmocka_unit_test_setup_teardown(test_matched_on_thread_id_without_native_ids, setup, teardown),
        cmocka_unit_test_setup_teardown(test_thread_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(test_listing_cap, setup, teardown),
        cmocka_unit_test(test_describe),
        cmocka_unit_test(test_to_json),
    };
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests_name("conform_unit_compare", tests, NULL, NULL);
}
