/* test_writers.c — junit.xml and matrix.md rendered from a hand-written
 * report object (pass, fail, skip, n/a, error and not-run cases of two
 * unwinders on two interpreters), compared byte for byte with the expected
 * files; XML escaping; reports without their lists. */
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
#include "junit.h"
#include "matrix.h"
#include "util.h"

#define PATH_LEN 4096u
#define ERR_LEN 512u

typedef int (*render_fn)(json_object *report, cf_strbuf *out);

static void renders_as(render_fn render, const char *report_file, const char *expected_file)
{
    char path[PATH_LEN], err[ERR_LEN] = "";
    cu_fixture(path, sizeof path, report_file);
    json_object *report = NULL;
    if (cf_json_read_file(path, &report, err, sizeof err) != CF_OK)
        fail_msg("%s", err);
    cu_fixture(path, sizeof path, expected_file);
    char *expected = cu_read_file(path, NULL);
    cf_strbuf sb;
    cf_sb_init(&sb);
    assert_int_equal(render(report, &sb), CF_OK);
    assert_string_equal(cf_sb_str(&sb), expected);
    cf_sb_free(&sb);
    free(expected);
    json_object_put(report);
}

static void test_junit_mix(void **state)
{
    (void)state;
    renders_as(cf_junit_render, "report_mix.json", "report_mix.junit.xml");
}

static void test_matrix_mix(void **state)
{
    (void)state;
    renders_as(cf_matrix_render, "report_mix.json", "report_mix.md");
}

/* A run that selected nothing. */
static void test_empty_report(void **state)
{
    (void)state;
    json_object *r = cu_json("{\"interrupted\":false,\"seconds\":0,\"options\":{},\"interpreters\":[],"
                             "\"unwinder_names\":[\"frameproof\"],\"unwinders\":[],\"scenarios\":[],\"cases\":[]}");
    cf_strbuf sb;
    cf_sb_init(&sb);
    assert_int_equal(cf_junit_render(r, &sb), CF_OK);
    assert_string_equal(cf_sb_str(&sb), "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                                        "<testsuites name=\"frameproof conform\" tests=\"0\" failures=\"0\" "
                                        "errors=\"0\" skipped=\"0\" time=\"0.000\">\n</testsuites>\n");
    cf_sb_clear(&sb);
    assert_int_equal(cf_matrix_render(r, &sb), CF_OK);
    assert_string_equal(cf_sb_str(&sb),
                        "# frameproof conform\n\n## State of the field\n\nCases passed/FAILED per unwinder and "
                        "interpreter (a case passes when every sample of every configuration of the unwinder "
                        "matched the ground truth).\n\n| unwinder |\n|---|\n| frameproof |\n\n**Totals:** 0 cases "
                        "(scenario x interpreter): 0 pass, 0 FAIL, 0 skip, 0 error (0.0 s).\n\n## frameproof\n\n"
                        "| scenario |\n|---|\n\n**frameproof:** 0 pass, 0 FAIL, 0 error, 0 skip (scenario does not "
                        "apply), 0 n/a (unwinder does not apply).\n");
    cf_sb_free(&sb);
    json_object_put(r);
}

static void test_report_without_lists(void **state)
{
    (void)state;
    static const char *const broken[] = {
        "{}",
        "{\"interpreters\":[],\"unwinder_names\":[],\"unwinders\":[],\"scenarios\":[]}",
        "{\"cases\":[],\"unwinder_names\":[],\"unwinders\":[],\"scenarios\":[]}",
        "{\"cases\":[],\"interpreters\":[],\"unwinders\":[],\"scenarios\":[],\"unwinder_names\":{}}",
    };
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        json_object *r = cu_json(broken[i]);
        cf_strbuf sb;
        cf_sb_init(&sb);
        assert_int_equal(cf_junit_render(r, &sb), CF_E_FORMAT);
        assert_int_equal(cf_matrix_render(r, &sb), CF_E_FORMAT);
        assert_int_equal(sb.len, 0);
        cf_sb_free(&sb);
        json_object_put(r);
    }
}

static void escapes_as(const char *in, const char *expected)
{
    cf_strbuf sb;
    cf_sb_init(&sb);
    assert_int_equal(cf_xml_escape(&sb, in), CF_OK);
    assert_string_equal(cf_sb_str(&sb), expected);
    cf_sb_free(&sb);
}

#define FFFD "\xEF\xBF\xBD"

static void test_xml_escape(void **state)
{
    (void)state;
    escapes_as("a<b>&\"c'", "a&lt;b&gt;&amp;&quot;c&apos;");
    escapes_as("tab\tnl\ncr\r", "tab\tnl\ncr\r");
    escapes_as("\x01\x08\x0b\x0c\x1f.", "?????.");
    escapes_as("\x7f", "\x7f");
    escapes_as("caf\xC3\xA9 \xE6\xA8\xA1 \xF0\x9D\x94\xAA", "caf\xC3\xA9 \xE6\xA8\xA1 \xF0\x9D\x94\xAA");
    /* Invalid UTF-8: a stray continuation byte, a truncated sequence, an
     * overlong NUL, a byte that never starts UTF-8. */
    escapes_as("\x80x", FFFD "x");
    escapes_as("\xE6\xA8", FFFD FFFD);
    escapes_as("\xC0\x80", FFFD FFFD);
    escapes_as("\xFF", FFFD);
    /* A lone surrogate as Python strings may hold it, and U+FFFE/U+FFFF. */
    escapes_as("\xED\xB2\x80", FFFD FFFD FFFD);
    escapes_as("\xEF\xBF\xBE\xEF\xBF\xBF\xEF\xBF\xBD", "??" FFFD);
    escapes_as("", "");
    escapes_as(NULL, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_junit_mix),
        cmocka_unit_test(test_matrix_mix),
        cmocka_unit_test(test_empty_report),
        cmocka_unit_test(test_report_without_lists),
        cmocka_unit_test(test_xml_escape),
    };
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests_name("conform_unit_writers", tests, NULL, NULL);
}
