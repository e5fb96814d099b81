/* test_live_check.c — the live declaration checker over hand-built
 * samples: a valid sample, every rule's violation with its exact reason,
 * rejected and ignored threads, fields that are not reported, the
 * splice-previous and frame-cache-by-address faults, and declarations that must be refused. */
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
#include "live_faults.h"
#include "live_judge.h"
#include "sample.h"

#define SCEN "/t/s.py"
#define THREADING "/usr/lib/python3/threading.py"
#define FPGT "/t/groundtruth/fpgt.py"
#define CHURN "<churn>"
#define MAIN_ID 100u
#define WORKER_ID 101u
#define CHANNEL_ID 102u
#define ERRLEN 512u
/* Samples of one thread at a time: "every thread" is set where it is tested. */
#define FIELDS (CF_FIELDS_ALL & ~(unsigned)CF_FIELD_ALL_THREADS)

/* The scenario's source: the "@tag" comments are what the declaration
 * names (line numbers on the left are the real ones). */
static const char SCRIPT[] =
    "def leaf_a():      # @leaf_a\n"          /* 1 */
    "    x = 1          # @leaf_a\n"          /* 2 */
    "def a1():          # @a1\n"              /* 3 */
    "    leaf_a()       # @a1 @a1-call\n"     /* 4 */
    "def leaf_b():      # @leaf_b\n"          /* 5 */
    "def b1():          # @b1\n"              /* 6 */
    "    leaf_b()       # @b1 @b1-call\n"     /* 7 */
    "def driver():      # @driver\n"          /* 8 */
    "    a1()           # @driver @call-a\n"  /* 9 */
    "    b1()           # @driver @call-b\n"  /* 10 */
    "    work()         # @driver @call-work\n" /* 11 */
    "def worker():      # @worker\n"          /* 12 */
    "    a1()           # @worker @worker-a\n" /* 13 */
    "driver()           # @module-driver\n";  /* 14 */

static const char DECL[] =
    "{\"functions\": ["
    " {\"id\": \"module\", \"function\": \"<module>\", \"file\": \"*/s.py\", \"lines\": [],"
    "  \"calls\": [{\"at\": [\"@module-driver\"], \"to\": [\"driver\"]}]},"
    " {\"id\": \"driver\", \"function\": \"driver\", \"file\": \"*/s.py\", \"lines\": [\"@driver\"],"
    "  \"calls\": [{\"at\": [\"@call-a\"], \"to\": [\"a1\"]}, {\"at\": [\"@call-b\"], \"to\": [\"b1\"]},"
    "             {\"at\": [\"@call-work\"], \"to\": [\"work\"]}]},"
    " {\"id\": \"a1\", \"function\": \"a1\", \"file\": \"*/s.py\", \"lines\": [\"@a1\"],"
    "  \"calls\": [{\"at\": [\"@a1-call\"], \"to\": [\"leaf_a\"]}]},"
    " {\"id\": \"leaf_a\", \"function\": \"leaf_a\", \"file\": \"*/s.py\", \"lines\": [\"@leaf_a\"]},"
    " {\"id\": \"b1\", \"function\": \"b1\", \"file\": \"*/s.py\", \"lines\": [\"@b1\"],"
    "  \"calls\": [{\"at\": [\"@b1-call\"], \"to\": [\"leaf_b\", \"a1\"]}]},"
    " {\"id\": \"leaf_b\", \"function\": \"leaf_b\", \"file\": \"*/s.py\", \"lines\": [\"@leaf_b\"]},"
    " {\"id\": \"work\", \"function\": \"work_g*\", \"file\": \"<churn>\","
    "  \"generation\": {\"prefix\": \"work_g\", \"stride\": 20}, \"lines\": [1, 2, 3],"
    "  \"calls\": [{\"at\": [2], \"to\": [\"inner\"]}]},"
    " {\"id\": \"inner\", \"function\": \"inner_g*\", \"file\": \"<churn>\","
    "  \"generation\": {\"prefix\": \"inner_g\", \"stride\": 20}, \"lines\": [5, 6]},"
    " {\"id\": \"bootstrap\", \"function\": \"Thread._bootstrap\", \"file\": [\"*/threading.py\"],"
    "  \"lines\": \"any\", \"calls\": [{\"at\": \"any\", \"to\": [\"worker\"]}]},"
    " {\"id\": \"worker\", \"function\": \"worker\", \"file\": \"*/s.py\", \"lines\": [\"@worker\"],"
    "  \"calls\": [{\"at\": [\"@worker-a\"], \"to\": [\"a1\"]}]}"
    "],"
    " \"threads\": [{\"kind\": \"main\", \"main\": true, \"roots\": [[\"module\", \"driver\"]]},"
    "             {\"kind\": \"worker\", \"main\": false, \"roots\": [[\"bootstrap\", \"worker\"]]}],"
    " \"ignore\": [{\"function\": \"_channel_main\", \"file\": \"*/fpgt.py\"}],"
    " \"frameless\": \"never\", \"min_threads\": 2,"
    " \"exclusive\": [[\"a1\", \"leaf_a\"], [\"b1\", \"leaf_b\"]]}";

