/* test_cpython.c — the cpython adapter (RemoteUnwinder) against the real
 * 3.14 and 3.15 builds: a plain_calls target parked at its first
 * checkpoint, every configuration attached and sampled, each sample
 * checked field by field against the ground truth (a shifted line and a
 * dropped frame must fail the check); applies() reasons; attach to a
 * process that is not Python, a helper that prints garbage or exits, a
 * timeout, and a target that dies during the session.  Interpreters the
 * manifest lacks are skipped.
 * Usage: test_cpython MANIFEST TARGETS_DIR */
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "adapter.h"
#include "channel.h"
#include "conform.h"
#include "interrupt.h"
#include "manifest.h"
#include "registry.h"
#include "spawn.h"
#include "target_sync.h"
#include "truth.h"
#include "util.h"

#define MAX_DEFS 8u
#define SCENARIO "plain_calls.py"
#define TARGET_WAIT_S 60.0     /* hello and first checkpoint */
#define FOREIGN_TIMEOUT_S 60.0 /* one helper answer */
#define TINY_TIMEOUT_S 0.001   /* shorter than any interpreter's start-up */
#define SAMPLES 3u

/* What RemoteUnwinder reports, per version (see harness/adapters/cpython.c). */
#define FIELDS_314 \
    (CF_FIELD_FUNCTION | CF_FIELD_FILE | CF_FIELD_LINE | CF_FIELD_NATIVE_ID | CF_FIELD_ALL_THREADS)
#define FIELDS_315 \
    (FIELDS_314 | CF_FIELD_END_LINE | CF_FIELD_COLUMN | CF_FIELD_END_COLUMN | CF_FIELD_MAIN | CF_FIELD_EXCEPTION)

typedef struct ctx {
    const char *manifest_path;
    const char *targets;
} ctx;

/* A target parked at its first checkpoint. */
typedef struct parked {
    cf_child child;
    cf_linebuf lb;
    json_object *msg;
    cf_truth truth;
    bool have_truth;
} parked;

static const char *const PARKED_FUNCTIONS[] = {"park", "level_d", "level_c", "level_b", "level_a", "<module>"};

static bool load_interp(const ctx *c, const char *id, cf_manifest *m, const cf_interp **in)
{
    char err[CF_ERRMSG_LEN];
    if (cf_manifest_load(c->manifest_path, m, err, sizeof err) != CF_OK)
        return false;
    long i = cf_manifest_find(m, id);
    if (i < 0) {
        cf_manifest_free(m);
        return false;
    }
    *in = &m->items[i];
    return true;
}

static void park_target(const ctx *c, const cf_interp *in, parked *p)
{
    char err[CF_ERRMSG_LEN], script[PATH_MAX];
    memset(p, 0, sizeof *p);
    cf_linebuf_init(&p->lb);
    if (cf_interp_chrooted(in)) {
        assert_int_equal(cf_sync_targets(c->targets, in->root, err, sizeof err), CF_OK);
        char inside[CF_CHROOT_TARGETS_MAX];
        cf_chroot_targets(c->targets, inside, sizeof inside);
        snprintf(script, sizeof script, "%s/scenarios/%s", inside, SCENARIO);
    } else {
        snprintf(script, sizeof script, "%s/scenarios/%s", c->targets, SCENARIO);
    }
    const char *extra[] = {script};
    char **argv = NULL;
    assert_int_equal(cf_argv_build(in->root, in->argv, in->argc, extra, 1, &argv), CF_OK);
    cf_spawn_req req = {.argv = argv, .stdout_fd = -1, .stderr_fd = -1, .channel = true};
    int rc = cf_spawn(&req, &p->child, err, sizeof err);
    cf_argv_free(argv);
    assert_int_equal(rc, CF_OK);
    double deadline = cf_now() + TARGET_WAIT_S;
    for (;;) {
        char *line;
        size_t len;
        assert_int_equal(cf_linebuf_read(&p->lb, p->child.from_child, deadline, &line, &len), CF_OK);
        json_object *msg = NULL;
        assert_int_equal(cf_channel_parse(line, len, &msg, err, sizeof err), CF_OK);
        if (strcmp(cf_json_str(msg, "event", ""), "checkpoint") == 0) {
            p->msg = msg;
            break;
        }
        assert_string_equal(cf_json_str(msg, "event", ""), "hello");
        json_object_put(msg);
    }
    assert_int_equal(cf_truth_parse(p->msg, &p->truth, err, sizeof err), CF_OK);
    p->have_truth = true;
    assert_string_equal(p->truth.name, "bottom");
}

