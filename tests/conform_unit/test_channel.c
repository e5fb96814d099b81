/* test_channel.c — the harness side of the ground-truth channel: line
 * reading over a pipe (batched and split lines, EOF, the deadline, the
 * line-length limit), lone-surrogate escapes, malformed lines and
 * "continue". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "channel.h"
#include "conform.h"
#include "cu_helpers.h"
#include "util.h"

#define SHORT_WAIT_S 0.05      /* a deadline that passes during the test */
#define LONG_WAIT_S 10.0       /* a deadline that never passes during the test */
#define ERR_LEN 512u

typedef struct pipe_fx {
    int rd, wr;
    cf_linebuf lb;
} pipe_fx;

static int pipe_setup(void **state)
{
    pipe_fx *p = calloc(1, sizeof *p);
    int fds[2];
    if (!p || pipe(fds) != 0) {
        free(p);
        return -1;
    }
    p->rd = fds[0];
    p->wr = fds[1];
    cf_linebuf_init(&p->lb);
    *state = p;
    return 0;
}

static int pipe_teardown(void **state)
{
    pipe_fx *p = *state;
    close(p->rd);
    if (p->wr >= 0)
        close(p->wr);
    cf_linebuf_free(&p->lb);
    free(p);
    return 0;
}

static void put(int fd, const char *s, size_t n)
{
    while (n) {
        ssize_t w = write(fd, s, n);
        assert_true(w > 0);
        s += w;
        n -= (size_t)w;
    }
}

static void puts_fd(int fd, const char *s)
{
    put(fd, s, strlen(s));
}

/* Reads one line and checks its status and text. */
static void read_is(pipe_fx *p, double wait, int rc, const char *text)
{
    char *line = NULL;
    size_t len = SIZE_MAX;
    assert_int_equal(cf_linebuf_read(&p->lb, p->rd, cf_now() + wait, &line, &len), rc);
    if (!text)
        return;
    assert_non_null(line);
    assert_int_equal(len, strlen(text));
    assert_memory_equal(line, text, len);
    assert_int_equal(line[len], '\0');
}

static void test_lines_in_one_write(void **state)
{
    pipe_fx *p = *state;
    puts_fd(p->wr, "{\"event\":\"hello\"}\n\nsecond\nthird\n");
    read_is(p, LONG_WAIT_S, CF_OK, "{\"event\":\"hello\"}");
    read_is(p, LONG_WAIT_S, CF_OK, "");
    read_is(p, LONG_WAIT_S, CF_OK, "second");
    read_is(p, LONG_WAIT_S, CF_OK, "third");
    close(p->wr);
    p->wr = -1;
    read_is(p, LONG_WAIT_S, CF_E_EOF, "");
}

static void test_line_split_across_writes(void **state)
{
    pipe_fx *p = *state;
    puts_fd(p->wr, "first half ");
    double start = cf_now();
    read_is(p, SHORT_WAIT_S, CF_E_TIMEOUT, NULL);
    assert_true(cf_now() - start >= SHORT_WAIT_S);
    puts_fd(p->wr, "second half\nnext");
    read_is(p, LONG_WAIT_S, CF_OK, "first half second half");
    read_is(p, SHORT_WAIT_S, CF_E_TIMEOUT, NULL);
    puts_fd(p->wr, " line\nlast, unterminated");
    read_is(p, LONG_WAIT_S, CF_OK, "next line");
    close(p->wr);
    p->wr = -1;
    read_is(p, LONG_WAIT_S, CF_E_EOF, "last, unterminated");
}

static void test_deadline_passed(void **state)
{
    pipe_fx *p = *state;
    puts_fd(p->wr, "no newline yet");
    read_is(p, -1.0, CF_E_TIMEOUT, NULL);
    /* A complete line is returned even after the deadline. */
    puts_fd(p->wr, "\n");
    read_is(p, LONG_WAIT_S, CF_OK, "no newline yet");
    puts_fd(p->wr, "ready\n");
    usleep(1000);
    read_is(p, LONG_WAIT_S, CF_OK, "ready");
}

/* A file of n NUL bytes (a hole: nothing is written) and then `tail`,
 * standing in for the pipe. */
static int channel_file(size_t n, const char *tail)
{
    int fd = memfd_create("channel", 0);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)n), 0);
    assert_int_equal(lseek(fd, 0, SEEK_END), (off_t)n);
    put(fd, tail, strlen(tail));
    assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
    return fd;
}

static int read_file_line(int fd, size_t *len)
{
    cf_linebuf lb;
    cf_linebuf_init(&lb);
    char *line = NULL;
    int rc = cf_linebuf_read(&lb, fd, cf_now() + LONG_WAIT_S, &line, len);
    cf_linebuf_free(&lb);
    close(fd);
    return rc;
}

/* The limit on real lengths: from a file, 64 MiB arrive in a few large
 * reads. */
static void test_line_limit(void **state)
{
    (void)state;
    size_t len = 0;
    assert_int_equal(read_file_line(channel_file(CF_MAX_LINE_BYTES, "\nnext\n"), &len), CF_OK);
    assert_int_equal(len, CF_MAX_LINE_BYTES);
    assert_int_equal(read_file_line(channel_file(CF_MAX_LINE_BYTES + 1, ""), &len), CF_E_LIMIT);
    /* The newline comes in the same read as the byte over the limit. */
    assert_int_equal(read_file_line(channel_file(CF_MAX_LINE_BYTES + 1, "\n"), &len), CF_E_LIMIT);
}