typedef struct fx {
    cf_live_decl *decl;
    cf_sample s;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    json_object *d = cu_json(DECL);
    char err[ERRLEN] = "";
    int rc = cf_live_decl_parse(d, SCRIPT, &f->decl, err, sizeof err);
    json_object_put(d);
    if (rc != CF_OK)
        fail_msg("declaration refused: %s", err);
    cf_sample_init(&f->s);
    cf_sample_reset(&f->s, FIELDS);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    cf_live_decl_free(f->decl);
    cf_sample_free(&f->s);
    free(f);
    return 0;
}

#define FR(fn, file, line) cu_frame(fn, file, line, 4, 2)
#define ADD(s, id, ...)                                                                            \
    do {                                                                                           \
        const cf_frame frames_[] = {__VA_ARGS__};                                                  \
        cu_add_thread(s, id, id, frames_, sizeof frames_ / sizeof frames_[0])->main = (id) == MAIN_ID; \
    } while (0)

static void add_valid_main(cf_sample *s)
{
    ADD(s, MAIN_ID, FR("leaf_a", SCEN, 2), FR("a1", SCEN, 4), FR("driver", SCEN, 9), FR("<module>", SCEN, 14));
}

static void add_worker_and_channel(cf_sample *s)
{
    ADD(s, WORKER_ID, FR("leaf_a", SCEN, 1), FR("a1", SCEN, 4), FR("worker", SCEN, 13),
        FR("Thread._bootstrap", THREADING, 990));
    ADD(s, CHANNEL_ID, FR("_channel_loop", FPGT, 700), FR("_channel_main", FPGT, 690),
        FR("Thread._bootstrap", THREADING, 990));
}

/* Classifies f->s and checks the verdict and, for a wrong sample, the one
 * finding's rule and reason. */
static cf_live_result judge(fx *f, int verdict, int rule, const char *reason)
{
    cf_live_result r;
    assert_int_equal(cf_live_classify(f->decl, &f->s, &r), CF_OK);
    assert_int_equal(r.verdict, verdict);
    if (verdict == CF_LIVE_WRONG) {
        assert_int_equal(r.nfindings, 1);
        assert_string_equal(cf_live_rule_name(r.findings[0].rule), cf_live_rule_name(rule));
        assert_string_equal(r.findings[0].reason, reason);
    }
    return r;
}

static void test_valid(void **state)
{
    fx *f = *state;
    add_valid_main(&f->s);
    add_worker_and_channel(&f->s);
    cf_live_result r = judge(f, CF_LIVE_VALID, 0, NULL);
    assert_int_equal(r.checked, 2);
    assert_int_equal(r.ignored, 1);
    assert_int_equal(r.wrong, 0);
}

static void test_unknown_frame(void **state)
{
    fx *f = *state;
    ADD(&f->s, MAIN_ID, FR("mystery", SCEN, 2), FR("a1", SCEN, 4), FR("driver", SCEN, 9), FR("<module>", SCEN, 14));
    judge(f, CF_LIVE_WRONG, CF_RULE_UNKNOWN_FRAME, "frame #0 mystery (s.py:2) matches no declared function");
}

static void test_root(void **state)
{
    fx *f = *state;
    ADD(&f->s, MAIN_ID, FR("leaf_a", SCEN, 2), FR("a1", SCEN, 4), FR("driver", SCEN, 9));
    judge(f, CF_LIVE_WRONG, CF_RULE_ROOT,
          "outermost frame driver (s.py:9), 3 frames: matches no root of a main thread (e.g. module > driver)");
}