static void release_target(parked *p)
{
    cf_child_kill(&p->child);
    cf_child_close(&p->child);
    if (p->have_truth)
        cf_truth_free(&p->truth);
    json_object_put(p->msg);
    cf_linebuf_free(&p->lb);
}

static bool pos_eq(int32_t got, int32_t want)
{
    return got == want;
}

/* The check: the sample reports exactly `fields`, lists exactly the
 * truth's threads, and the parked thread's frames and flags equal the
 * truth's in every reported field.  false with the first difference. */
static bool sample_matches(const cf_truth *t, const cf_sample *s, unsigned fields, char *why, size_t len)
{
    if (s->fields != fields) {
        snprintf(why, len, "fields 0x%x, expected 0x%x", s->fields, fields);
        return false;
    }
    if (s->nthreads != t->nall) {
        snprintf(why, len, "%zu threads, all_threads has %zu", s->nthreads, t->nall);
        return false;
    }
    for (size_t i = 0; i < t->nall; i++) {
        if (!cf_sample_find(s, t->all_ids[i])) {
            snprintf(why, len, "thread %" PRIu64 " missing", t->all_ids[i]);
            return false;
        }
    }
    for (size_t i = 0; i < t->nthreads; i++) {
        const cf_truth_thread *tt = &t->threads[i];
        const cf_thread *st = cf_sample_find(s, tt->native_id);
        if (st->count != tt->nframes) {
            snprintf(why, len, "thread %" PRIu64 ": %zu frames, expected %zu", tt->native_id, st->count,
                     tt->nframes);
            return false;
        }
        if ((fields & CF_FIELD_MAIN) && st->main != tt->main) {
            snprintf(why, len, "thread %" PRIu64 ": main flag differs", tt->native_id);
            return false;
        }
        if ((fields & CF_FIELD_EXCEPTION) && st->exception != (tt->exception ? CF_YES : CF_NO)) {
            snprintf(why, len, "thread %" PRIu64 ": exception flag differs", tt->native_id);
            return false;
        }
        for (size_t k = 0; k < tt->nframes; k++) {
            const cf_frame *f = &s->frames[st->first + k];
            const cf_frame *e = &tt->frames[k];
            bool ok = strcmp(f->function, e->function) == 0 && strcmp(f->file, e->file) == 0 &&
                      pos_eq(f->line, e->line);
            if (fields & CF_FIELD_END_LINE)
                ok = ok && pos_eq(f->end_line, e->end_line);
            if (fields & CF_FIELD_COLUMN)
                ok = ok && pos_eq(f->column, e->column);
            if (fields & CF_FIELD_END_COLUMN)
                ok = ok && pos_eq(f->end_column, e->end_column);
            if (!ok) {
                snprintf(why, len, "frame %zu: got %s %s:%d:%d-%d:%d, expected %s %s:%d:%d-%d:%d", k, f->function,
                         f->file, f->line, f->column, f->end_line, f->end_column, e->function, e->file,
                         (int)e->line, (int)e->column, (int)e->end_line, (int)e->end_column);
                return false;
            }
        }
    }
    return true;
}

/* The parked main thread, as the truth names it. */
static void check_parked_functions(const cf_truth *t, const cf_sample *s)
{
    assert_int_equal(t->nthreads, 1);
    const cf_thread *st = cf_sample_find(s, t->threads[0].native_id);
    assert_non_null(st);
    size_t n = sizeof PARKED_FUNCTIONS / sizeof PARKED_FUNCTIONS[0];
    assert_int_equal(st->count, n);
    for (size_t k = 0; k < n; k++)
        assert_string_equal(s->frames[st->first + k].function, PARKED_FUNCTIONS[k]);
}

