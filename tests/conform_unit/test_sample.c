/* test_sample.c — the harness-owned sample: string storage across
 * blocks and resets, thread lookup over several interpreters, the
 * --inject-fault faults, field names and cf_fields_parse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "conform.h"
#include "cu_helpers.h"
#include "sample.h"

#define BLOCK_BYTES 65536u     /* one string block of sample.c */
#define BIG (BLOCK_BYTES / 2u + 100u) /* two of these do not fit in one block */
#define HUGE (BLOCK_BYTES + 1000u)    /* larger than a block */
#define BAD_LEN 32u

static char *filled(size_t n, char c)
{
    char *s = malloc(n + 1);
    assert_non_null(s);
    memset(s, c, n);
    s[n] = '\0';
    return s;
}

static void test_intern_across_blocks(void **state)
{
    (void)state;
    cf_sample s;
    cf_sample_init(&s);
    char *a = filled(BIG, 'a'), *b = filled(BIG, 'b'), *h = filled(HUGE, 'h');
    const char *ia = cf_sample_intern(&s, a, BIG);
    const char *ib = cf_sample_intern(&s, b, BIG);
    const char *ih = cf_sample_intern(&s, h, HUGE);
    const char *small = cf_sample_intern(&s, "park\0ignored", 4);
    assert_non_null(ia);
    assert_non_null(ib);
    assert_non_null(ih);
    /* Earlier strings stay valid when a new block starts. */
    assert_string_equal(ia, a);
    assert_string_equal(ib, b);
    assert_string_equal(ih, h);
    assert_string_equal(small, "park");
    const char *empty = cf_sample_intern(&s, "", 0);
    assert_string_equal(empty, "");
    assert_null(cf_sample_intern(&s, "x", SIZE_MAX));

    /* A reset keeps only the newest block and empties it. */
    cf_thread *t = cu_add_thread(&s, 1, 2, NULL, 0);
    assert_non_null(t);
    cf_sample_reset(&s, CF_FIELD_LINE);
    assert_int_equal(s.fields, CF_FIELD_LINE);
    assert_int_equal(s.nthreads, 0);
    assert_int_equal(s.nframes, 0);
    assert_non_null(s.strings);
    const char *again = cf_sample_intern(&s, b, BIG);
    assert_string_equal(again, b);
    assert_string_equal(cf_sample_intern(&s, "after", 5), "after");
    free(a);
    free(b);
    free(h);
    cf_sample_free(&s);
    assert_null(s.strings);
    assert_null(s.threads);
}

static void test_add_frame_needs_thread(void **state)
{
    (void)state;
    cf_sample s;
    cf_sample_init(&s);
    cf_frame f = cu_frame("f", "a.py", 1, 0, 1);
    assert_int_equal(cf_sample_add_frame(&s, &f), CF_E_FORMAT);
    cu_add_thread(&s, 1, 2, &f, 1);
    cu_add_thread(&s, 3, 4, NULL, 0);
    assert_int_equal(cf_sample_add_frame(&s, &f), CF_OK);
    assert_int_equal(s.threads[0].first, 0);
    assert_int_equal(s.threads[0].count, 1);
    assert_int_equal(s.threads[1].first, 1);
    assert_int_equal(s.threads[1].count, 1);
    cf_sample_free(&s);
}

/* 3.11 and 3.12 give a sub-interpreter's thread state the native id of the
 * thread that created it: the main interpreter's one is found. */
static void test_find_several_interpreters(void **state)
{
    (void)state;
    cf_sample s;
    cf_sample_init(&s);
    s.fields = CF_FIELDS_ALL;
    cu_add_thread(&s, 7, 70, NULL, 0)->interp_id = 2;
    cu_add_thread(&s, 7, 71, NULL, 0)->interp_id = 0;
    cu_add_thread(&s, 7, 72, NULL, 0)->interp_id = 1;
    cu_add_thread(&s, 8, 80, NULL, 0)->interp_id = 1;
    assert_ptr_equal(cf_sample_find(&s, 7), &s.threads[1]);
    assert_ptr_equal(cf_sample_find(&s, 8), &s.threads[3]);
    assert_null(cf_sample_find(&s, 70));
    /* Without native ids, threads are found by thread id. */
    s.fields = CF_FIELDS_ALL & ~CF_FIELD_NATIVE_ID;
    assert_ptr_equal(cf_sample_find(&s, 72), &s.threads[2]);
    assert_null(cf_sample_find(&s, 7));
    cf_sample_free(&s);
}