static void test_call_site(void **state)
{
    fx *f = *state;
    ADD(&f->s, MAIN_ID, FR("leaf_a", SCEN, 2), FR("a1", SCEN, 4), FR("driver", SCEN, 8), FR("<module>", SCEN, 14));
    judge(f, CF_LIVE_WRONG, CF_RULE_CALL_SITE,
          "driver (s.py:8) is below a1 (s.py:4), but that line is not a call site of driver");
}

static void test_edge(void **state)
{
    fx *f = *state;
    ADD(&f->s, MAIN_ID, FR("leaf_b", SCEN, 5), FR("b1", SCEN, 7), FR("driver", SCEN, 9), FR("<module>", SCEN, 14));
    judge(f, CF_LIVE_WRONG, CF_RULE_EDGE,
          "driver (s.py:9) may not call b1 (s.py:7) (not a callee of driver at that line)");
}

static void test_exclusive(void **state)
{
    fx *f = *state;
    ADD(&f->s, MAIN_ID, FR("leaf_a", SCEN, 2), FR("a1", SCEN, 4), FR("b1", SCEN, 7), FR("driver", SCEN, 10),
        FR("<module>", SCEN, 14));
    judge(f, CF_LIVE_WRONG, CF_RULE_EXCLUSIVE,
          "leaf_a (s.py:2) and b1 (s.py:7) are in one stack (exclusive groups 1 and 2)");
}

static void test_line(void **state)
{
    fx *f = *state;
    ADD(&f->s, MAIN_ID, FR("leaf_a", SCEN, 3), FR("a1", SCEN, 4), FR("driver", SCEN, 9), FR("<module>", SCEN, 14));
    judge(f, CF_LIVE_WRONG, CF_RULE_LINE,
          "innermost leaf_a (s.py:3): line 3 is not a line where leaf_a can be innermost");
}

static void test_generations(void **state)
{
    fx *f = *state;
    /* Generation 2: work_g02 at 2*20+2 calling inner_g02 at 2*20+5. */
    ADD(&f->s, MAIN_ID, FR("inner_g02", CHURN, 45), FR("work_g02", CHURN, 42), FR("driver", SCEN, 11),
        FR("<module>", SCEN, 14));
    judge(f, CF_LIVE_VALID, 0, NULL);
    cf_sample_reset(&f->s, FIELDS);
    ADD(&f->s, MAIN_ID, FR("inner_g03", CHURN, 65), FR("work_g02", CHURN, 42), FR("driver", SCEN, 11),
        FR("<module>", SCEN, 14));
    judge(f, CF_LIVE_WRONG, CF_RULE_GENERATION,
          "work_g02 (<churn>:42) of generation 2 calls inner_g03 (<churn>:65) of generation 3");
    cf_sample_reset(&f->s, FIELDS);
    ADD(&f->s, MAIN_ID, FR("work_g02", CHURN, 61), FR("driver", SCEN, 11), FR("<module>", SCEN, 14));
    judge(f, CF_LIVE_WRONG, CF_RULE_GENERATION,
          "innermost work_g02 (<churn>:61): line 61 is not a line of generation 2");
    cf_sample_reset(&f->s, FIELDS);
    ADD(&f->s, MAIN_ID, FR("inner_g02", CHURN, 45), FR("work_g02", CHURN, 62), FR("driver", SCEN, 11),
        FR("<module>", SCEN, 14));
    judge(f, CF_LIVE_WRONG, CF_RULE_GENERATION, "work_g02 (<churn>:62): line 62 is no call site of generation 2");
}

