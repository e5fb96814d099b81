/* test_protocol.c — the unwinder-command protocol parser: `frameproof dump
 * --json` output captured from real interpreters (tests/data/protocol/)
 * must parse to exactly its threads and frames with every field reported;
 * hand-made documents with fewer keys report exactly those fields; lone
 * surrogates come out as the ground-truth channel decodes them; and every
 * malformed document is refused with a message naming its JSON path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "channel.h"
#include "conform.h"
#include "protocol.h"
#include "sample.h"

#define ERR_LEN 1024
#define DUMP_FIELDS (CF_PROTOCOL_FIELDS & ~CF_FIELD_ALL_THREADS)

static const char *data_dir(void)
{
    const char *d = getenv("FP_TEST_DATA");
    return d ? d : "tests/data";
}

/* Reads tests/data/protocol/NAME (malloc'd, one spare byte). */
static char *load(const char *name, size_t *len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/protocol/%s", data_dir(), name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n > 0);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}

/* Parses text (copied: the parser rewrites it) into s. */
static int parse_text(const char *text, unsigned declared, cf_sample *s, char *err)
{
    size_t n = strlen(text);
    char *copy = malloc(n + 1);
    assert_non_null(copy);
    memcpy(copy, text, n + 1);
    cf_sample_reset(s, CF_FIELDS_ALL);
    err[0] = '\0';
    int rc = cf_protocol_parse(copy, n, declared, s, err, ERR_LEN);
    free(copy);
    return rc;
}

static int parse_file(const char *name, unsigned declared, cf_sample *s, char *err)
{
    size_t n;
    char *text = load(name, &n);
    cf_sample_reset(s, CF_FIELDS_ALL);
    err[0] = '\0';
    int rc = cf_protocol_parse(text, n, declared, s, err, ERR_LEN);
    free(text);
    return rc;
}

static const cf_frame *frame(const cf_sample *s, size_t thread, size_t k)
{
    assert_true(thread < s->nthreads);
    assert_true(k < s->threads[thread].count);
    return &s->frames[s->threads[thread].first + k];
}

static void assert_frame(const cf_frame *f, const char *function, const char *name, const char *file_suffix,
                         int32_t line, int32_t end_line, int32_t column, int32_t end_column, int kind)
{
    assert_string_equal(f->function, function);
    assert_string_equal(f->name, name);
    size_t fl = strlen(f->file), sl = strlen(file_suffix);
    assert_true(fl >= sl);
    assert_string_equal(f->file + fl - sl, file_suffix);
    assert_int_equal(f->line, line);
    assert_int_equal(f->end_line, end_line);
    assert_int_equal(f->column, column);
    assert_int_equal(f->end_column, end_column);
    assert_int_equal(f->kind, kind);
}

static void test_dump_generators(void **state)
{
    (void)state;
    cf_sample s;
    char err[ERR_LEN];
    cf_sample_init(&s);
    assert_int_equal(parse_file("dump-3.14-generators.json", 0, &s, err), CF_OK);
    assert_int_equal(s.fields, DUMP_FIELDS);
    assert_int_equal(s.nthreads, 3);
    assert_int_equal(s.nframes, 15);
    assert_int_equal(s.threads[0].native_id, 19792);
    assert_false(s.threads[0].main);
    assert_int_equal(s.threads[0].exception, CF_NO);
    assert_null(s.threads[0].error);
    assert_int_equal(s.threads[0].interp_id, 0);
    assert_int_equal(s.threads[0].count, 6);
    assert_frame(frame(&s, 0, 0), "park", "park", "/groundtruth/fpgt.py", 186, 186, 4, 18, CF_KIND_PYTHON);
    assert_frame(frame(&s, 0, 1), "counter", "counter", "/scenarios/generators.py", 13, 13, 12, 28,
                 CF_KIND_GENERATOR);
    assert_frame(frame(&s, 0, 3), "Thread.run", "run", "/usr/lib/python3.14/threading.py", 1025, 1025, 16, 57,
                 CF_KIND_PYTHON);
    assert_int_equal(s.threads[1].native_id, 19783);
    assert_int_equal(s.threads[1].count, 7);
    assert_int_equal(s.threads[2].native_id, 19781);
    assert_true(s.threads[2].main);
    assert_int_equal(s.threads[2].thread_id, 140599626506752u);
    assert_frame(frame(&s, 2, 1), "<module>", "<module>", "/scenarios/generators.py", 51, 51, 0, 8,
                 CF_KIND_PYTHON);
    assert_ptr_equal(cf_sample_find(&s, 19781), &s.threads[2]);
    cf_sample_free(&s);
}

static void test_dump_exception_and_free_threaded(void **state)
{
    (void)state;
    cf_sample s;
    char err[ERR_LEN];
    cf_sample_init(&s);
    assert_int_equal(parse_file("dump-3.13-exceptions.json", 0, &s, err), CF_OK);
    assert_int_equal(s.fields, DUMP_FIELDS);
    assert_int_equal(s.nthreads, 2);
    assert_int_equal(s.threads[0].exception, CF_NO);
    assert_int_equal(s.threads[1].exception, CF_YES);
    assert_true(s.threads[1].main);
    assert_frame(frame(&s, 1, 1), "in_except", "in_except", "/scenarios/exceptions_finally.py", 20, 20, 8, 27,
                 CF_KIND_PYTHON);

    assert_int_equal(parse_file("dump-3.13t-plain_calls.json", 0, &s, err), CF_OK);
    assert_int_equal(s.fields, DUMP_FIELDS);
    assert_int_equal(s.nthreads, 2);
    assert_int_equal(s.nframes, 13);
    assert_frame(frame(&s, 1, 1), "level_d", "level_d", "/scenarios/plain_calls.py", 12, 12, 4, 23,
                 CF_KIND_PYTHON);
    assert_frame(frame(&s, 1, 5), "<module>", "<module>", "/scenarios/plain_calls.py", 35, 35, 0, 9,
                 CF_KIND_PYTHON);
    cf_sample_free(&s);
}

static void test_dump_unicode(void **state)
{
    (void)state;
    cf_sample s;
    char err[ERR_LEN];
    cf_sample_init(&s);
    assert_int_equal(parse_file("dump-3.15-dbg-unicode_names.json", 0, &s, err), CF_OK);
    assert_int_equal(s.fields, DUMP_FIELDS);
    assert_int_equal(s.nthreads, 2);
    assert_frame(frame(&s, 1, 1), "caf\xc3\xa9", "caf\xc3\xa9", "/scenarios/unicode_names.py", 14, 14, 4, 20,
                 CF_KIND_PYTHON);
    assert_frame(frame(&s, 1, 2), "\xe5\x87\xbd\xe6\x95\xb0", "\xe5\x87\xbd\xe6\x95\xb0",
                 "/scenarios/unicode_names.py", 18, 18, 4, 16, CF_KIND_PYTHON);
    assert_frame(frame(&s, 1, 4), "\xf0\xa0\x80\x8b", "\xf0\xa0\x80\x8b", "/scenarios/unicode_names.py", 26, 26,
                 4, 17, CF_KIND_PYTHON);
    assert_frame(frame(&s, 1, 5), "\xc3\x9cn\xc3\xaf" "c\xc3\xb6" "d\xc3\xa9" ".m\xc3\xa9" "thode", "m\xc3\xa9" "thode",
                 "/scenarios/unicode_names.py", 31, 31, 8, 19, CF_KIND_PYTHON);
    cf_sample_free(&s);
}

/* Lone surrogates come out exactly as the ground-truth channel decodes
 * the same escapes (their 3-byte encoding, as libframeproof reports them). */
static void test_dump_lone_surrogates(void **state)
{
    (void)state;
    cf_sample s;
    char err[ERR_LEN];
    cf_sample_init(&s);
    assert_int_equal(parse_file("dump-3.11-lone_surrogates.json", 0, &s, err), CF_OK);
    assert_int_equal(s.nthreads, 1);
    const cf_frame *f = frame(&s, 0, 0);
    assert_string_equal(f->function, "Q\xed\xb3\xbe.park_\xed\xb2\x80");
    assert_string_equal(f->name, "park_\xed\xb2\x80");
    assert_string_equal(f->file, "/tmp/caf\xed\xb3\xa9-\xed\xb3\xbf.py");

    size_t n;
    char *text = load("dump-3.11-lone_surrogates.json", &n);
    while (n > 0 && text[n - 1] == '\n')
        text[--n] = '\0';
    json_object *obj = NULL;
    assert_int_equal(cf_channel_parse(text, n, &obj, err, sizeof err), CF_OK);
    json_object *fr = json_object_array_get_idx(
        json_object_object_get(
            json_object_array_get_idx(
                json_object_object_get(json_object_array_get_idx(json_object_object_get(obj, "interpreters"), 0),
                                       "threads"),
                0),
            "frames"),
        0);
    assert_string_equal(json_object_get_string(json_object_object_get(fr, "function")), f->function);
    assert_string_equal(json_object_get_string(json_object_object_get(fr, "file")), f->file);
    json_object_put(obj);
    free(text);

    /* A pair stays one character; an escaped backslash is no escape. */
    assert_int_equal(parse_text("{\"interpreters\":[{\"threads\":[{\"native_id\":1,\"frames\":[{\"name\":"
                                "\"\\ud83d\\ude00 \\\\udc80 \\udc80\"}]}]}]}",
                                0, &s, err),
                     CF_OK);
    assert_string_equal(frame(&s, 0, 0)->name, "\xf0\x9f\x98\x80 \\udc80 \xed\xb2\x80");
    cf_sample_free(&s);
}

static void test_partial_fields(void **state)
{
    (void)state;
    cf_sample s;
    char err[ERR_LEN];
    cf_sample_init(&s);
    assert_int_equal(parse_file("partial-names-lines.json", 0, &s, err), CF_OK);
    assert_int_equal(s.fields, CF_FIELD_NATIVE_ID | CF_FIELD_THREAD_ID | CF_FIELD_NAME | CF_FIELD_FILE |
                                   CF_FIELD_LINE);
    assert_int_equal(s.nthreads, 2);
    assert_int_equal(s.threads[0].count, 2);
    assert_int_equal(s.threads[0].exception, CF_UNKNOWN);
    assert_frame(frame(&s, 0, 0), "", "park", "/app/fpgt.py", 186, CF_POS_NONE, CF_POS_NONE, CF_POS_NONE,
                 CF_KIND_PYTHON);
    assert_int_equal(frame(&s, 0, 1)->line, CF_POS_NONE);
    assert_int_equal(s.threads[1].native_id, 4243);
    assert_int_equal(s.threads[1].count, 0);
    assert_string_equal(s.threads[1].error, "could not read the frame at 0x7f00deadbeef");

    assert_int_equal(parse_file("partial-thread-id-only.json", 0, &s, err), CF_OK);
    assert_int_equal(s.fields, CF_FIELD_THREAD_ID | CF_FIELD_EXCEPTION | CF_FIELD_FUNCTION | CF_FIELD_LINE |
                                   CF_FIELD_END_LINE | CF_FIELD_COLUMN | CF_FIELD_END_COLUMN |
                                   CF_FIELD_ALL_THREADS);
    assert_int_equal(s.nthreads, 2);
    assert_int_equal(s.threads[0].thread_id, UINT64_MAX - 1);
    assert_int_equal(s.threads[0].exception, CF_UNKNOWN);
    assert_int_equal(s.threads[0].interp_id, 0);
    assert_int_equal(s.threads[1].interp_id, 3);
    assert_int_equal(s.threads[1].exception, CF_YES);
    assert_int_equal(s.threads[1].count, 0);
    assert_frame(frame(&s, 0, 0), "Outer.method", "", "", 12, 13, 4, CF_POS_NONE, CF_KIND_PYTHON);
    assert_frame(frame(&s, 0, 1), "<module>", "", "", INT32_MAX, INT32_MAX, 0, 0, CF_KIND_PYTHON);
    assert_ptr_equal(cf_sample_find(&s, 7), &s.threads[1]);

    /* No frames at all: no frame field is reported; interpreter ids
     * default to the position. */
    assert_int_equal(parse_text("{\"interpreters\":[{\"threads\":[]},{\"threads\":[{\"native_id\":5,\"main\":"
                                "true,\"frames\":[]}]}]}",
                                0, &s, err),
                     CF_OK);
    assert_int_equal(s.fields, CF_FIELD_NATIVE_ID | CF_FIELD_MAIN);
    assert_int_equal(s.threads[0].interp_id, 1);

    /* An empty document reports nothing. */
    assert_int_equal(parse_text("{\"interpreters\":[], \"other\": {\"x\": [1.5]}}\n", 0, &s, err), CF_OK);
    assert_int_equal(s.fields, 0);
    assert_int_equal(s.nthreads, 0);
    cf_sample_free(&s);
}

static void test_declared_fields(void **state)
{
    (void)state;
    cf_sample s;
    char err[ERR_LEN];
    cf_sample_init(&s);
    unsigned declared = CF_FIELD_NATIVE_ID | CF_FIELD_FUNCTION | CF_FIELD_LINE | CF_FIELD_ALL_THREADS;
    assert_int_equal(parse_file("dump-3.14-generators.json", declared, &s, err), CF_OK);
    assert_int_equal(s.fields, declared);
    assert_int_equal(s.nframes, 15);

    assert_int_equal(parse_file("partial-names-lines.json", CF_FIELD_NATIVE_ID | CF_FIELD_COLUMN, &s, err),
                     CF_E_FORMAT);
    assert_string_equal(err, "$.interpreters[0].threads[0].frames[0]: no \"column\" key, but the declared "
                             "fields include it");
    assert_int_equal(parse_file("partial-names-lines.json", CF_FIELD_MAIN | CF_FIELD_NATIVE_ID, &s, err),
                     CF_E_FORMAT);
    assert_string_equal(err, "$.interpreters[0].threads[0]: no \"main\" key, but the declared fields include it");
    assert_int_equal(parse_text("{\"all_threads\":false,\"interpreters\":[]}", CF_FIELD_ALL_THREADS, &s, err),
                     CF_E_FORMAT);
    assert_string_equal(err, "$.all_threads: false, but the declared fields include all_threads");
    cf_sample_free(&s);
}

typedef struct bad_doc {
    const char *text;
    int rc;
    const char *message;
} bad_doc;

/* One thread with one frame whose "line" is the given JSON value. */
#define WITH_LINE(v) "{\"interpreters\":[{\"threads\":[{\"native_id\":1,\"frames\":[{\"line\":" v "}]}]}]}"
#define WITH_THREAD(t) "{\"interpreters\":[{\"threads\":[" t "]}]}"
#define T0 "$.interpreters[0].threads[0]"

static const bad_doc BAD[] = {
    {"", CF_E_FORMAT, "$: not JSON: empty output at byte 0: \"\""},
    {" \n", CF_E_FORMAT, "$: not JSON: empty output at byte 2: \" \n\""},
    {"garbage", CF_E_FORMAT, "$: not JSON: unexpected character at byte 0: \"garbage\""},
    {"{\"interpreters\":[", CF_E_FORMAT, "$: not JSON: the document ends early at byte 17: "
                                         "\"{\"interpreters\":[\""},
    {"{\"interpreters\":[]} {}", CF_E_FORMAT, "$: not JSON: text after the document at byte 20: "
                                              "\"{\"interpreters\":[]} {}\""},
    {"{\"interpreters\":[],}", CF_E_FORMAT, "$: not JSON: unexpected character at byte 19: "
                                            "\"{\"interpreters\":[],}\""},
    {"{'interpreters':[]}", CF_E_FORMAT, "$: not JSON: single quote at byte 1 (JSON strings take double quotes; "
                                         "was this printed with repr() instead of a JSON encoder?)"},
    {"{\"interpreters\":[],\"x\":\"a\tb\"}", CF_E_FORMAT,
     "$: not JSON: raw control character 0x09 inside a string at byte 25 (JSON writes it as a \\u escape)"},
    {"[1]", CF_E_FORMAT, "$: expected a JSON object, got an array"},
    {"{}", CF_E_FORMAT, "$: no \"interpreters\" key"},
    {"{\"interpreters\":{}}", CF_E_FORMAT, "$.interpreters: expected an array, got an object"},
    {"{\"interpreters\":[7]}", CF_E_FORMAT, "$.interpreters[0]: expected an interpreter object, got an integer"},
    {"{\"interpreters\":[{\"id\":0}]}", CF_E_FORMAT, "$.interpreters[0]: no \"threads\" key"},
    {"{\"interpreters\":[{\"id\":\"0\",\"threads\":[]}]}", CF_E_FORMAT,
     "$.interpreters[0].id: expected an integer, got a string"},
    {"{\"interpreters\":[{\"threads\":null}]}", CF_E_FORMAT, "$.interpreters[0].threads: expected an array, got null"},
    {"{\"all_threads\":1,\"interpreters\":[]}", CF_E_FORMAT, "$.all_threads: expected true or false, got an integer"},
    {WITH_THREAD("\"t\""), CF_E_FORMAT, T0 ": expected a thread object, got a string"},
    {WITH_THREAD("{\"main\":true,\"frames\":[]}"), CF_E_FORMAT,
     T0 ": threads carry neither \"native_id\" nor \"thread_id\": they cannot be matched with the target's threads"},
    {WITH_THREAD("{\"native_id\":1,\"main\":true,\"frames\":[]},{\"native_id\":2,\"frames\":[]}"), CF_E_FORMAT,
     "$.interpreters[0].threads[1]: has no \"main\" key but " T0 " has one (a key is on every thread of the "
     "document or on none)"},
    {"{\"interpreters\":[{\"threads\":[{\"native_id\":1,\"frames\":[]}]},{\"threads\":[{\"native_id\":2,"
     "\"thread_id\":2,\"frames\":[]}]}]}",
     CF_E_FORMAT, "$.interpreters[1].threads[0]: has a \"thread_id\" key but " T0 " has none (a key is on every "
                  "thread of the document or on none)"},
    {WITH_THREAD("{\"native_id\":1,\"status\":{\"exception\":false},\"frames\":[]},{\"native_id\":2,\"status\":{},"
                 "\"frames\":[]}"),
     CF_E_FORMAT, "$.interpreters[0].threads[1]: has no \"status.exception\" key but " T0 " has one (a key is on "
                  "every thread of the document or on none)"},
    {WITH_THREAD("{\"native_id\":1,\"frames\":[{\"line\":1,\"column\":0}]},{\"native_id\":2,\"frames\":[{\"line\""
                 ":2}]}"),
     CF_E_FORMAT, "$.interpreters[0].threads[1].frames[0]: has no \"column\" key but " T0 ".frames[0] has one (a "
                  "key is on every frame of the document or on none)"},
    {WITH_THREAD("{\"native_id\":1,\"frames\":[{\"line\":1},{\"line\":2,\"end_line\":2}]}"), CF_E_FORMAT,
     T0 ".frames[1]: has a \"end_line\" key but " T0 ".frames[0] has none (a key is on every frame of the "
     "document or on none)"},
    {WITH_THREAD("{\"native_id\":-5,\"frames\":[]}"), CF_E_FORMAT,
     T0 ".native_id: expected a non-negative integer, got -5"},
    {WITH_THREAD("{\"native_id\":1e3,\"frames\":[]}"), CF_E_FORMAT,
     T0 ".native_id: expected a non-negative integer, got a number with a fraction or an exponent"},
    {WITH_THREAD("{\"thread_id\":18446744073709551616,\"frames\":[]}"), CF_E_FORMAT,
     T0 ".thread_id: integer out of range (largest accepted: 18446744073709551614)"},
    {WITH_THREAD("{\"native_id\":\"12\",\"frames\":[]}"), CF_E_FORMAT,
     T0 ".native_id: expected a non-negative integer, got a string"},
    {WITH_THREAD("{\"native_id\":1,\"main\":1,\"frames\":[]}"), CF_E_FORMAT,
     T0 ".main: expected true or false, got an integer"},
    {WITH_THREAD("{\"native_id\":1,\"status\":{\"exception\":\"yes\"},\"frames\":[]}"), CF_E_FORMAT,
     T0 ".status.exception: expected true, false or null, got a string"},
    {WITH_THREAD("{\"native_id\":1,\"status\":[],\"frames\":[]}"), CF_E_FORMAT,
     T0 ".status: expected an object, got an array"},
    {WITH_THREAD("{\"native_id\":1,\"error\":\"x\",\"frames\":[{}]}"), CF_E_FORMAT,
     T0 ".frames: a thread with an \"error\" has no frames (its stack is never shortened or guessed), got 1"},
    {WITH_THREAD("{\"native_id\":1,\"error\":null}"), CF_E_FORMAT, T0 ".error: expected a string, got null"},
    {WITH_THREAD("{\"native_id\":1}"), CF_E_FORMAT,
     T0 ": no \"frames\" key (a thread has a \"frames\" array unless it has an \"error\")"},
    {WITH_THREAD("{\"native_id\":1,\"frames\":{}}"), CF_E_FORMAT, T0 ".frames: expected an array of frames, got an "
                                                                   "object"},
    {WITH_THREAD("{\"native_id\":1,\"frames\":[\"park\"]}"), CF_E_FORMAT,
     T0 ".frames[0]: expected a frame object, got a string"},
    {WITH_LINE("\"12\""), CF_E_FORMAT, T0 ".frames[0].line: expected an integer or null, got a string"},
    {WITH_LINE("12.0"), CF_E_FORMAT,
     T0 ".frames[0].line: expected an integer or null, got a number with a fraction or an exponent"},
    {WITH_LINE("-1"), CF_E_FORMAT, T0 ".frames[0].line: position -1 out of range (0 .. 2147483647, or null for "
                                      "None)"},
    {WITH_LINE("2147483648"), CF_E_FORMAT,
     T0 ".frames[0].line: position 2147483648 out of range (0 .. 2147483647, or null for None)"},
    {WITH_LINE("true"), CF_E_FORMAT, T0 ".frames[0].line: expected an integer or null, got a boolean"},
    {WITH_THREAD("{\"native_id\":1,\"frames\":[{\"kind\":\"native\"}]}"), CF_E_FORMAT,
     T0 ".frames[0].kind: expected \"python\" or \"generator\", got \"native\""},
    {WITH_THREAD("{\"native_id\":1,\"frames\":[{\"function\":5}]}"), CF_E_FORMAT,
     T0 ".frames[0].function: expected a string, got an integer"},
    {WITH_THREAD("{\"native_id\":1,\"frames\":[{\"file\":\"a\\u0000b\"}]}"), CF_E_FORMAT,
     T0 ".frames[0].file: the string holds a NUL character (\\u0000) at offset 1"},
    {WITH_THREAD("{\"native_id\":1,\"frames\":[{\"name\":\"ab\xff\"}]}"), CF_E_FORMAT,
     T0 ".frames[0].name: the string is not valid UTF-8 (byte 0xff at offset 2)"},
};

static void test_bad_documents(void **state)
{
    (void)state;
    cf_sample s;
    char err[ERR_LEN];
    cf_sample_init(&s);
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        int rc = parse_text(BAD[i].text, 0, &s, err);
        if (rc != BAD[i].rc || strcmp(err, BAD[i].message) != 0)
            print_error("document %zu: %s\n  got rc %d: %s\n  expected: %s\n", i, BAD[i].text, rc, err,
                        BAD[i].message);
        assert_int_equal(rc, BAD[i].rc);
        assert_string_equal(err, BAD[i].message);
    }
    /* A NUL byte in the output (strlen cannot see it). */
    char text[] = "{\"interpreters\":[]}\0";
    cf_sample_reset(&s, CF_FIELDS_ALL);
    assert_int_equal(cf_protocol_parse(text, sizeof text - 1, 0, &s, err, sizeof err), CF_E_FORMAT);
    assert_string_equal(err, "$: not JSON: NUL byte at byte 19");
    cf_sample_free(&s);
}

