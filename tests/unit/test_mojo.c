/* test_mojo.c — the MOJO decoder over real streams captured from austin
 * 3.7.0 (tests/data/mojo), exact stacks and frames, and its rejection of
 * truncated and corrupted variants of them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "conform.h"
#include "mojo.h"

#define MAX_FILE (1u << 20)
#define ERRLEN 512

static const char *const FPGT = "/tmp/frameproof-targets/scenarios/../groundtruth/fpgt.py";
static const char *const PLAIN = "/tmp/frameproof-targets/scenarios/plain_calls.py";
static const char *const THREADING = "/usr/lib/python3.13/threading.py";

typedef struct bytes {
    unsigned char *data;
    size_t len;
} bytes;

static bytes load(const char *name)
{
    const char *dir = getenv("FP_TEST_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/mojo/%s", dir ? dir : "tests/data", name);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    bytes b = {malloc(MAX_FILE), 0};
    assert_non_null(b.data);
    b.len = fread(b.data, 1, MAX_FILE, f);
    fclose(f);
    assert_true(b.len < MAX_FILE);
    return b;
}

/* The capture with extra bytes appended (a corrupted tail after real events). */
static bytes with_tail(const char *name, const void *tail, size_t n)
{
    bytes b = load(name);
    assert_true(b.len + n < MAX_FILE);
    memcpy(b.data + b.len, tail, n);
    b.len += n;
    return b;
}

typedef struct want_frame {
    const char *file, *scope;
    uint32_t line, line_end, column, column_end;
} want_frame;

static void assert_stack(const mojo_stream *s, size_t i, uint64_t pid, uint64_t iid, uint64_t tid,
                         const want_frame *want, size_t n)
{
    assert_true(i < s->nstacks);
    const mojo_stack *st = &s->stacks[i];
    assert_int_equal(st->pid, pid);
    assert_int_equal(st->iid, iid);
    assert_int_equal(st->tid, tid);
    assert_int_equal(st->count, n);
    assert_int_equal(st->broken, 0);
    assert_true(st->has_time);
    assert_false(st->has_memory);
    for (size_t k = 0; k < n; k++) {
        const mojo_frame *f = &s->frames[st->first + k];
        assert_int_equal(f->kind, MOJO_FRAME_PYTHON);
        assert_string_equal(f->file, want[k].file);
        assert_string_equal(f->scope, want[k].scope);
        assert_int_equal(f->line, want[k].line);
        assert_int_equal(f->line_end, want[k].line_end);
        assert_int_equal(f->column, want[k].column);
        assert_int_equal(f->column_end, want[k].column_end);
    }
}

static const want_frame CHANNEL[] = {
    {THREADING, "Thread._bootstrap", 1015, 1015, 13, 36},
    {THREADING, "Thread._bootstrap_inner", 1044, 1044, 17, 27},
    {THREADING, "Thread.run", 995, 995, 17, 58},
    {FPGT, "_channel_main", 644, 644, 9, 24},
    {FPGT, "_channel_loop", 679, 679, 13, 40},
    {FPGT, "_checkpoint", 825, 825, 5, 21},
    {FPGT, "_wait_continue", 326, 326, 13, 48},
};

/* The truth: park 186:4-186:18, level_d 12:4-12:23, level_c 17:11-17:21,
 * level_b 21:8-21:18, level_a 26:11-26:21, <module> 35:0-35:9 (columns
 * 0-based); austin's columns are one more. */
static const want_frame BOTTOM[] = {
    {PLAIN, "<module>", 35, 35, 1, 10},
    {PLAIN, "level_a", 26, 26, 12, 22},
    {PLAIN, "level_b", 21, 21, 9, 19},
    {PLAIN, "level_c", 17, 17, 12, 22},
    {PLAIN, "level_d", 12, 12, 5, 24},
    {FPGT, "park", 186, 186, 5, 19},
};

static void decode_ok(const bytes *b, mojo_stream *s)
{
    char err[ERRLEN];
    mojo_stream_init(s);
    int rc = mojo_decode(b->data, b->len, s, err, sizeof err);
    if (rc != CF_OK)
        fail_msg("decode failed (%d): %s", rc, err);
}

