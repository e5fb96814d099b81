/* test_manifest.c — the interpreter manifest (loading, validation of
 * every entry, duplicate ids), version parsing, and whether a scenario
 * applies to an interpreter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include <cmocka.h>

#include "conform.h"
#include "util.h"
#include "cu_helpers.h"
#include "manifest.h"
#include "scenarios.h"

#define PATH_LEN 256u
#define ERR_LEN 512u /* > PATH_LEN + the longest reason */
#define REASON_LEN 64u
#define LEN(a) (sizeof(a) / sizeof((a)[0]))

#define E313 "{\"id\":\"3.13\",\"version\":\"3.13.18\",\"root\":\"/srv/sid\",\"argv\":[\"/usr/bin/python3.13\",\"-X\",\"dev\"]}"
#define E315JIT                                                                                                    \
    "{\"id\":\"3.15+jit\",\"version\":\"3.15.2\",\"jit\":true,\"root\":\"/srv/sid\",\"argv\":[\"/usr/bin/python3.15\"]," \
    "\"env\":{\"PYTHON_JIT\":\"1\",\"X\":\"a=b\"}}"
#define E313T "{\"id\":\"3.13t\",\"version\":\"3.13.15\",\"free_threaded\":true,\"argv\":[\"python3.13t\"]}"

static void version_is(const char *s, int major, int minor)
{
    int a = -1, b = -1;
    if (cf_parse_version(s, &a, &b) != CF_OK)
        fail_msg("\"%s\" rejected", s);
    assert_int_equal(a, major);
    assert_int_equal(b, minor);
}

static void test_parse_version(void **state)
{
    (void)state;
    version_is("3.15", 3, 15);
    version_is("3.15.2", 3, 15);
    version_is("3.13.0rc1", 3, 13);
    version_is("3.14t", 3, 14);
    version_is("99.999", 99, 999);
    static const char *const bad[] = {"", "3", "3.", "3.x", ".3", "x3.1", "-3.1", "3.-1", "100.1", "3.1000",
                                      " 3.1", "99999999999999999999.1", "3.99999999999999999999"};
    for (size_t i = 0; i < LEN(bad); i++) {
        int a = -1, b = -1;
        if (cf_parse_version(bad[i], &a, &b) != CF_E_FORMAT)
            fail_msg("\"%s\" accepted", bad[i]);
        assert_int_equal(a, -1);
        assert_int_equal(b, -1);
    }
    int a, b;
    assert_int_equal(cf_parse_version(NULL, &a, &b), CF_E_FORMAT);
}

static void add_ok(cf_manifest *m, const char *text)
{
    json_object *e = cu_json(text);
    char err[ERR_LEN] = "";
    if (cf_manifest_add(m, e, err, sizeof err) != CF_OK)
        fail_msg("%s: %s", text, err);
    json_object_put(e);
}

static void test_add(void **state)
{
    (void)state;
    cf_manifest m = {0};
    add_ok(&m, E313);
    add_ok(&m, E313T);
    add_ok(&m, "{\"id\":\"3.16\",\"version\":\"3.16.0a1\",\"debug\":true,\"root\":\"/\",\"argv\":[\"python3.16\"]}");
    assert_int_equal(m.count, 3);
    const cf_interp *a = &m.items[0], *t = &m.items[1], *n = &m.items[2];
    assert_string_equal(a->id, "3.13");
    assert_string_equal(a->version, "3.13.18");
    assert_string_equal(a->root, "/srv/sid");
    assert_int_equal(a->argc, 3);
    assert_string_equal(a->argv[0], "/usr/bin/python3.13");
    assert_string_equal(a->argv[2], "dev");
    assert_null(a->argv[3]);
    assert_int_equal(a->major, 3);
    assert_int_equal(a->minor, 13);
    assert_false(a->free_threaded);
    assert_false(a->debug);
    assert_true(cf_interp_chrooted(a));
    assert_false(cf_interp_untested(a));
    /* Defaults: root "/", no debug, no JIT, an empty environment. */
    assert_false(a->jit);
    assert_int_equal(a->envc, 0);
    assert_non_null(a->env);
    assert_null(a->env[0]);
    assert_string_equal(t->root, "/");
    assert_true(t->free_threaded);
    assert_false(cf_interp_chrooted(t));
    assert_true(n->debug);
    assert_true(cf_interp_untested(n));
    assert_int_equal(cf_manifest_find(&m, "3.13t"), 1);
    assert_int_equal(cf_manifest_find(&m, "3.1"), -1);
    cf_manifest_free(&m);
    assert_null(m.items);
    assert_int_equal(m.count, 0);
}

