/* test_truth.c — checkpoint messages captured from real runs
 * (tests/data/checkpoints, one channel line each) decoded to their exact
 * threads and frames, and every malformed variant of one rejected with its
 * message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "channel.h"
#include "conform.h"
#include "cu_helpers.h"
#include "truth.h"

#define PATH_LEN 4096u
#define ERR_LEN 512u
#define MAX_EDITED 8192u

/* Paths inside an interpreter's root where the harness copies targets. */
#define SCN "/tmp/frameproof-targets/scenarios/"
#define PY CF_KIND_PYTHON, 0, 0 /* kind, then no frame address, no instruction */
#define PARK {"park", "park", SCN "../groundtruth/fpgt.py", 186, 186, 4, 18, PY}
#define GEN CF_KIND_GENERATOR, 0, 0
#define LEN(a) (sizeof(a) / sizeof((a)[0]))

typedef struct exp_thread {
    uint64_t native_id, thread_id;
    bool main, exception;
    const cf_frame *frames;
    size_t nframes;
} exp_thread;

typedef struct exp_checkpoint {
    const char *file, *name;
    int64_t seq;
    const exp_thread *threads;
    size_t nthreads;
    const uint64_t *all;
    size_t nall;
} exp_checkpoint;

/* The channel line of a captured checkpoint, parsed as the harness does. */
static json_object *load(const char *file, char **raw)
{
    char path[PATH_LEN], rel[PATH_LEN];
    snprintf(rel, sizeof rel, "checkpoints/%s", file);
    cu_test_data(path, sizeof path, rel);
    size_t len;
    char *text = cu_read_file(path, &len);
    assert_true(len > 0 && text[len - 1] == '\n');
    text[--len] = '\0';
    assert_null(strchr(text, '\n'));
    if (raw)
        *raw = strdup(text);
    json_object *msg = NULL;
    char err[ERR_LEN] = "";
    assert_int_equal(cf_channel_parse(text, len, &msg, err, sizeof err), CF_OK);
    free(text);
    return msg;
}

static void check_checkpoint(const exp_checkpoint *e)
{
    json_object *msg = load(e->file, NULL);
    cf_truth t;
    char err[ERR_LEN] = "";
    assert_int_equal(cf_truth_parse(msg, &t, err, sizeof err), CF_OK);
    assert_string_equal(err, "");
    assert_string_equal(t.name, e->name);
    assert_int_equal(t.seq, e->seq);
    assert_int_equal(t.nthreads, e->nthreads);
    for (size_t i = 0; i < e->nthreads; i++) {
        const exp_thread *et = &e->threads[i];
        const cf_truth_thread *tt = &t.threads[i];
        assert_int_equal(tt->native_id, et->native_id);
        assert_int_equal(tt->thread_id, et->thread_id);
        assert_int_equal(tt->main, et->main);
        assert_int_equal(tt->exception, et->exception);
        assert_int_equal(tt->nframes, et->nframes);
        assert_ptr_equal(cf_truth_find(&t, et->native_id), tt);
        for (size_t k = 0; k < et->nframes; k++) {
            const cf_frame *a = &tt->frames[k], *x = &et->frames[k];
            assert_string_equal(a->function, x->function);
            assert_string_equal(a->name, x->name);
            assert_string_equal(a->file, x->file);
            assert_int_equal(a->line, x->line);
            assert_int_equal(a->end_line, x->end_line);
            assert_int_equal(a->column, x->column);
            assert_int_equal(a->end_column, x->end_column);
            assert_int_equal(a->kind, x->kind);
        }
    }
    assert_int_equal(t.nall, e->nall);
    assert_memory_equal(t.all_ids, e->all, e->nall * sizeof *e->all);
    cf_truth_free(&t);
    json_object_put(msg);
}

static void test_multiline_call(void **state)
{
    (void)state;
    static const cf_frame f[] = {
        PARK,
        {"multiline", "multiline", SCN "plain_calls.py", 30, 32, 11, 5, PY},
        {"<module>", "<module>", SCN "plain_calls.py", 36, 37, 0, 12, PY},
    };
    static const exp_thread th[] = {{32338, 140702689669632u, true, false, f, LEN(f)}};
    static const uint64_t all[] = {32338, 32356};
    static const exp_checkpoint e = {"3.14-plain_calls-multiline.json", "multiline", 1, th, LEN(th), all, LEN(all)};
    check_checkpoint(&e);
}