static void test_frameless(void **state)
{
    fx *f = *state;
    cu_add_thread(&f->s, MAIN_ID, MAIN_ID, NULL, 0)->main = true;
    judge(f, CF_LIVE_WRONG, CF_RULE_FRAMELESS, "the main thread has no frames");
    cf_sample_reset(&f->s, FIELDS);
    add_valid_main(&f->s);
    cu_add_thread(&f->s, WORKER_ID, WORKER_ID, NULL, 0);
    judge(f, CF_LIVE_WRONG, CF_RULE_FRAMELESS, "a thread has no frames (every thread of this scenario runs Python)");
    /* A thread state not yet bound to its thread carries its creator's ids. */
    cf_sample_reset(&f->s, FIELDS);
    add_valid_main(&f->s);
    cu_add_thread(&f->s, MAIN_ID, MAIN_ID, NULL, 0)->main = true;
    judge(f, CF_LIVE_WRONG, CF_RULE_FRAMELESS,
          "a thread state not yet bound to its thread (no frames, the id of another thread): this scenario starts "
          "no threads");
}

static void test_main_missing_and_count(void **state)
{
    fx *f = *state;
    f->s.fields = CF_FIELDS_ALL;
    add_worker_and_channel(&f->s);
    cf_live_result r;
    assert_int_equal(cf_live_classify(f->decl, &f->s, &r), CF_OK);
    assert_int_equal(r.verdict, CF_LIVE_WRONG);
    assert_int_equal(r.nfindings, 2);
    assert_int_equal(r.findings[0].rule, CF_RULE_MAIN_MISSING);
    assert_int_equal(r.findings[0].thread, -1);
    assert_string_equal(r.findings[0].reason, "no main thread among the 2 threads of a sample of every thread");
    assert_int_equal(r.findings[1].rule, CF_RULE_THREAD_COUNT);
    assert_string_equal(r.findings[1].reason, "1 scenario threads, the scenario runs at least 2");
    /* Without "all threads" neither rule applies. */
    f->s.fields &= ~(unsigned)CF_FIELD_ALL_THREADS;
    judge(f, CF_LIVE_VALID, 0, NULL);
}

static void test_rejected(void **state)
{
    fx *f = *state;
    add_valid_main(&f->s);
    cu_add_thread(&f->s, WORKER_ID, WORKER_ID, NULL, 0)->error = "torn read";
    cf_live_result r = judge(f, CF_LIVE_REJECTED, 0, NULL);
    assert_string_equal(r.reject_reason, "torn read");
    assert_int_equal(r.rejected, 1);
    /* A wrong thread next to a rejected one makes the sample wrong. */
    cf_sample_reset(&f->s, FIELDS);
    ADD(&f->s, MAIN_ID, FR("leaf_a", SCEN, 3), FR("a1", SCEN, 4), FR("driver", SCEN, 9), FR("<module>", SCEN, 14));
    cu_add_thread(&f->s, WORKER_ID, WORKER_ID, NULL, 0)->error = "torn read";
    judge(f, CF_LIVE_WRONG, CF_RULE_LINE,
          "innermost leaf_a (s.py:3): line 3 is not a line where leaf_a can be innermost");
}

static void test_unreported_fields(void **state)
{
    fx *f = *state;
    /* Without lines, driver may call b1 at one of its call sites. */
    f->s.fields = FIELDS & ~(unsigned)CF_FIELD_LINE;
    ADD(&f->s, MAIN_ID, FR("leaf_b", SCEN, 5), FR("b1", SCEN, 7), FR("driver", SCEN, 9), FR("<module>", SCEN, 14));
    judge(f, CF_LIVE_VALID, 0, NULL);
    /* Without files, "<module>" of another file is the scenario's. */
    cf_sample_reset(&f->s, FIELDS & ~(unsigned)CF_FIELD_FILE);
    ADD(&f->s, MAIN_ID, FR("leaf_a", SCEN, 2), FR("a1", SCEN, 4), FR("driver", SCEN, 9), FR("<module>", "/x.py", 14));
    judge(f, CF_LIVE_VALID, 0, NULL);
    cf_sample_reset(&f->s, FIELDS);
    ADD(&f->s, MAIN_ID, FR("leaf_a", SCEN, 2), FR("a1", SCEN, 4), FR("driver", SCEN, 9), FR("<module>", "/x.py", 14));
    judge(f, CF_LIVE_WRONG, CF_RULE_UNKNOWN_FRAME, "frame #3 <module> (x.py:14) matches no declared function");
}

/* The main thread's previous sample: chain b at the same depth as chain a. */
static void add_chain_b(cf_sample *prev)
{
    cf_sample_reset(prev, FIELDS);
    ADD(prev, MAIN_ID, FR("leaf_b", SCEN, 5), FR("b1", SCEN, 7), FR("driver", SCEN, 10), FR("<module>", SCEN, 14));
}