/* A "+jit" entry: its "env" becomes NAME=VALUE strings in the object's
 * order (a value may hold '='), and "jit" is read. */
static void test_env(void **state)
{
    (void)state;
    cf_manifest m = {0};
    add_ok(&m, E315JIT);
    add_ok(&m, "{\"id\":\"e\",\"version\":\"3.15\",\"argv\":[\"p\"],\"env\":{}}");
    const cf_interp *j = &m.items[0], *e = &m.items[1];
    assert_true(j->jit);
    assert_int_equal(j->envc, 2);
    assert_string_equal(j->env[0], "PYTHON_JIT=1");
    assert_string_equal(j->env[1], "X=a=b");
    assert_null(j->env[2]);
    assert_false(e->jit);
    assert_int_equal(e->envc, 0);
    assert_null(e->env[0]);
    cf_manifest_free(&m);
}

/* "modules": the names joined by spaces; absent is NULL (the manifest does
 * not say), empty is "" (none installed). */
static void test_modules(void **state)
{
    (void)state;
    cf_manifest m = {0};
    add_ok(&m, "{\"id\":\"a\",\"version\":\"3.11\",\"argv\":[\"p\"],\"modules\":[\"greenlet\",\"gevent\"]}");
    add_ok(&m, "{\"id\":\"b\",\"version\":\"3.11\",\"argv\":[\"p\"],\"modules\":[]}");
    add_ok(&m, "{\"id\":\"c\",\"version\":\"3.11\",\"argv\":[\"p\"]}");
    assert_string_equal(m.items[0].modules, "greenlet gevent");
    assert_true(cf_names_have(m.items[0].modules, "gevent"));
    assert_true(cf_names_have(m.items[0].modules, "greenlet"));
    assert_false(cf_names_have(m.items[0].modules, "green"));
    assert_false(cf_names_have(m.items[0].modules, "greenlet gevent"));
    assert_string_equal(m.items[1].modules, "");
    assert_false(cf_names_have(m.items[1].modules, "greenlet"));
    assert_null(m.items[2].modules);
    cf_manifest_free(&m);
}

/* cf_names_next steps through the names in order and stops at the end; a
 * NULL or empty list has none. */
static void test_names_next(void **state)
{
    (void)state;
    const char *cursor = "greenlet gevent x";
    size_t len = 0;
    const char *p = cf_names_next(&cursor, &len);
    assert_non_null(p);
    assert_int_equal(len, 8);
    assert_memory_equal(p, "greenlet", 8);
    p = cf_names_next(&cursor, &len);
    assert_int_equal(len, 6);
    assert_memory_equal(p, "gevent", 6);
    p = cf_names_next(&cursor, &len);
    assert_int_equal(len, 1);
    assert_memory_equal(p, "x", 1);
    assert_null(cf_names_next(&cursor, &len));
    assert_null(cf_names_next(&cursor, &len));
    cursor = "";
    assert_null(cf_names_next(&cursor, &len));
    cursor = NULL;
    assert_null(cf_names_next(&cursor, &len));
}

typedef struct bad_entry {
    const char *json, *err;
} bad_entry;