/* A plain_calls capture: the channel thread, then the main thread parked
 * under want; one sampling pass. */
static void check_plain_calls(const char *name, uint64_t pid, uint64_t channel, const want_frame *want, size_t n,
                              mojo_stream *s)
{
    bytes b = load(name);
    decode_ok(&b, s);
    free(b.data);
    assert_int_equal(s->version, 3);
    assert_string_equal(mojo_meta_get(s, "austin"), "3.7.0");
    assert_string_equal(mojo_meta_get(s, "interval"), "1000000");
    assert_string_equal(mojo_meta_get(s, "mode"), "wall");
    assert_null(mojo_meta_get(s, "gc"));
    assert_int_equal(s->nstacks, 2);
    assert_stack(s, 0, pid, 0, channel, CHANNEL, 7);
    assert_stack(s, 1, pid, 0, pid, want, n);
    size_t pass;
    assert_int_equal(mojo_first_pass(s, &pass), CF_OK);
    assert_int_equal(pass, 2);
}

static void test_plain_calls_bottom(void **state)
{
    (void)state;
    mojo_stream s;
    check_plain_calls("3.13-plain_calls-bottom.mojo", 8353, 8358, BOTTOM, 6, &s);
    assert_string_equal(mojo_meta_get(&s, "duration"), "1000531");
    assert_int_equal(s.stacks[1].time, 859);
    mojo_stream_free(&s);
}

static void test_plain_calls_multiline(void **state)
{
    (void)state;
    /* The truth: <module> 36:0-37:12, multiline 30:11-32:5. */
    static const want_frame want[] = {
        {PLAIN, "<module>", 36, 37, 1, 13},
        {PLAIN, "multiline", 30, 32, 12, 6},
        {FPGT, "park", 186, 186, 5, 19},
    };
    mojo_stream s;
    check_plain_calls("3.13-plain_calls-multiline.mojo", 8353, 8358, want, 3, &s);
    mojo_stream_free(&s);
}

static void test_debug_build(void **state)
{
    (void)state;
    mojo_stream s;
    check_plain_calls("3.13-dbg-plain_calls-bottom.mojo", 9405, 9410, BOTTOM, 6, &s);
    mojo_stream_free(&s);
}

static void test_named_threads(void **state)
{
    (void)state;
    static const uint64_t workers[] = {8578, 8577, 8576, 8575, 8574, 8573, 8572};
    static const want_frame worker[] = {
        {THREADING, "Thread._bootstrap", 1015, 1015, 13, 36},
        {THREADING, "Thread._bootstrap_inner", 1044, 1044, 17, 27},
        {THREADING, "Thread.run", 995, 995, 17, 58},
        {"/tmp/frameproof-targets/scenarios/named_threads.py", "worker", 19, 19, 5, 39},
        {FPGT, "park", 186, 186, 5, 19},
    };
    static const want_frame main_thread[] = {
        {"/tmp/frameproof-targets/scenarios/named_threads.py", "<module>", 25, 25, 1, 35},
        {FPGT, "park", 186, 186, 5, 19},
    };
    bytes b = load("3.13-named_threads.mojo");
    mojo_stream s;
    decode_ok(&b, &s);
    assert_int_equal(s.nstacks, 9);
    for (size_t i = 0; i < 7; i++)
        assert_stack(&s, i, 8567, 0, workers[i], worker, 5);
    assert_stack(&s, 7, 8567, 0, 8571, CHANNEL, 7);
    assert_stack(&s, 8, 8567, 0, 8567, main_thread, 2);
    size_t n;
    assert_int_equal(mojo_first_pass(&s, &n), CF_OK);
    assert_int_equal(n, 9);
    mojo_stream_free(&s);
    free(b.data);
}