static void run_interp(void **state, const char *id, unsigned fields, const char *cache_on_reason)
{
    const ctx *c = *state;
    cf_manifest m;
    const cf_interp *in = NULL;
    if (!load_interp(c, id, &m, &in)) {
        print_message("# %s is not provisioned\n", id);
        skip();
    }
    parked p;
    park_target(c, in, &p);
    cf_adapter_def defs[MAX_DEFS];
    size_t n = cf_cpython_defs(defs, MAX_DEFS);
    assert_int_equal(n, 3);
    cf_sample s;
    cf_sample_init(&s);
    for (size_t i = 0; i < n; i++) {
        const cf_adapter_def *d = &defs[i];
        char buf[CF_ERRMSG_LEN], err[CF_ERRMSG_LEN] = "";
        assert_string_equal(d->unwinder, "cpython");
        const char *why = d->applies(d, in, buf, sizeof buf);
        if (strncmp(d->config, "cache-on", strlen("cache-on")) == 0 && cache_on_reason) {
            assert_non_null(why);
            assert_string_equal(why, cache_on_reason);
            continue;
        }
        assert_null(why);
        cf_target t = {.pid = (int)p.child.pid, .interp = in, .timeout = FOREIGN_TIMEOUT_S};
        void *st = NULL;
        int rc = d->attach(d, &t, &st, err, sizeof err);
        if (rc != CF_OK)
            fail_msg("%s: attach: %s", d->config, err);
        for (unsigned k = 0; k < SAMPLES; k++) {
            cf_sample_reset(&s, d->fields);
            rc = d->sample(st, &s, err, sizeof err);
            if (rc != CF_OK)
                fail_msg("%s sample %u: %s", d->config, k, err);
            if (!sample_matches(&p.truth, &s, fields, buf, sizeof buf))
                fail_msg("%s on %s, sample %u: %s", d->config, id, k, buf);
            check_parked_functions(&p.truth, &s);
        }
        /* The check catches a shifted line and a dropped frame. */
        uint64_t main_id = p.truth.threads[0].native_id;
        cf_sample_inject(&s, CF_FAULT_SHIFT_LINE, main_id);
        assert_false(sample_matches(&p.truth, &s, fields, buf, sizeof buf));
        assert_non_null(strstr(buf, "frame 0: got park"));
        cf_sample_reset(&s, d->fields);
        assert_int_equal(d->sample(st, &s, err, sizeof err), CF_OK);
        cf_sample_inject(&s, CF_FAULT_DROP_FRAME, main_id);
        assert_false(sample_matches(&p.truth, &s, fields, buf, sizeof buf));
        assert_non_null(strstr(buf, "5 frames, expected 6"));
        d->detach(st);
    }
    cf_sample_free(&s);
    release_target(&p);
    cf_manifest_free(&m);
}

static void test_314(void **state)
{
    run_interp(state, "3.14", FIELDS_314, "cache_frames needs CPython 3.15");
}

static void test_314_dbg(void **state)
{
    run_interp(state, "3.14-dbg", FIELDS_314, "cache_frames needs CPython 3.15");
}

static void test_315(void **state)
{
    run_interp(state, "3.15", FIELDS_315, NULL);
}

static void test_315_dbg(void **state)
{
    run_interp(state, "3.15-dbg", FIELDS_315, NULL);
}

static void test_applies_before_314(void **state)
{
    (void)state;
    cf_interp in = {.id = "3.13", .version = "3.13.5", .major = 3, .minor = 13};
    cf_adapter_def defs[MAX_DEFS];
    size_t n = cf_cpython_defs(defs, MAX_DEFS);
    char buf[CF_ERRMSG_LEN];
    for (size_t i = 0; i < n; i++) {
        const char *why = defs[i].applies(&defs[i], &in, buf, sizeof buf);
        assert_non_null(why);
        assert_string_equal(why, "RemoteUnwinder first shipped in CPython 3.14");
    }
}

/* The newest provisioned RemoteUnwinder, or skip. */
static const cf_interp *newest(const ctx *c, cf_manifest *m)
{
    const cf_interp *in = NULL;
    if (load_interp(c, "3.15", m, &in) || load_interp(c, "3.14", m, &in))
        return in;
    print_message("# neither 3.14 nor 3.15 is provisioned\n");
    skip();
    return NULL;
}

static int attach_cache_off(const cf_interp *in, int pid, double timeout, void **st, char *err, size_t len)
{
    cf_adapter_def defs[MAX_DEFS];
    assert_true(cf_cpython_defs(defs, MAX_DEFS) >= 1);
    assert_string_equal(defs[0].config, "cache-off");
    cf_target t = {.pid = pid, .interp = in, .timeout = timeout};
    return defs[0].attach(&defs[0], &t, st, err, len);
}

static void test_attach_not_python(void **state)
{
    cf_manifest m;
    const cf_interp *in = newest(*state, &m);
    char *argv[] = {"sleep", "60", NULL};
    cf_spawn_req req = {.argv = argv, .stdout_fd = -1, .stderr_fd = -1};
    cf_child sleeper;
    char err[CF_ERRMSG_LEN];
    assert_int_equal(cf_spawn(&req, &sleeper, err, sizeof err), CF_OK);
    void *st = NULL;
    int rc = attach_cache_off(in, (int)sleeper.pid, FOREIGN_TIMEOUT_S, &st, err, sizeof err);
    cf_child_kill(&sleeper);
    assert_int_equal(rc, CF_E_UNWINDER);
    assert_null(st);
    print_message("# %s\n", err);
    assert_non_null(strstr(err, "RemoteUnwinder could not attach: "));
    cf_manifest_free(&m);
}