static const bad_entry BAD[] = {
    {"[]", "entry 1 is not an object"},
    {"{\"version\":\"3.13\",\"argv\":[\"p\"]}", "entry 1: missing \"id\""},
    {"{\"id\":\"\",\"version\":\"3.13\",\"argv\":[\"p\"]}", "entry 1: missing \"id\""},
    {"{\"id\":7,\"version\":\"3.13\",\"argv\":[\"p\"]}", "entry 1: missing \"id\""},
    {"{\"id\":\"x\",\"argv\":[\"p\"]}", "interpreter x: missing or invalid \"version\""},
    {"{\"id\":\"x\",\"version\":\"three\",\"argv\":[\"p\"]}", "interpreter x: missing or invalid \"version\""},
    {"{\"id\":\"x\",\"version\":3.13,\"argv\":[\"p\"]}", "interpreter x: missing or invalid \"version\""},
    {"{\"id\":\"x\",\"version\":\"3.13\",\"root\":\"srv/sid\",\"argv\":[\"p\"]}",
     "interpreter x: \"root\" must be an absolute path"},
    {"{\"id\":\"x\",\"version\":\"3.13\",\"root\":\"\",\"argv\":[\"p\"]}",
     "interpreter x: \"root\" must be an absolute path"},
    {"{\"id\":\"x\",\"version\":\"3.13\"}", "interpreter x: \"argv\" must be a non-empty array"},
    {"{\"id\":\"x\",\"version\":\"3.13\",\"argv\":[]}", "interpreter x: \"argv\" must be a non-empty array"},
    {"{\"id\":\"x\",\"version\":\"3.13\",\"argv\":\"python3\"}", "interpreter x: \"argv\" must be a non-empty array"},
    {"{\"id\":\"x\",\"version\":\"3.13\",\"argv\":[\"p\",3]}", "interpreter x: \"argv\" must hold strings"},
    {"{\"id\":\"3.13\",\"version\":\"3.13.1\",\"argv\":[\"p\"]}", "duplicate interpreter id \"3.13\""},
    {"{\"id\":\"x\",\"version\":\"3.15\",\"argv\":[\"p\"],\"env\":[\"PYTHON_JIT=1\"]}",
     "interpreter x: \"env\" must be an object"},
    {"{\"id\":\"x\",\"version\":\"3.15\",\"argv\":[\"p\"],\"modules\":\"greenlet\"}",
     "interpreter x: \"modules\" must be an array of names"},
    {"{\"id\":\"x\",\"version\":\"3.15\",\"argv\":[\"p\"],\"modules\":[\"green let\"]}",
     "interpreter x: \"modules\" must be an array of names"},
    {"{\"id\":\"x\",\"version\":\"3.15\",\"argv\":[\"p\"],\"modules\":[\"\"]}",
     "interpreter x: \"modules\" must be an array of names"},
    {"{\"id\":\"x\",\"version\":\"3.15\",\"argv\":[\"p\"],\"env\":\"PYTHON_JIT=1\"}",
     "interpreter x: \"env\" must be an object"},
    {"{\"id\":\"x\",\"version\":\"3.15\",\"argv\":[\"p\"],\"env\":{\"PYTHON_JIT\":1}}",
     "interpreter x: \"env\" value of PYTHON_JIT must be a string"},
    {"{\"id\":\"x\",\"version\":\"3.15\",\"argv\":[\"p\"],\"env\":{\"A\":\"1\",\"B\":null}}",
     "interpreter x: \"env\" value of B must be a string"},
    {"{\"id\":\"x\",\"version\":\"3.15\",\"argv\":[\"p\"],\"env\":{\"\":\"1\"}}",
     "interpreter x: \"env\" name \"\" is empty or holds '='"},
    {"{\"id\":\"x\",\"version\":\"3.15\",\"argv\":[\"p\"],\"env\":{\"A=B\":\"1\"}}",
     "interpreter x: \"env\" name \"A=B\" is empty or holds '='"},
};

static void test_bad_entries(void **state)
{
    (void)state;
    cf_manifest m = {0};
    add_ok(&m, E313);
    for (size_t i = 0; i < LEN(BAD); i++) {
        json_object *e = cu_json(BAD[i].json);
        char err[ERR_LEN] = "";
        assert_int_equal(cf_manifest_add(&m, e, err, sizeof err), CF_E_FORMAT);
        assert_string_equal(err, BAD[i].err);
        /* The manifest is unchanged. */
        assert_int_equal(m.count, 1);
        assert_string_equal(m.items[0].id, "3.13");
        json_object_put(e);
    }
    cf_manifest_free(&m);
}