static void test_subinterpreter(void **state)
{
    (void)state;
    static const want_frame sub[] = {
        {"<string>", "<module>", 14, 14, 1, 10},
        {"<string>", "sub_top", 12, 12, 5, 17},
        {"<string>", "sub_middle", 9, 9, 5, 15},
        {"<string>", "sub_leaf", 6, 6, 5, 18},
    };
    bytes b = load("3.13-subinterpreters-sub-running.mojo");
    mojo_stream s;
    decode_ok(&b, &s);
    assert_int_equal(s.nstacks, 5);
    assert_stack(&s, 0, 8658, 1, 8661, sub, 4);
    /* The same native thread again, in the main interpreter. */
    assert_int_equal(s.stacks[2].iid, 0);
    assert_int_equal(s.stacks[2].tid, 8661);
    size_t n;
    assert_int_equal(mojo_first_pass(&s, &n), CF_OK);
    assert_int_equal(n, 5);
    mojo_stream_free(&s);
    free(b.data);
}

static void test_four_passes(void **state)
{
    (void)state;
    bytes b = load("3.13-plain_calls-bottom-4-passes.mojo");
    mojo_stream s;
    decode_ok(&b, &s);
    assert_int_equal(s.nstacks, 8);
    assert_string_equal(mojo_meta_get(&s, "interval"), "250000");
    size_t n;
    assert_int_equal(mojo_first_pass(&s, &n), CF_OK);
    assert_int_equal(n, 2);
    assert_int_equal(s.stacks[0].tid, 0x22ec);
    assert_int_equal(s.stacks[1].tid, 0x22d9);
    assert_int_equal(s.stacks[2].tid, 0x22ec);
    assert_int_equal(s.stacks[2].time, 250231);
    mojo_stream_free(&s);
    free(b.data);
}

static void test_header_only(void **state)
{
    (void)state;
    bytes b = load("3.13t-plain_calls-bottom-aborted.mojo");
    mojo_stream s;
    decode_ok(&b, &s);
    assert_int_equal(s.version, 3);
    assert_int_equal(s.nstacks, 0);
    assert_int_equal(s.nmeta, 0);
    mojo_stream_free(&s);
    free(b.data);
}

/* Decoding must fail with rc and a message containing needle. */
static void assert_rejected(const unsigned char *data, size_t len, int rc, const char *needle)
{
    char err[ERRLEN];
    mojo_stream s;
    mojo_stream_init(&s);
    int got = mojo_decode(data, len, &s, err, sizeof err);
    mojo_stream_free(&s);
    if (got != rc || !strstr(err, needle))
        fail_msg("want rc %d with \"%s\", got rc %d: %s", rc, needle, got, err);
}

/* Every prefix of a real stream either decodes (cut between events) or is
 * reported as truncated; none is accepted with a partial event. */
static void test_every_truncation(void **state)
{
    (void)state;
    bytes b = load("3.13-plain_calls-bottom.mojo");
    size_t ok = 0, truncated = 0;
    for (size_t len = 0; len < b.len; len++) {
        char err[ERRLEN];
        mojo_stream s;
        mojo_stream_init(&s);
        unsigned char *copy = malloc(len ? len : 1);   /* exact size: ASan sees over-reads */
        assert_non_null(copy);
        memcpy(copy, b.data, len);
        int rc = mojo_decode(copy, len, &s, err, sizeof err);
        if (rc == CF_OK) {
            ok++;
        } else {
            assert_int_equal(rc, CF_E_FORMAT);
            if (len >= 4 && !strstr(err, "truncated"))
                fail_msg("prefix %zu: %s", len, err);
            if (len < 4 && !strstr(err, len < 3 ? "not a MOJO stream" : "truncated"))
                fail_msg("prefix %zu: %s", len, err);
            truncated++;
        }
        mojo_stream_free(&s);
        free(copy);
    }
    /* Cuts between events: after the header and after each of the first 49 of its 50 events. */
    assert_int_equal(ok, 50);
    assert_int_equal(ok + truncated, b.len);
    free(b.data);
}

static void test_bad_header(void **state)
{
    (void)state;
    bytes b = load("3.13-plain_calls-bottom.mojo");
    b.data[0] = 'X';
    assert_rejected(b.data, b.len, CF_E_FORMAT, "not a MOJO stream");
    b.data[0] = 'M';
    b.data[3] = 4;
    assert_rejected(b.data, b.len, CF_E_FORMAT, "MOJO format version 4");
    free(b.data);
}