static void test_splice(void **state)
{
    fx *f = *state;
    cf_sample prev, out;
    cf_sample_init(&prev);
    cf_sample_init(&out);
    add_chain_b(&prev);
    add_valid_main(&f->s);
    assert_int_equal(cf_live_splice(&f->s, &prev, &out), 1);
    assert_int_equal(out.nthreads, 1);
    assert_int_equal(out.threads[0].count, 4);
    assert_string_equal(out.frames[0].function, "leaf_a");
    assert_string_equal(out.frames[1].function, "b1");
    assert_int_equal(out.frames[2].line, 10);
    cf_live_result r;
    assert_int_equal(cf_live_classify(f->decl, &out, &r), CF_OK);
    assert_int_equal(r.verdict, CF_LIVE_WRONG);
    assert_string_equal(r.findings[0].reason, "b1 (s.py:7) may not call leaf_a (s.py:2) (not a callee of b1 at that line)");
    /* Equal stacks, or a thread absent from the previous sample: unchanged. */
    assert_int_equal(cf_live_splice(&f->s, &f->s, &out), 0);
    cf_sample_reset(&prev, FIELDS);
    assert_int_equal(cf_live_splice(&f->s, &prev, &out), 0);
    assert_int_equal(out.threads[0].count, 4);
    assert_string_equal(out.frames[1].function, "a1");
    cf_sample_free(&prev);
    cf_sample_free(&out);
}

/* Frame addresses as an unwinder reports them: the same slots hold chain a
 * in one sample and chain b in the next. */
static void set_addrs(cf_sample *s, uint64_t base)
{
    for (size_t k = 0; k < s->nframes; k++)
        s->frames[k].frame_addr = base ? base + 0x50u * (uint64_t)(s->nframes - k) : 0;
}

static void test_cache_by_address(void **state)
{
    fx *f = *state;
    cf_sample prev, out;
    cf_sample_init(&prev);
    cf_sample_init(&out);
    add_chain_b(&prev);
    set_addrs(&prev, 0x1000);
    add_valid_main(&f->s);
    set_addrs(&f->s, 0x1000);
    /* a1 sits where b1 sat: the cache hands back b1 and everything under it. */
    assert_int_equal(cf_live_cache_by_address(&f->s, &prev, &out), 1);
    assert_int_equal(out.threads[0].count, 4);
    assert_string_equal(out.frames[0].function, "leaf_a");
    assert_string_equal(out.frames[1].function, "b1");
    assert_int_equal(out.frames[2].line, 10);
    cf_live_result r;
    assert_int_equal(cf_live_classify(f->decl, &out, &r), CF_OK);
    assert_int_equal(r.verdict, CF_LIVE_WRONG);
    assert_string_equal(r.findings[0].reason, "b1 (s.py:7) may not call leaf_a (s.py:2) (not a callee of b1 at that line)");
    /* Other addresses, no addresses, or the same stack: unchanged. */
    set_addrs(&prev, 0x9000);
    assert_int_equal(cf_live_cache_by_address(&f->s, &prev, &out), 0);
    assert_string_equal(out.frames[1].function, "a1");
    set_addrs(&prev, 0);
    set_addrs(&f->s, 0);
    assert_int_equal(cf_live_cache_by_address(&f->s, &prev, &out), 0);
    set_addrs(&f->s, 0x1000);
    assert_int_equal(cf_live_cache_by_address(&f->s, &f->s, &out), 0);
    assert_int_equal(out.threads[0].count, 4);
    cf_sample_free(&prev);
    cf_sample_free(&out);
}

static void refused(const char *decl, const char *script, const char *expected)
{
    json_object *d = cu_json(decl);
    cf_live_decl *out = NULL;
    char err[ERRLEN] = "";
    assert_int_equal(cf_live_decl_parse(d, script, &out, err, sizeof err), CF_E_FORMAT);
    assert_null(out);
    assert_string_equal(err, expected);
    json_object_put(d);
}