static void test_generator_in_thread(void **state)
{
    (void)state;
    static const cf_frame f[] = {
        PARK,
        {"counter", "counter", SCN "generators.py", 13, 13, 12, 28, GEN},
        {"in_thread", "in_thread", SCN "generators.py", 38, 38, 13, 37, PY},
        {"Thread.run", "run", "/usr/lib/python3.13/threading.py", 995, 995, 16, 57, PY},
        {"Thread._bootstrap_inner", "_bootstrap_inner", "/usr/lib/python3.13/threading.py", 1044, 1044, 16, 26, PY},
        {"Thread._bootstrap", "_bootstrap", "/usr/lib/python3.13/threading.py", 1015, 1015, 12, 35, PY},
    };
    static const exp_thread th[] = {{32445, 140539794036416u, false, false, f, LEN(f)}};
    static const uint64_t all[] = {32436, 32443, 32445};
    static const exp_checkpoint e = {"3.13-generators-thread_gen.json", "thread-gen", 3, th, LEN(th), all, LEN(all)};
    check_checkpoint(&e);
}

#define THREADING "/usr/lib/python3.14/threading.py"
#define WORKER_BASE                                                                                                \
    {"Thread.run", "run", THREADING, 1025, 1025, 16, 57, PY},                                                      \
        {"Thread._bootstrap_inner", "_bootstrap_inner", THREADING, 1083, 1083, 16, 43, PY},                        \
        {"Thread._bootstrap", "_bootstrap", THREADING, 1045, 1045, 12, 35, PY}
#define LEAF {"leaf", "leaf", SCN "main_waits.py", 13, 13, 4, 20, PY}

static void test_three_workers(void **state)
{
    (void)state;
    static const cf_frame w0[] = {PARK, LEAF, {"worker", "worker", SCN "main_waits.py", 18, 18, 8, 23, PY}, WORKER_BASE};
    static const cf_frame w1[] = {PARK, LEAF, {"worker", "worker", SCN "main_waits.py", 20, 20, 9, 24, PY}, WORKER_BASE};
    static const cf_frame w2[] = {PARK, LEAF,
                                  {"worker.<locals>.<lambda>", "<lambda>", SCN "main_waits.py", 22, 22, 17, 32, PY},
                                  {"worker", "worker", SCN "main_waits.py", 22, 22, 8, 35, PY}, WORKER_BASE};
    static const exp_thread th[] = {
        {1178, 140035158955712u, false, false, w0, LEN(w0)},
        {1179, 140035150563008u, false, false, w1, LEN(w1)},
        {1180, 140035142170304u, false, false, w2, LEN(w2)},
    };
    static const uint64_t all[] = {1166, 1177, 1178, 1179, 1180};
    static const exp_checkpoint e = {"3.14-main_waits-workers.json", "workers", 0, th, LEN(th), all, LEN(all)};
    check_checkpoint(&e);
}

static void test_astral_names(void **state)
{
    (void)state;
    static const cf_frame f[] = {
        PARK,
        {"\xF0\x9D\x94\xAC\xF0\x9D\x94\xA4\xF0\x9D\x94\xB1.\xF0\x9D\x94\xA3\xF0\x9D\x94\xB2\xF0\x9D\x94\xAB\xF0\x9D\x94"
         "\xA0",
         "\xF0\x9D\x94\xA3\xF0\x9D\x94\xB2\xF0\x9D\x94\xAB\xF0\x9D\x94\xA0", SCN "unicode_names.py", 38, 38, 4, 20, PY},
        {"<module>", "<module>", SCN "unicode_names.py", 44, 44, 0, 37, PY},
    };
    static const exp_thread th[] = {{602, 140067687928320u, true, false, f, LEN(f)}};
    static const uint64_t all[] = {602, 610};
    static const exp_checkpoint e = {"3.14-unicode_names-astral.json", "code.replace-astral", 1, th, LEN(th), all,
                                     LEN(all)};
    check_checkpoint(&e);
}

static void test_handling_exception(void **state)
{
    (void)state;
    static const cf_frame f[] = {
        PARK,
        {"in_except", "in_except", SCN "exceptions_finally.py", 20, 20, 8, 27, PY},
        {"<module>", "<module>", SCN "exceptions_finally.py", 73, 73, 0, 11, PY},
    };
    static const exp_thread th[] = {{32518, 140364636678016u, true, true, f, LEN(f)}};
    static const uint64_t all[] = {32518, 32538};
    static const exp_checkpoint e = {"3.15-exceptions_finally-except.json", "except", 0, th, LEN(th), all, LEN(all)};
    check_checkpoint(&e);
}