static void test_varint_overflow(void **state)
{
    (void)state;
    /* STACK with a pid (of value 0) in eleven bytes. */
    static const unsigned char too_long[] = {MOJO_EV_STACK, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                             0x80, 0x80, 0x80, 0x80, 0x00};
    bytes b = with_tail("3.13-plain_calls-bottom.mojo", too_long, sizeof too_long);
    assert_rejected(b.data, b.len, CF_E_FORMAT, "varint longer than 10 bytes");
    free(b.data);
    /* Ten bytes whose last one carries bits beyond 64. */
    static const unsigned char wide[] = {MOJO_EV_STACK, 0xbf, 0xff, 0xff, 0xff, 0xff, 0xff,
                                         0xff, 0xff, 0xff, 0x04};
    b = with_tail("3.13-plain_calls-bottom.mojo", wide, sizeof wide);
    assert_rejected(b.data, b.len, CF_E_FORMAT, "varint overflows 64 bits");
    free(b.data);
    /* The largest 64-bit value is accepted (then the tid is missing). */
    static const unsigned char max[] = {MOJO_EV_STACK, 0xbf, 0xff, 0xff, 0xff, 0xff, 0xff,
                                        0xff, 0xff, 0xff, 0x03};
    b = with_tail("3.13-plain_calls-bottom.mojo", max, sizeof max);
    assert_rejected(b.data, b.len, CF_E_FORMAT, "truncated: the stream ends before interpreter id");
    free(b.data);
}

static void test_bad_references(void **state)
{
    (void)state;
    /* A new STACK, then a FRAME_REF to a key no FRAME defined. */
    static const unsigned char undefined_frame[] = {MOJO_EV_STACK, 1, 0, '1', 0, MOJO_EV_FRAME_REF, 7};
    bytes b = with_tail("3.13-plain_calls-bottom.mojo", undefined_frame, sizeof undefined_frame);
    assert_rejected(b.data, b.len, CF_E_FORMAT, "frame 7 was not defined by a FRAME event");
    free(b.data);
    /* A FRAME whose file name refers to an undefined string. */
    static const unsigned char undefined_string[] = {MOJO_EV_FRAME, 1, 9, 9, 1, 1, 1, 1};
    b = with_tail("3.13-plain_calls-bottom.mojo", undefined_string, sizeof undefined_string);
    assert_rejected(b.data, b.len, CF_E_FORMAT, "file name refers to string 9, which no STRING event defined");
    free(b.data);
    static const unsigned char string_ref[] = {MOJO_EV_STRING_REF, 9};
    b = with_tail("3.13-plain_calls-bottom.mojo", string_ref, sizeof string_ref);
    assert_rejected(b.data, b.len, CF_E_FORMAT, "refers to string 9");
    free(b.data);
}

static void test_bad_structure(void **state)
{
    (void)state;
    /* A frame reference after the last stack's metric. */
    bytes b = load("3.13-plain_calls-bottom.mojo");
    mojo_stream s;
    decode_ok(&b, &s);
    uint64_t key = s.frames[s.stacks[1].first].key;
    mojo_stream_free(&s);
    unsigned char tail[16] = {MOJO_EV_FRAME_REF};
    size_t n = 1;
    /* encode key as a MOJO varint */
    tail[n] = (unsigned char)(key & 0x3f);
    key >>= 6;
    while (key) {
        tail[n++] |= 0x80;
        tail[n] = (unsigned char)(key & 0x7f);
        key >>= 7;
    }
    n++;
    bytes t = with_tail("3.13-plain_calls-bottom.mojo", tail, n);
    assert_rejected(t.data, t.len, CF_E_FORMAT, "after the stack's metric");
    free(t.data);
    free(b.data);

    /* The header alone, then a frame outside any stack. */
    b = load("3.13t-plain_calls-bottom-aborted.mojo");
    static const unsigned char invalid[] = {MOJO_EV_FRAME_INVALID};
    t = with_tail("3.13t-plain_calls-bottom-aborted.mojo", invalid, sizeof invalid);
    assert_rejected(t.data, t.len, CF_E_FORMAT, "outside any STACK");
    free(t.data);
    free(b.data);

    static const unsigned char unknown[] = {MOJO_EV_COUNT};
    t = with_tail("3.13-plain_calls-bottom.mojo", unknown, sizeof unknown);
    assert_rejected(t.data, t.len, CF_E_FORMAT, "unknown event code 13");
    free(t.data);
    static const unsigned char reserved[] = {MOJO_EV_RESERVED};
    t = with_tail("3.13-plain_calls-bottom.mojo", reserved, sizeof reserved);
    assert_rejected(t.data, t.len, CF_E_FORMAT, "(RESERVED event): unknown event code 0");
    free(t.data);
}