static void test_refused(void **state)
{
    (void)state;
    refused("{\"functions\": [{\"id\": \"a\", \"function\": \"a\", \"lines\": \"any\","
            " \"calls\": [{\"at\": \"any\", \"to\": [\"b\"]}]}], \"threads\": [{\"roots\": [[\"a\"]]}]}",
            NULL, "function a: \"calls\": unknown function id \"b\"");
    refused("{\"functions\": [{\"id\": \"a\", \"function\": \"a\", \"lines\": [\"@nowhere\"]}],"
            " \"threads\": [{\"roots\": [[\"a\"]]}]}",
            "x = 1  # @here\n", "tag @nowhere is on no line of the scenario");
    refused("{\"functions\": [{\"id\": \"a\", \"function\": \"a\", \"lines\": []},"
            " {\"id\": \"a\", \"function\": \"b\", \"lines\": []}], \"threads\": [{\"roots\": [[\"a\"]]}]}",
            NULL, "duplicate function id \"a\"");
    refused("{\"functions\": [{\"id\": \"a\", \"function\": \"a\", \"lines\": []}],"
            " \"threads\": [{\"roots\": [[\"a\"]]}], \"exclusive\": [[\"a\"], [\"a\"]]}",
            NULL, "function a is in two exclusive groups");
    refused("{\"functions\": [{\"id\": \"a\", \"function\": \"a\", \"lines\": []}], \"threads\": []}", NULL,
            "no \"threads\" array");
}

static void test_tags_resolve_to_lines(void **state)
{
    fx *f = *state;
    /* @leaf_a is on lines 1 and 2 only: line 2 is a valid innermost line,
     * "@leaf_a" inside another word does not count. */
    ADD(&f->s, MAIN_ID, FR("leaf_a", SCEN, 1), FR("a1", SCEN, 4), FR("driver", SCEN, 9), FR("<module>", SCEN, 14));
    judge(f, CF_LIVE_VALID, 0, NULL);
    json_object *d = cu_json("{\"functions\": [{\"id\": \"a\", \"function\": \"a\", \"lines\": [\"@t\"]}],"
                             " \"threads\": [{\"roots\": [[\"a\"]]}]}");
    cf_live_decl *decl = NULL;
    char err[ERRLEN] = "";
    assert_int_equal(cf_live_decl_parse(d, "a  # @tx\nb  # @t @u\n\"#\" x # @t\n", &decl, err, sizeof err), CF_OK);
    cf_sample s;
    cf_sample_init(&s);
    cf_sample_reset(&s, CF_FIELDS_ALL & ~(unsigned)CF_FIELD_ALL_THREADS);
    const cf_frame one[] = {FR("a", "/f.py", 1)}, two[] = {FR("a", "/f.py", 2)}, three[] = {FR("a", "/f.py", 3)};
    cf_live_result r;
    cu_add_thread(&s, 1, 1, one, 1);
    assert_int_equal(cf_live_classify(decl, &s, &r), CF_OK);
    assert_int_equal(r.verdict, CF_LIVE_WRONG);
    cf_sample_reset(&s, s.fields);
    cu_add_thread(&s, 1, 1, two, 1);
    assert_int_equal(cf_live_classify(decl, &s, &r), CF_OK);
    assert_int_equal(r.verdict, CF_LIVE_VALID);
    cf_sample_reset(&s, s.fields);
    cu_add_thread(&s, 1, 1, three, 1);
    assert_int_equal(cf_live_classify(decl, &s, &r), CF_OK);
    assert_int_equal(r.verdict, CF_LIVE_VALID);
    cf_sample_free(&s);
    cf_live_decl_free(decl);
    json_object_put(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_valid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_frame, setup, teardown),
        cmocka_unit_test_setup_teardown(test_root, setup, teardown),
        cmocka_unit_test_setup_teardown(test_call_site, setup, teardown),
        cmocka_unit_test_setup_teardown(test_edge, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exclusive, setup, teardown),
        cmocka_unit_test_setup_teardown(test_line, setup, teardown),
        cmocka_unit_test_setup_teardown(test_generations, setup, teardown),
        cmocka_unit_test_setup_teardown(test_frameless, setup, teardown),
        cmocka_unit_test_setup_teardown(test_main_missing_and_count, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unreported_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(test_splice, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cache_by_address, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tags_resolve_to_lines, setup, teardown),
        cmocka_unit_test(test_refused),
    };
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests_name("conform_unit_live_check", tests, NULL, NULL);
}
