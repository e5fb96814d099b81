/* cu_helpers.c — see cu_helpers.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "conform.h"
#include "cu_helpers.h"

static void join(char *out, size_t outlen, const char *var, const char *dflt, const char *rel)
{
    const char *dir = getenv(var);
    int n = snprintf(out, outlen, "%s/%s", dir ? dir : dflt, rel);
    if (n < 0 || (size_t)n >= outlen)
        fail_msg("path too long: %s", rel);
}

void cu_test_data(char *out, size_t outlen, const char *rel)
{
    join(out, outlen, "FP_TEST_DATA", "tests/data", rel);
}

void cu_fixture(char *out, size_t outlen, const char *rel)
{
    join(out, outlen, "FP_CU_DATA", "tests/conform_unit/data", rel);
}

char *cu_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    assert_non_null(buf);
    for (;;) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1)
            break;
        cap *= 2;
        buf = realloc(buf, cap);
        assert_non_null(buf);
    }
    fclose(f);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

json_object *cu_json(const char *text)
{
    json_object *o = json_tokener_parse(text);
    if (!o)
        fail_msg("bad JSON in a test: %s", text);
    return o;
}

void cu_assert_json(json_object *got, const char *expected)
{
    json_object *want = cu_json(expected);
    if (!json_object_equal(got, want)) {
        print_error("expected %s\n", json_object_to_json_string_ext(want, JSON_C_TO_STRING_PLAIN));
        print_error("     got %s\n", json_object_to_json_string_ext(got, JSON_C_TO_STRING_PLAIN));
        json_object_put(want);
        fail();
    }
    json_object_put(want);
}

cf_frame cu_frame(const char *function, const char *file, int32_t line, int32_t column, int32_t width)
{
    cf_frame f = {
        .function = function, .name = function, .file = file,
        .line = line, .end_line = line, .column = column, .end_column = column + width,
        .kind = CF_KIND_PYTHON,
    };
    return f;
}

cf_thread *cu_add_thread(cf_sample *s, uint64_t native_id, uint64_t thread_id, const cf_frame *frames, size_t n)
{
    cf_thread proto = {.native_id = native_id, .thread_id = thread_id, .exception = CF_UNKNOWN};
    assert_int_equal(cf_sample_add_thread(s, &proto, NULL), CF_OK);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(cf_sample_add_frame(s, &frames[i]), CF_OK);
    return &s->threads[s->nthreads - 1];
}