static void test_inject(void **state)
{
    (void)state;
    cf_sample s;
    cf_sample_init(&s);
    s.fields = CF_FIELDS_ALL;
    cf_frame fr[3] = {cu_frame("a", "x.py", 5, 0, 1), cu_frame("b", "x.py", 9, 0, 1), cu_frame("c", "x.py", 1, 0, 1)};
    cu_add_thread(&s, 10, 11, fr, 2);
    cu_add_thread(&s, 20, 21, fr + 2, 1);
    cu_add_thread(&s, 30, 31, NULL, 0);

    cf_sample_inject(&s, CF_FAULT_SHIFT_LINE, 20);
    assert_int_equal(s.frames[2].line, 2);
    assert_int_equal(s.frames[2].end_line, 1);
    assert_int_equal(s.frames[0].line, 5);

    cf_sample_inject(&s, CF_FAULT_DROP_FRAME, 10);
    assert_int_equal(s.threads[0].first, 1);
    assert_int_equal(s.threads[0].count, 1);
    assert_string_equal(s.frames[s.threads[0].first].function, "b");

    /* Absent threads, empty stacks, unknown lines and no fault: no-ops. */
    cf_sample_inject(&s, CF_FAULT_DROP_FRAME, 99);
    cf_sample_inject(&s, CF_FAULT_DROP_FRAME, 30);
    assert_int_equal(s.threads[2].count, 0);
    assert_int_equal(s.threads[2].first, 3);
    s.frames[1].line = CF_POS_NONE;
    cf_sample_inject(&s, CF_FAULT_SHIFT_LINE, 10);
    assert_int_equal(s.frames[1].line, CF_POS_NONE);
    cf_sample_inject(&s, CF_FAULT_NONE, 20);
    assert_int_equal(s.frames[2].line, 2);
    assert_int_equal(s.threads[1].count, 1);
    cf_sample_free(&s);
}

/* A copy owns its strings: it survives the source's reset and reuse. */
static void test_copy(void **state)
{
    (void)state;
    cf_sample src, dst;
    cf_sample_init(&src);
    cf_sample_init(&dst);
    cf_sample_reset(&src, CF_FIELDS_ALL);
    char fn[] = "outer", file[] = "/x.py", err[] = "torn";
    cf_frame f = cu_frame(fn, file, 7, 0, 3);
    cu_add_thread(&src, 10, 1, &f, 1)->main = true;
    cu_add_thread(&src, 11, 2, NULL, 0)->error = err;
    assert_int_equal(cf_sample_copy(&dst, &src), CF_OK);
    cf_sample_reset(&src, 0);
    strcpy(fn, "XXXXX");
    strcpy(err, "YYYY");
    assert_int_equal(dst.fields, CF_FIELDS_ALL);
    assert_int_equal(dst.nthreads, 2);
    assert_int_equal(dst.nframes, 1);
    assert_true(dst.threads[0].main);
    assert_int_equal(dst.threads[0].native_id, 10);
    assert_string_equal(dst.frames[0].function, "outer");
    assert_string_equal(dst.frames[0].file, "/x.py");
    assert_int_equal(dst.frames[0].line, 7);
    assert_int_equal(dst.threads[1].count, 0);
    assert_string_equal(dst.threads[1].error, "torn");
    cf_sample_free(&src);
    cf_sample_free(&dst);
}

static void test_field_names(void **state)
{
    (void)state;
    assert_string_equal(cf_field_name(CF_FIELD_FUNCTION), "function");
    assert_string_equal(cf_field_name(CF_FIELD_END_COLUMN), "end_column");
    assert_string_equal(cf_field_name(CF_FIELD_ALL_THREADS), "all_threads");
    assert_null(cf_field_name(0));
    assert_null(cf_field_name(CF_FIELD_LINE | CF_FIELD_FILE));
    assert_null(cf_field_name(1u << CF_FIELD_COUNT));
}

static void test_fields_parse(void **state)
{
    (void)state;
    unsigned mask = 0;
    char bad[BAD_LEN] = "";
    assert_int_equal(cf_fields_parse("function,line,native_id", &mask, bad, sizeof bad), 0);
    assert_int_equal(mask, CF_FIELD_FUNCTION | CF_FIELD_LINE | CF_FIELD_NATIVE_ID);
    assert_int_equal(cf_fields_parse("", &mask, bad, sizeof bad), 0);
    assert_int_equal(mask, 0);
    assert_int_equal(cf_fields_parse("kind,", &mask, bad, sizeof bad), 0);
    assert_int_equal(mask, CF_FIELD_KIND);
    assert_int_equal(cf_fields_parse("function,name,file,line,end_line,column,end_column,kind,native_id,"
                                     "thread_id,main,exception,all_threads",
                                     &mask, NULL, 0),
                     0);
    assert_int_equal(mask, CF_FIELDS_ALL);

    mask = CF_FIELD_KIND;
    assert_int_equal(cf_fields_parse("line,lines", &mask, bad, sizeof bad), -1);
    assert_string_equal(bad, "lines");
    assert_int_equal(mask, CF_FIELD_KIND);
    assert_int_equal(cf_fields_parse("lin,line", &mask, bad, sizeof bad), -1);
    assert_string_equal(bad, "lin");
    assert_int_equal(cf_fields_parse("line,,file", &mask, bad, sizeof bad), -1);
    assert_string_equal(bad, "");
    assert_int_equal(cf_fields_parse("Line", &mask, NULL, 0), -1);
    char tiny[4];
    assert_int_equal(cf_fields_parse("function_name", &mask, tiny, sizeof tiny), -1);
    assert_string_equal(tiny, "fun");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_intern_across_blocks),
        cmocka_unit_test(test_add_frame_needs_thread),
        cmocka_unit_test(test_find_several_interpreters),
        cmocka_unit_test(test_inject),
        cmocka_unit_test(test_copy),
        cmocka_unit_test(test_field_names),
        cmocka_unit_test(test_fields_parse),
    };
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests_name("conform_unit_sample", tests, NULL, NULL);
}