static void test_bad_fields(void **state)
{
    (void)state;
    static const unsigned char bad_tid[] = {MOJO_EV_STACK, 1, 0, 'z', 'z', 0};
    bytes t = with_tail("3.13-plain_calls-bottom.mojo", bad_tid, sizeof bad_tid);
    assert_rejected(t.data, t.len, CF_E_FORMAT, "thread id 'zz' is not hexadecimal");
    free(t.data);
    static const unsigned char long_tid[] = {MOJO_EV_STACK, 1, 0, '1', '2', '3', '4', '5', '6', '7', '8', '9',
                                             '0', '1', '2', '3', '4', '5', '6', '7', 0};
    t = with_tail("3.13-plain_calls-bottom.mojo", long_tid, sizeof long_tid);
    assert_rejected(t.data, t.len, CF_E_FORMAT, "is not 1 to 16 hex digits");
    free(t.data);
    static const unsigned char empty_tid[] = {MOJO_EV_STACK, 1, 0, 0};
    t = with_tail("3.13-plain_calls-bottom.mojo", empty_tid, sizeof empty_tid);
    assert_rejected(t.data, t.len, CF_E_FORMAT, "thread id '' is not 1 to 16 hex digits");
    free(t.data);
    /* STRING 5 = "x", then FRAME lines: negative, then beyond 32 bits. */
    static const unsigned char negative[] = {MOJO_EV_STRING, 5, 'x', 0, MOJO_EV_FRAME, 1, 5, 5, 0x41, 1, 1, 1};
    t = with_tail("3.13-plain_calls-bottom.mojo", negative, sizeof negative);
    assert_rejected(t.data, t.len, CF_E_FORMAT, "line is negative");
    free(t.data);
    static const unsigned char wide[] = {MOJO_EV_STRING, 5, 'x', 0, MOJO_EV_FRAME, 1, 5, 5, 1,
                                         0x80, 0x80, 0x80, 0x80, 0x20, 1, 1};
    t = with_tail("3.13-plain_calls-bottom.mojo", wide, sizeof wide);
    assert_rejected(t.data, t.len, CF_E_FORMAT, "end line 4294967296 does not fit 32 bits");
    free(t.data);
    static const unsigned char negative_time[] = {MOJO_EV_METRIC_TIME, 0x41};
    t = with_tail("3.13-plain_calls-bottom.mojo", negative_time, sizeof negative_time);
    assert_rejected(t.data, t.len, CF_E_FORMAT, "time delta is negative");
    free(t.data);
}

static void test_string_limit(void **state)
{
    (void)state;
    size_t n = (size_t)CF_MOJO_MAX_STRING + 16;
    unsigned char *big = malloc(n);
    assert_non_null(big);
    memcpy(big, "MOJ\x03\x0b\x01", 6);
    memset(big + 6, 'a', n - 6);
    assert_rejected(big, n, CF_E_LIMIT, "string longer than 1048576 bytes");
    big[n - 1] = 0;
    assert_rejected(big, n, CF_E_LIMIT, "string longer than 1048576 bytes");
    free(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_calls_bottom),
        cmocka_unit_test(test_plain_calls_multiline),
        cmocka_unit_test(test_debug_build),
        cmocka_unit_test(test_named_threads),
        cmocka_unit_test(test_subinterpreter),
        cmocka_unit_test(test_four_passes),
        cmocka_unit_test(test_header_only),
        cmocka_unit_test(test_every_truncation),
        cmocka_unit_test(test_bad_header),
        cmocka_unit_test(test_varint_overflow),
        cmocka_unit_test(test_bad_references),
        cmocka_unit_test(test_bad_structure),
        cmocka_unit_test(test_bad_fields),
        cmocka_unit_test(test_string_limit),
    };
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests_name("mojo", tests, NULL, NULL);
}