static void test_far_line_numbers(void **state)
{
    (void)state;
    static const cf_frame f[] = {
        PARK,
        {"million", "million", "<far: 1000000 lines down>", 1000002, 1000002, 4, 20, PY},
        {"hundred_million", "hundred_million", "<far: ast.increment_lineno 123456789>", 123456791, 123456791, 11, 25,
         PY},
        {"near_int_max", "near_int_max", "<far: ast.increment_lineno 2**31-100>", 2147483551, 2147483551, 11, 33, PY},
        {"<module>", "<module>", SCN "far_line_numbers.py", 29, 29, 0, 31, PY},
    };
    static const exp_thread th[] = {{445, 140710306744192u, true, false, f, LEN(f)}};
    static const uint64_t all[] = {445, 470};
    static const exp_checkpoint e = {"3.15-far_line_numbers-all_three.json", "all-three", 1, th, LEN(th), all,
                                     LEN(all)};
    check_checkpoint(&e);
}

/* One edit of the captured multiline checkpoint: its first occurrence of
 * `from` becomes `to`. */
typedef struct edit {
    const char *from, *to;
    const char *err;       /* NULL: still accepted */
} edit;

#define BASE_FILE "3.14-plain_calls-multiline.json"
#define THREAD_LACKS "checkpoint multiline: thread lacks native_id, thread_id, main, exception or frames"
#define FRAME0 "checkpoint multiline: thread 32338: frame 0: "
#define LACKS "frame lacks function, name, file or kind"
#define POSITIONS FRAME0 "frame park: line, end_line, column and end_column must be integers or null"

static const edit MALFORMED[] = {
    {"\"name\":\"multiline\",", "", "checkpoint lacks name, threads or all_threads"},
    {"\"name\":\"multiline\"", "\"name\":7", "checkpoint lacks name, threads or all_threads"},
    {"\"threads\":[", "\"threads\":null,\"x\":[", "checkpoint lacks name, threads or all_threads"},
    {"\"all_threads\":[", "\"all\":[", "checkpoint lacks name, threads or all_threads"},
    {"\"all_threads\":[", "\"all_threads\":{},\"all\":[", "checkpoint lacks name, threads or all_threads"},
    {"\"threads\":[{", "\"threads\":[7,{", "checkpoint multiline: thread 0 is not an object"},
    {"\"native_id\":32338,\"thread_id\"", "\"thread_id\"", THREAD_LACKS},
    {"\"native_id\":32338,\"thread_id\"", "\"native_id\":-1,\"thread_id\"", THREAD_LACKS},
    {"\"native_id\":32338,\"thread_id\"", "\"native_id\":\"32338\",\"thread_id\"", THREAD_LACKS},
    {"\"thread_id\":140702689669632,", "\"thread_id\":1.5,", THREAD_LACKS},
    {"\"main\":true,", "\"main\":1,", THREAD_LACKS},
    {"\"exception\":false,", "", THREAD_LACKS},
    {"\"exception\":false,", "\"exception\":null,", THREAD_LACKS},
    {"\"frames\":[", "\"frames\":{},\"x\":[", THREAD_LACKS},
    {"\"frames\":[{", "\"frames\":[[],{", "checkpoint multiline: thread 32338: frame 0 is not an object"},
    {"{\"function\":\"park\",", "{", FRAME0 LACKS},
    {"\"name\":\"park\",", "\"name\":false,", FRAME0 LACKS},
    {"\"file\":\"/tmp", "\"files\":\"/tmp", FRAME0 LACKS},
    {"\"kind\":\"python\"}", "\"kind\":null}", FRAME0 LACKS},
    {"\"kind\":\"python\"}", "\"kind\":\"native\"}", FRAME0 "frame kind \"native\" is neither python nor generator"},
    {"\"function\":\"multiline\"", "\"function\":[\"multiline\"]", "checkpoint multiline: thread 32338: frame 1: " LACKS},
    {"\"line\":186,", "", POSITIONS},
    {"\"line\":186,", "\"line\":\"186\",", POSITIONS},
    {"\"line\":186,", "\"line\":186.0,", POSITIONS},
    {"\"end_line\":186,", "\"end_line\":true,", POSITIONS},
    {"\"end_column\":18,", "\"end_column\":2147483648,", POSITIONS},
    {"\"column\":4,", "\"column\":-2147483649,", POSITIONS},
    {"\"column\":4,", "\"column\":9223372036854775808,", POSITIONS},
    {"{\"native_id\":32356,", "{", "checkpoint multiline: all_threads[1] lacks native_id"},
    {"\"all_threads\":[", "\"all_threads\":[3,", "checkpoint multiline: all_threads[0] lacks native_id"},
    {"\"native_id\":32356,", "\"native_id\":-32356,", "checkpoint multiline: all_threads[1] lacks native_id"},
};