static void test_attach_timeout(void **state)
{
    cf_manifest m;
    const cf_interp *in = newest(*state, &m);
    void *st = NULL;
    char err[CF_ERRMSG_LEN];
    assert_int_equal(attach_cache_off(in, (int)getpid(), TINY_TIMEOUT_S, &st, err, sizeof err), CF_E_TIMEOUT);
    assert_null(st);
    assert_string_equal(err, "the RemoteUnwinder helper gave no ready line within 0.0 s (killed)");
    cf_manifest_free(&m);
}

/* Attaches with a "helper" program that is not Python at all. */
static void attach_impostor(char *program, char *err, size_t len)
{
    char *argv[] = {program, NULL};
    cf_interp in = {.id = program, .version = "3.15.0", .root = "/", .argv = argv, .argc = 1, .major = 3,
                    .minor = 15};
    void *st = NULL;
    assert_int_equal(attach_cache_off(&in, (int)getpid(), FOREIGN_TIMEOUT_S, &st, err, len), CF_E_UNWINDER);
    assert_null(st);
}

/* echo prints its arguments: not a "ready" line. */
static void test_helper_garbage(void **state)
{
    (void)state;
    char err[CF_ERRMSG_LEN];
    attach_impostor("echo", err, sizeof err);
    assert_non_null(strstr(err, "the RemoteUnwinder helper sent a malformed ready line: "));
}

static void test_helper_exits(void **state)
{
    (void)state;
    char err[CF_ERRMSG_LEN];
    attach_impostor("false", err, sizeof err);
    assert_string_equal(err, "the RemoteUnwinder helper ended (exit status 1) instead of sending its ready line");
}

/* The target dies during the session: each later sample is an error of its
 * own, and the helper keeps answering. */
static void test_target_dies(void **state)
{
    const ctx *c = *state;
    cf_manifest m;
    const cf_interp *in = newest(c, &m);
    parked p;
    park_target(c, in, &p);
    void *st = NULL;
    char err[CF_ERRMSG_LEN];
    if (attach_cache_off(in, (int)p.child.pid, FOREIGN_TIMEOUT_S, &st, err, sizeof err) != CF_OK)
        fail_msg("attach: %s", err);
    cf_adapter_def defs[MAX_DEFS];
    cf_cpython_defs(defs, MAX_DEFS);
    cf_sample s;
    cf_sample_init(&s);
    cf_sample_reset(&s, defs[0].fields);
    assert_int_equal(defs[0].sample(st, &s, err, sizeof err), CF_OK);
    release_target(&p);
    for (unsigned k = 0; k < 2; k++) {
        cf_sample_reset(&s, defs[0].fields);
        assert_int_equal(defs[0].sample(st, &s, err, sizeof err), CF_E_UNWINDER);
        print_message("# %s\n", err);
        assert_non_null(strstr(err, "RemoteUnwinder.get_stack_trace() raised "));
    }
    defs[0].detach(st);
    cf_sample_free(&s);
    cf_manifest_free(&m);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s TARGETS_DIR\n", argv[0]);
        return 2;
    }
    if (cf_signal_install() != CF_OK) {
        fprintf(stderr, "cannot install signal handlers\n");
        return 1;
    }
    char manifest[PATH_MAX];
    if (cf_manifest_default_path(manifest, sizeof manifest) != CF_OK) {
        printf("1..1\nnot ok 1 - FRAMEPROOF_HOME is too long\n");
        return 1;
    }
    ctx c = {.manifest_path = manifest, .targets = argv[1]};
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate(test_314, &c),
        cmocka_unit_test_prestate(test_314_dbg, &c),
        cmocka_unit_test_prestate(test_315, &c),
        cmocka_unit_test_prestate(test_315_dbg, &c),
        cmocka_unit_test(test_applies_before_314),
        cmocka_unit_test_prestate(test_attach_not_python, &c),
        cmocka_unit_test_prestate(test_attach_timeout, &c),
        cmocka_unit_test(test_helper_garbage),
        cmocka_unit_test(test_helper_exits),
        cmocka_unit_test_prestate(test_target_dies, &c),
    };
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