/* Every single-byte truncation of a real document is refused cleanly. */
static void test_truncations(void **state)
{
    (void)state;
    size_t n;
    char *text = load("dump-3.13t-plain_calls.json", &n);
    char *copy = malloc(n + 1);
    assert_non_null(copy);
    cf_sample s;
    char err[ERR_LEN];
    cf_sample_init(&s);
    size_t refused = 0;
    for (size_t cut = 0; cut + 1 < n; cut++) {
        memcpy(copy, text, cut);
        cf_sample_reset(&s, CF_FIELDS_ALL);
        int rc = cf_protocol_parse(copy, cut, 0, &s, err, sizeof err);
        assert_int_equal(rc, CF_E_FORMAT);
        assert_non_null(strstr(err, "$: not JSON: "));
        refused++;
    }
    assert_int_equal(refused, n - 1);
    free(copy);
    free(text);
    cf_sample_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dump_generators),
        cmocka_unit_test(test_dump_exception_and_free_threaded),
        cmocka_unit_test(test_dump_unicode),
        cmocka_unit_test(test_dump_lone_surrogates),
        cmocka_unit_test(test_partial_fields),
        cmocka_unit_test(test_declared_fields),
        cmocka_unit_test(test_bad_documents),
        cmocka_unit_test(test_truncations),
    };
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