/* Positions at the int32 limits, null positions, no seq and the largest
 * thread id are valid. */
static const edit ACCEPTED[] = {
    {"\"line\":186,", "\"line\":2147483647,", NULL},
    {"\"column\":4,", "\"column\":-2147483648,", NULL},
    {"\"end_column\":18,", "\"end_column\":null,", NULL},
    {"\"seq\":1,", "", NULL},
    {"\"native_id\":32338,\"thread_id\"", "\"native_id\":18446744073709551615,\"thread_id\"", NULL},
};

static json_object *edited(const char *raw, const edit *e)
{
    const char *at = strstr(raw, e->from);
    if (!at)
        fail_msg("\"%s\" is not in " BASE_FILE, e->from);
    char text[MAX_EDITED];
    int n = snprintf(text, sizeof text, "%.*s%s%s", (int)(at - raw), raw, e->to, at + strlen(e->from));
    assert_true(n > 0 && (size_t)n < sizeof text);
    json_object *msg = NULL;
    char err[ERR_LEN] = "";
    if (cf_channel_parse(text, (size_t)n, &msg, err, sizeof err) != CF_OK)
        fail_msg("edit \"%s\" -> \"%s\": %s", e->from, e->to, err);
    return msg;
}

static void test_malformed(void **state)
{
    (void)state;
    char *raw = NULL;
    json_object_put(load(BASE_FILE, &raw));
    for (size_t i = 0; i < LEN(MALFORMED); i++) {
        json_object *msg = edited(raw, &MALFORMED[i]);
        cf_truth t;
        char err[ERR_LEN] = "";
        int rc = cf_truth_parse(msg, &t, err, sizeof err);
        if (rc != CF_E_FORMAT || strcmp(err, MALFORMED[i].err) != 0)
            fail_msg("edit %zu (\"%s\" -> \"%s\"): rc %d, \"%s\"", i, MALFORMED[i].from, MALFORMED[i].to, rc, err);
        /* Nothing is left to free after a failure. */
        assert_null(t.threads);
        assert_null(t.all_ids);
        assert_int_equal(t.nthreads, 0);
        json_object_put(msg);
    }
    free(raw);
}

static void test_accepted_edits(void **state)
{
    (void)state;
    char *raw = NULL;
    json_object_put(load(BASE_FILE, &raw));
    cf_truth t;
    char err[ERR_LEN] = "";
    json_object *msgs[LEN(ACCEPTED)];
    for (size_t i = 0; i < LEN(ACCEPTED); i++)
        msgs[i] = edited(raw, &ACCEPTED[i]);

    assert_int_equal(cf_truth_parse(msgs[0], &t, err, sizeof err), CF_OK);
    assert_int_equal(t.threads[0].frames[0].line, INT32_MAX);
    cf_truth_free(&t);
    assert_int_equal(cf_truth_parse(msgs[1], &t, err, sizeof err), CF_OK);
    assert_int_equal(t.threads[0].frames[0].column, INT32_MIN);
    cf_truth_free(&t);
    assert_int_equal(cf_truth_parse(msgs[2], &t, err, sizeof err), CF_OK);
    assert_int_equal(t.threads[0].frames[0].end_column, CF_POS_NONE);
    assert_int_equal(t.threads[0].frames[1].end_column, 5);
    cf_truth_free(&t);
    assert_int_equal(cf_truth_parse(msgs[3], &t, err, sizeof err), CF_OK);
    assert_int_equal(t.seq, -1);
    cf_truth_free(&t);
    assert_int_equal(cf_truth_parse(msgs[4], &t, err, sizeof err), CF_OK);
    assert_int_equal(t.threads[0].native_id, UINT64_MAX);
    assert_null(cf_truth_find(&t, 32338));
    assert_ptr_equal(cf_truth_find(&t, UINT64_MAX), &t.threads[0]);
    cf_truth_free(&t);
    assert_null(t.threads);
    assert_int_equal(t.nthreads, 0);
    for (size_t i = 0; i < LEN(ACCEPTED); i++)
        json_object_put(msgs[i]);
    free(raw);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_multiline_call),
        cmocka_unit_test(test_generator_in_thread),
        cmocka_unit_test(test_three_workers),
        cmocka_unit_test(test_astral_names),
        cmocka_unit_test(test_handling_exception),
        cmocka_unit_test(test_far_line_numbers),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_accepted_edits),
    };
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests_name("conform_unit_truth", tests, NULL, NULL);
}
