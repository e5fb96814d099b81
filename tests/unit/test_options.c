/* test_options.c — fp_options is versioned by its size field
 * (frameproof.h): the library reads the fields a caller's size covers,
 * accepts a larger struct whose extra bytes are zero (the defaults of a
 * newer header's fields) and refuses one that sets any of them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "frameproof/frameproof.h"
#include "session.h"

#define NEWER_EXTRA 32u /* bytes a newer header's fp_options might add */

/* The smallest size a caller can hold: every field of the first layout. */
static size_t first_layout_size(void)
{
    return offsetof(fp_options, pause_torn) + sizeof(bool);
}

static void test_init_sets_size_and_defaults(void **state)
{
    (void)state;
    fp_options o;
    memset(&o, 0xa5, sizeof o);
    assert_int_equal(fp_options_init(&o), FP_OK);
    assert_int_equal(o.size, sizeof o);
    assert_int_equal(o.reader, FP_READER_AUTO);
    assert_int_equal(o.max_depth, FP_DEFAULT_MAX_DEPTH);
    assert_true(o.cache_code && o.cache_frames && o.thread_cpu_state);
    assert_false(o.blocking || o.pause_torn || o.allow_untested);
    assert_int_equal(fp_options_init_size(NULL, sizeof o), FP_E_INVALID_ARG);
    assert_int_equal(fp_options_init_size(&o, first_layout_size() - 1), FP_E_INVALID_ARG);
}

static void test_fields_taken(void **state)
{
    (void)state;
    fp_options o;
    fp_options_init(&o);
    o.max_depth = 7;
    o.pause_torn = true;
    o.cache_frames = false;
    fp_session *s = NULL;
    assert_int_equal(fp_session_new(&o, &s), FP_OK);
    assert_int_equal(s->opts.max_depth, 7);
    assert_true(s->opts.pause_torn);
    assert_false(s->opts.cache_frames);
    assert_int_equal(s->opts.max_threads, FP_DEFAULT_MAX_THREADS);
    fp_session_free(s);
}

/* A caller whose struct ends at the last field, without trailing padding. */
static void test_first_layout_size(void **state)
{
    (void)state;
    fp_options o;
    assert_int_equal(fp_options_init_size(&o, first_layout_size()), FP_OK);
    o.pause_torn = true;
    fp_session *s = NULL;
    assert_int_equal(fp_session_new(&o, &s), FP_OK);
    assert_true(s->opts.pause_torn);
    fp_session_free(s);
    o.size = first_layout_size() - 1;
    assert_int_equal(fp_session_new(&o, &s), FP_E_INVALID_ARG);
    assert_null(s);
}

/* A caller built against a newer header: its fields past this library's
 * are zero by default and accepted; one set is refused. */
static void test_newer_caller(void **state)
{
    (void)state;
    union {
        fp_options o;
        unsigned char bytes[sizeof(fp_options) + NEWER_EXTRA];
    } big;
    memset(&big, 0xa5, sizeof big);
    assert_int_equal(fp_options_init_size(&big.o, sizeof big), FP_OK);
    assert_int_equal(big.o.size, sizeof big);
    for (size_t i = sizeof big.o; i < sizeof big; i++)
        assert_int_equal(big.bytes[i], 0);
    big.o.blocking = true;
    fp_session *s = NULL;
    assert_int_equal(fp_session_new(&big.o, &s), FP_OK);
    assert_true(s->opts.blocking);
    assert_int_equal(s->opts.size, sizeof(fp_options));
    fp_session_free(s);
    big.bytes[sizeof big - 1] = 1;
    s = NULL;
    assert_int_equal(fp_session_new(&big.o, &s), FP_E_UNSUPPORTED);
    assert_null(s);
    /* A newer field may start in this library's trailing padding. */
    big.bytes[sizeof big - 1] = 0;
    big.bytes[first_layout_size()] = 1;
    assert_int_equal(fp_session_new(&big.o, &s), FP_E_UNSUPPORTED);
    assert_null(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_sets_size_and_defaults),
        cmocka_unit_test(test_fields_taken),
        cmocka_unit_test(test_first_layout_size),
        cmocka_unit_test(test_newer_caller),
    };
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