static void parse_ok(const char *text, const char *key, const char *expected, size_t expected_len)
{
    char *line = strdup(text);
    assert_non_null(line);
    json_object *o = NULL;
    char err[ERR_LEN] = "";
    assert_int_equal(cf_channel_parse(line, strlen(line), &o, err, sizeof err), CF_OK);
    json_object *v = json_object_object_get(o, key);
    assert_int_equal(json_object_get_string_len(v), expected_len);
    assert_memory_equal(json_object_get_string(v), expected, expected_len);
    json_object_put(o);
    free(line);
}

static void test_surrogates(void **state)
{
    (void)state;
    parse_ok("{\"s\":\"plain\"}", "s", "plain", 5);
    /* Lone low and high surrogates: their 3-byte encodings. */
    parse_ok("{\"s\":\"a\\udc80b\"}", "s", "a\xED\xB2\x80" "b", 5);
    parse_ok("{\"s\":\"\\uD800x\"}", "s", "\xED\xA0\x80x", 4);
    parse_ok("{\"s\":\"\\ud800\\u0041\"}", "s", "\xED\xA0\x80" "A", 4);
    parse_ok("{\"s\":\"\\udfff\"}", "s", "\xED\xBF\xBF", 3);
    /* A pair stays a pair: U+1F600. */
    parse_ok("{\"s\":\"\\ud83d\\ude00\"}", "s", "\xF0\x9F\x98\x80", 4);
    /* Two lone ones in a row, low first. */
    parse_ok("{\"s\":\"\\udc00\\ud800\"}", "s", "\xED\xB0\x80\xED\xA0\x80", 6);
    /* An escaped backslash before "udc80" is not an escape. */
    parse_ok("{\"s\":\"\\\\udc80\"}", "s", "\\udc80", 6);
    /* Not a surrogate: unchanged. */
    parse_ok("{\"s\":\"\\u00e9\\ud7ff\\ue000\"}", "s", "\xC3\xA9\xED\x9F\xBF\xEE\x80\x80", 8);
}

static void parse_fails(const char *text, size_t len, const char *expected_err)
{
    char *line = malloc(len + 1);
    assert_non_null(line);
    memcpy(line, text, len);
    line[len] = '\0';
    json_object *o = (json_object *)line;
    char err[ERR_LEN] = "";
    assert_int_equal(cf_channel_parse(line, len, &o, err, sizeof err), CF_E_FORMAT);
    assert_null(o);
    assert_string_equal(err, expected_err);
    free(line);
}

static void test_malformed(void **state)
{
    (void)state;
    parse_fails("{\"event\":", 9, "non-JSON line from target: \"{\"event\":\" (9 bytes)");
    parse_fails("{} {}", 5, "non-JSON line from target: \"{} {}\" (5 bytes)");
    parse_fails("Traceback (most recent call last):", 34,
                "non-JSON line from target: \"Traceback (most recent call last):\" (34 bytes)");
    parse_fails("[1,2]", 5, "channel line is not a JSON object: \"[1,2]\" (5 bytes)");
    parse_fails("\"x\"", 3, "channel line is not a JSON object: \"\"x\"\" (3 bytes)");
    parse_fails("", 0, "non-JSON line from target: \"\" (0 bytes)");
    parse_fails("{}\0{}", 5, "non-JSON line from target (NUL byte): \"{}\\x00{}\" (5 bytes)");
    parse_fails("\x01oops\xff", 6, "non-JSON line from target: \"\\x01oops\\xff\" (6 bytes)");
    /* The fixed-up text is quoted: a lone surrogate as its 3 bytes. */
    parse_fails("{\"s\":\"\\udc80", 12, "non-JSON line from target: \"{\"s\":\"\\xed\\xb2\\x80\" (9 bytes)");

    char long_line[CF_PREVIEW_BYTES + 50];
    memset(long_line, 'z', sizeof long_line);
    char expected[CF_PREVIEW_BYTES + 100];
    snprintf(expected, sizeof expected, "non-JSON line from target: \"%.*s\"... (%zu bytes)", (int)CF_PREVIEW_BYTES,
             long_line, sizeof long_line);
    parse_fails(long_line, sizeof long_line, expected);
}

static void test_continue(void **state)
{
    pipe_fx *p = *state;
    assert_int_equal(cf_channel_continue(p->wr), CF_OK);
    char buf[16] = "";
    assert_int_equal(read(p->rd, buf, sizeof buf), 9);
    assert_string_equal(buf, "continue\n");
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    close(fds[0]);
    assert_int_equal(cf_channel_continue(fds[1]), CF_E_IO);
    close(fds[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_lines_in_one_write, pipe_setup, pipe_teardown),
        cmocka_unit_test_setup_teardown(test_line_split_across_writes, pipe_setup, pipe_teardown),
        cmocka_unit_test_setup_teardown(test_deadline_passed, pipe_setup, pipe_teardown),
        cmocka_unit_test(test_line_limit),
        cmocka_unit_test(test_surrogates),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test_setup_teardown(test_continue, pipe_setup, pipe_teardown),
    };
    /* A write to a closed pipe must fail with EPIPE, not end the test. */
    signal(SIGPIPE, SIG_IGN);
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests_name("conform_unit_channel", tests, NULL, NULL);
}