/* Writes text to a fresh file in a temporary directory. */
static void write_manifest(char *path, size_t len, char *dir, const char *text)
{
    assert_non_null(mkdtemp(dir));
    snprintf(path, len, "%s/%s", dir, CF_MANIFEST_NAME);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void load_fails(const char *text, const char *reason)
{
    char dir[] = "/tmp/cu-manifest-XXXXXX", path[PATH_LEN], err[ERR_LEN] = "", expected[ERR_LEN];
    write_manifest(path, sizeof path, dir, text);
    cf_manifest m;
    assert_int_equal(cf_manifest_load(path, &m, err, sizeof err), CF_E_FORMAT);
    snprintf(expected, sizeof expected, "%s: %s", path, reason);
    assert_string_equal(err, expected);
    assert_null(m.items);
    assert_int_equal(m.count, 0);
    unlink(path);
    rmdir(dir);
}

static void test_load(void **state)
{
    (void)state;
    char dir[] = "/tmp/cu-manifest-XXXXXX", path[PATH_LEN], err[ERR_LEN] = "";
    write_manifest(path, sizeof path, dir, "{\"interpreters\":[" E313 "," E313T "]}\n");
    cf_manifest m;
    assert_int_equal(cf_manifest_load(path, &m, err, sizeof err), CF_OK);
    assert_int_equal(m.count, 2);
    assert_string_equal(m.items[0].id, "3.13");
    assert_string_equal(m.items[1].argv[0], "python3.13t");
    cf_manifest_free(&m);
    unlink(path);

    char expected[ERR_LEN];
    snprintf(expected, sizeof expected, "cannot open %s: No such file or directory", path);
    assert_int_equal(cf_manifest_load(path, &m, err, sizeof err), CF_E_NOTFOUND);
    assert_string_equal(err, expected);
    rmdir(dir);

    load_fails("{\"interpreter\":[]}", "no \"interpreters\" array");
    load_fails("{\"interpreters\":[" E313 "," E313T "," E313 "]}", "duplicate interpreter id \"3.13\"");
    load_fails("{\"interpreters\":[" E313 ",{\"id\":\"y\",\"version\":\"3.12\",\"argv\":[]}]}",
               "interpreter y: \"argv\" must be a non-empty array");
}

static void test_empty_manifest(void **state)
{
    (void)state;
    char dir[] = "/tmp/cu-manifest-XXXXXX", path[PATH_LEN], err[ERR_LEN] = "";
    write_manifest(path, sizeof path, dir, "{\"interpreters\":[]}");
    cf_manifest m;
    assert_int_equal(cf_manifest_load(path, &m, err, sizeof err), CF_OK);
    assert_int_equal(m.count, 0);
    assert_int_equal(cf_manifest_find(&m, "3.13"), -1);
    cf_manifest_free(&m);
    unlink(path);
    rmdir(dir);
}

static const char *skip_on(const cf_scenario *s, int minor, bool ft, char *buf)
{
    cf_interp in = {.major = 3, .minor = minor, .free_threaded = ft, .modules = ""};
    return cf_scenario_skip_reason(s, &in, buf, REASON_LEN);
}

/* An index entry's "modules" is read as the manifest's is; anything but
 * an array of names is refused with the scenario's name. */
static void test_index_modules(void **state)
{
    (void)state;
    char dir[] = "/tmp/cu-index-XXXXXX", path[PATH_LEN], err[ERR_LEN] = "";
    write_manifest(path, sizeof path, dir,
                   "{\"scenarios\":[{\"name\":\"g\",\"file\":\"g.py\",\"modules\":[\"greenlet\"]},"
                   "{\"name\":\"p\",\"file\":\"p.py\"}]}");
    cf_index ix;
    assert_int_equal(cf_index_load(path, &ix, err, sizeof err), CF_OK);
    assert_int_equal(ix.count, 2);
    assert_string_equal(ix.items[0].modules, "greenlet");
    assert_null(ix.items[1].modules);
    cf_index_free(&ix);
    unlink(path);
    rmdir(dir);
    strcpy(dir, "/tmp/cu-index-XXXXXX");
    write_manifest(path, sizeof path, dir, "{\"scenarios\":[{\"name\":\"g\",\"file\":\"g.py\",\"modules\":[7]}]}");
    assert_int_not_equal(cf_index_load(path, &ix, err, sizeof err), CF_OK);
    assert_non_null(strstr(err, "scenario g: \"modules\" must be an array of names"));
    unlink(path);
    rmdir(dir);
}

/* A scenario that needs modules applies where the manifest lists them all,
 * after the version and build checks. */
static void test_skip_modules(void **state)
{
    (void)state;
    char buf[CF_REASON_LEN];
    cf_scenario gl = {.name = "gl", .min_major = 3, .min_minor = 11, .builds = CF_BUILDS_GIL,
                      .modules = "greenlet gevent"};
    cf_interp both = {.id = "i", .major = 3, .minor = 11, .modules = "gevent x greenlet"};
    assert_null(cf_scenario_skip_reason(&gl, &both, buf, sizeof buf));
    cf_interp one = {.id = "i", .major = 3, .minor = 11, .modules = "greenlet"};
    assert_string_equal(cf_scenario_skip_reason(&gl, &one, buf, sizeof buf),
                        "needs module gevent, not installed for this interpreter");
    cf_interp none = {.id = "i", .major = 3, .minor = 11, .modules = ""};
    assert_string_equal(cf_scenario_skip_reason(&gl, &none, buf, sizeof buf),
                        "needs module greenlet, not installed for this interpreter");
    cf_interp unsaid = {.id = "i", .major = 3, .minor = 11};
    assert_string_equal(cf_scenario_skip_reason(&gl, &unsaid, buf, sizeof buf),
                        "needs module greenlet, and the manifest does not say whether i has it "
                        "(targets/provision --check-only writes it)");
    cf_interp old = {.id = "i", .major = 3, .minor = 10, .modules = "greenlet gevent"};
    assert_string_equal(cf_scenario_skip_reason(&gl, &old, buf, sizeof buf), "needs Python >= 3.11");
    cf_interp ft = {.id = "i", .major = 3, .minor = 13, .free_threaded = true};
    assert_string_equal(cf_scenario_skip_reason(&gl, &ft, buf, sizeof buf), "GIL builds only");
}

static void test_skip_reason(void **state)
{
    (void)state;
    char buf[REASON_LEN];
    cf_scenario any = {.name = "any", .min_major = 3, .min_minor = 11, .builds = CF_BUILDS_ANY};
    assert_null(skip_on(&any, 11, false, buf));
    assert_null(skip_on(&any, 15, true, buf));
    assert_string_equal(skip_on(&any, 10, false, buf), "needs Python >= 3.11");

    cf_scenario window = {.name = "w", .min_major = 3, .min_minor = 12, .has_max = true, .max_major = 3,
                          .max_minor = 13};
    assert_string_equal(skip_on(&window, 11, false, buf), "needs Python >= 3.12");
    assert_null(skip_on(&window, 12, false, buf));
    assert_null(skip_on(&window, 13, false, buf));
    assert_string_equal(skip_on(&window, 14, false, buf), "needs Python <= 3.13");
    cf_interp four = {.major = 4, .minor = 0};
    assert_string_equal(cf_scenario_skip_reason(&window, &four, buf, sizeof buf), "needs Python <= 3.13");

    cf_scenario gil = {.name = "g", .min_major = 3, .min_minor = 11, .builds = CF_BUILDS_GIL};
    assert_null(skip_on(&gil, 13, false, buf));
    assert_string_equal(skip_on(&gil, 13, true, buf), "GIL builds only");
    cf_scenario ft = {.name = "f", .min_major = 3, .min_minor = 13, .builds = CF_BUILDS_FT};
    assert_null(skip_on(&ft, 13, true, buf));
    assert_string_equal(skip_on(&ft, 13, false, buf), "free-threaded builds only");
    /* The version is checked first. */
    assert_string_equal(skip_on(&ft, 12, false, buf), "needs Python >= 3.13");
    /* The reason is written into the caller's buffer. */
    assert_ptr_equal(skip_on(&ft, 14, false, buf), buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_version),
        cmocka_unit_test(test_add),
        cmocka_unit_test(test_env),
        cmocka_unit_test(test_modules),
        cmocka_unit_test(test_names_next),
        cmocka_unit_test(test_bad_entries),
        cmocka_unit_test(test_load),
        cmocka_unit_test(test_empty_manifest),
        cmocka_unit_test(test_skip_reason),
        cmocka_unit_test(test_skip_modules),
        cmocka_unit_test(test_index_modules),
    };
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests_name("conform_unit_manifest", tests, NULL, NULL);
}
