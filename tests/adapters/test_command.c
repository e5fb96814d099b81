/* test_command.c — the `command` adapter end to end.  For every
 * provisioned interpreter a real target (the `generators` scenario) is held
 * at each checkpoint; the adapter runs `frameproof dump --json --pid {pid}`
 * and its sample must equal, field for field, what a libframeproof session
 * sees at the same moment.  Then failing commands (exit status, signals,
 * timeout, garbage, empty or oversized output, a background child holding
 * stdout) must each give their own message.  TAP, one line per case.
 *
 * usage: test_command FRAMEPROOF MANIFEST TARGETS_DIR */
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frameproof/frameproof.h"

#include "adapter.h"
#include "channel.h"
#include "command.h"
#include "conform.h"
#include "manifest.h"
#include "registry.h"
#include "spawn.h"
#include "strbuf.h"
#include "target_sync.h"
#include "util.h"

#define SCENARIO "generators"
#define TARGET_TIMEOUT_S 60.0     /* a checkpoint of a debug build under ASan */
#define COMMAND_TIMEOUT_S 30.0    /* one dump run */
#define SHORT_TIMEOUT_S 0.5       /* the timeout case */
#define STABLE_ATTEMPTS 20        /* tries for two equal session samples around the command */
#define MAX_CASES 64

typedef struct tap {
    int n;
    int failed;
} tap;

__attribute__((format(printf, 3, 4))) static void report(tap *t, bool ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%sok %d - ", ok ? "" : "not ", ++t->n);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
    if (!ok)
        t->failed++;
}

static void diag(const char *text)
{
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, "\n");
        printf("# %.*s\n", (int)n, p);
        p += n + (p[n] == '\n');
    }
}

static bool same_str(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

static bool frames_equal(const fp_frame *a, const fp_frame *b)
{
    return same_str(a->function, b->function) && same_str(a->name, b->name) && same_str(a->file, b->file) &&
           a->line == b->line && a->end_line == b->end_line && a->column == b->column &&
           a->end_column == b->end_column && a->kind == b->kind;
}

/* Two session samples with the same threads and stacks. */
static bool samples_equal(const fp_sample *a, const fp_sample *b)
{
    if (fp_sample_get_thread_count(a) != fp_sample_get_thread_count(b) ||
        fp_sample_get_frame_count(a) != fp_sample_get_frame_count(b))
        return false;
    for (size_t i = 0; i < fp_sample_get_thread_count(a); i++) {
        const fp_thread *x = fp_sample_get_thread(a, i), *y = fp_sample_get_thread(b, i);
        if (x->native_id != y->native_id || x->frame_count != y->frame_count || x->exception != y->exception ||
            x->error != y->error)
            return false;
    }
    for (size_t i = 0; i < fp_sample_get_frame_count(a); i++)
        if (!frames_equal(fp_sample_get_frame(a, i), fp_sample_get_frame(b, i)))
            return false;
    return true;
}

/* The adapter's sample against the session's: every field.  Appends the
 * first difference to why. */
static bool matches_session(const cf_sample *s, const fp_sample *sm, cf_strbuf *why)
{
    unsigned want = CF_FIELDS_ALL & ~CF_FIELD_ALL_THREADS;
    if (s->fields != want) {
        cf_sb_printf(why, "fields 0x%x, expected 0x%x", s->fields, want);
        return false;
    }
    if (s->nthreads != fp_sample_get_thread_count(sm)) {
        cf_sb_printf(why, "%zu threads, the session has %zu", s->nthreads, fp_sample_get_thread_count(sm));
        return false;
    }
    for (size_t i = 0; i < s->nthreads; i++) {
        const cf_thread *t = &s->threads[i];
        const fp_thread *e = fp_sample_get_thread(sm, i);
        if (t->native_id != e->native_id || t->thread_id != e->thread_id || t->interp_id != e->interp_id ||
            t->main != e->main || t->exception != e->exception || (t->error != NULL) != (e->error != 0) ||
            t->count != e->frame_count) {
            cf_sb_printf(why, "thread %zu (native id %" PRIu64 "/%" PRIu64 ") differs", i, t->native_id,
                         e->native_id);
            return false;
        }
        for (size_t k = 0; k < t->count; k++) {
            const cf_frame *f = &s->frames[t->first + k];
            const fp_frame *g = fp_sample_get_frame(sm, e->first_frame + k);
            if (!same_str(f->function, g->function) || !same_str(f->name, g->name) || !same_str(f->file, g->file) ||
                f->line != g->line || f->end_line != g->end_line || f->column != g->column ||
                f->end_column != g->end_column || f->kind != (g->kind == FP_FRAME_GENERATOR ? CF_KIND_GENERATOR
                                                                                            : CF_KIND_PYTHON)) {
                cf_sb_printf(why, "thread %" PRIu64 " frame %zu: %s %s:%d, the session has %s %s:%d", t->native_id,
                             k, f->function, f->file, f->line, g->function, g->file, g->line);
                return false;
            }
        }
    }
    return true;
}

typedef struct checkpoint_check {
    const cf_adapter_def *def;
    cf_target target;
    fp_session *session;
    fp_sample *before, *after;
    cf_sample got;
} checkpoint_check;

/* One checkpoint: session, command, session until the two session samples
 * agree, then the command's sample must equal them. */
static bool check_checkpoint(checkpoint_check *c, cf_strbuf *why)
{
    void *st = NULL;
    char err[CF_ERRMSG_LEN];
    if (c->def->attach(c->def, &c->target, &st, err, sizeof err) != CF_OK) {
        cf_sb_printf(why, "attach: %s", err);
        return false;
    }
    bool ok = false;
    for (int attempt = 0; attempt < STABLE_ATTEMPTS && !ok; attempt++) {
        cf_sample_reset(&c->got, c->def->fields);
        if (fp_session_sample(c->session, c->before) < 0) {
            cf_sb_printf(why, "session sample: %s", fp_session_get_errmsg(c->session));
            break;
        }
        int rc = c->def->sample(st, &c->got, err, sizeof err);
        if (fp_session_sample(c->session, c->after) < 0) {
            cf_sb_printf(why, "session sample: %s", fp_session_get_errmsg(c->session));
            break;
        }
        if (!samples_equal(c->before, c->after))
            continue; /* a thread was still settling: try again */
        if (rc != CF_OK) {
            cf_sb_printf(why, "command sample: %s", err);
            break;
        }
        ok = matches_session(&c->got, c->after, why);
        if (!ok)
            break;
        /* The comparison itself must catch a dropped frame. */
        cf_strbuf scratch;
        cf_sb_init(&scratch);
        size_t victim = 0;
        while (victim + 1 < c->got.nthreads && c->got.threads[victim].count == 0)
            victim++;
        cf_sample_inject(&c->got, CF_FAULT_DROP_FRAME, c->got.threads[victim].native_id);
        if (matches_session(&c->got, c->after, &scratch)) {
            cf_sb_printf(why, "a dropped frame went unnoticed");
            ok = false;
        }
        cf_sb_free(&scratch);
    }
    if (!ok && why->len == 0)
        cf_sb_printf(why, "the target never held still for two session samples");
    c->def->detach(st);
    return ok;
}

/* Runs the scenario on one interpreter; one TAP line. */
static void run_interpreter(tap *t, const cf_interp *in, const char *targets, const cf_adapter_def *def)
{
    cf_strbuf why;
    cf_sb_init(&why);
    cf_child child;
    memset(&child, 0, sizeof child);
    cf_linebuf lb;
    cf_linebuf_init(&lb);
    char **argv = NULL;
    char err[CF_ERRMSG_LEN], script[4096];
    checkpoint_check c = {.def = def};
    cf_sample_init(&c.got);
    int checkpoints = 0;
    bool ok = false;
    if (cf_interp_chrooted(in)) {
        if (cf_sync_targets(targets, in->root, err, sizeof err) != CF_OK) {
            cf_sb_printf(&why, "sync targets: %s", err);
            goto out;
        }
        char inside[CF_CHROOT_TARGETS_MAX];
        cf_chroot_targets(targets, inside, sizeof inside);
        snprintf(script, sizeof script, "%s/scenarios/%s.py", inside, SCENARIO);
    } else {
        snprintf(script, sizeof script, "%s/scenarios/%s.py", targets, SCENARIO);
    }
    const char *extra[] = {script};
    if (cf_argv_build(in->root, in->argv, in->argc, extra, 1, &argv) != CF_OK)
        goto out;
    cf_spawn_req req = {.argv = argv, .stdout_fd = -1, .stderr_fd = 2, .channel = true};
    if (cf_spawn(&req, &child, err, sizeof err) != CF_OK) {
        cf_sb_printf(&why, "spawn: %s", err);
        goto out;
    }
    fp_options opts;
    fp_options_init(&opts);
    if (fp_session_new(&opts, &c.session) < 0 || fp_sample_new(&c.before) < 0 || fp_sample_new(&c.after) < 0)
        goto out;
    c.target = (cf_target){.pid = (int)child.pid, .interp = in, .timeout = COMMAND_TIMEOUT_S};
    bool attached = false;
    for (;;) {
        char *line;
        size_t len;
        int rc = cf_linebuf_read(&lb, child.from_child, cf_now() + TARGET_TIMEOUT_S, &line, &len);
        if (rc != CF_OK) {
            cf_sb_printf(&why, "channel: %s after %d checkpoints", cf_strerror(rc), checkpoints);
            goto out;
        }
        json_object *msg = NULL;
        if (cf_channel_parse(line, len, &msg, err, sizeof err) != CF_OK) {
            cf_sb_printf(&why, "channel: %s", err);
            goto out;
        }
        const char *event = cf_json_str(msg, "event", "");
        bool is_checkpoint = strcmp(event, "checkpoint") == 0, done = strcmp(event, "done") == 0;
        if (strcmp(event, "error") == 0)
            cf_sb_printf(&why, "target error: %s", cf_json_str(msg, "message", ""));
        json_object_put(msg);
        if (done) {
            ok = checkpoints > 0;
            break;
        }
        if (why.len)
            goto out;
        if (!is_checkpoint)
            continue;
        if (!attached && fp_session_attach_pid(c.session, (int)child.pid) < 0) {
            cf_sb_printf(&why, "session attach: %s", fp_session_get_errmsg(c.session));
            goto out;
        }
        attached = true;
        checkpoints++;
        if (!check_checkpoint(&c, &why))
            goto out;
        if (cf_channel_continue(child.to_child) != CF_OK) {
            cf_sb_printf(&why, "the target left");
            goto out;
        }
    }
out:
    report(t, ok, "%s: the adapter running `frameproof dump --json` equals the session at %d checkpoint%s of %s",
           in->id, checkpoints, checkpoints == 1 ? "" : "s", SCENARIO);
    if (!ok)
        diag(cf_sb_str(&why));
    cf_child_kill(&child);
    cf_child_close(&child);
    cf_argv_free(argv);
    cf_linebuf_free(&lb);
    fp_sample_free(c.before);
    fp_sample_free(c.after);
    fp_session_free(c.session);
    cf_sample_free(&c.got);
    cf_sb_free(&why);
}

typedef struct failing {
    const char *label;
    const char *command;
    double timeout;
    int rc;
    const char *message;       /* exact, or with want_prefix the beginning */
    bool want_prefix;
    double max_seconds;        /* the run must end sooner */
} failing;

static const failing FAILING[] = {
    {"exit status 1", "false {pid}", COMMAND_TIMEOUT_S, CF_E_UNWINDER,
     "the unwinder command failed with exit status 1; stderr: (empty)", false, 10},
    {"exit status with stderr", "echo 'cannot attach to {pid}' >&2; exit 3", COMMAND_TIMEOUT_S, CF_E_UNWINDER,
     "the unwinder command failed with exit status 3; stderr: cannot attach to PID", false, 10},
    {"command not found", "exec frameproof-no-such-tool {pid}", COMMAND_TIMEOUT_S, CF_E_UNWINDER,
     "the unwinder command failed with exit status 127 (the shell's \"command not found\"); stderr: ", true, 10},
    {"timeout", "sleep 100 # {pid}", SHORT_TIMEOUT_S, CF_E_TIMEOUT,
     "the unwinder command did not finish within 0.5 s (killed with its process group); stderr: (empty)", false,
     5},
    {"killed by a signal", "echo dying >&2; kill -TERM $$ # {pid}", COMMAND_TIMEOUT_S, CF_E_UNWINDER,
     "the unwinder command was killed by signal 15 (Terminated); stderr: dying", false, 10},
    {"a child killed by a signal, as the shell reports it", "sh -c 'kill -KILL $$'; exit $? # {pid}",
     COMMAND_TIMEOUT_S, CF_E_UNWINDER,
     "the unwinder command failed with exit status 137 (a shell's report of signal 9, Killed); stderr: Killed",
     false, 10},
    {"garbage on stdout", "echo garbage # {pid}", COMMAND_TIMEOUT_S, CF_E_UNWINDER,
     "the unwinder command's output is not a protocol document: $: not JSON: unexpected character at byte 0: "
     "\"garbage\n\"; stderr: (empty)",
     false, 10},
    {"nothing on stdout", "true {pid}", COMMAND_TIMEOUT_S, CF_E_UNWINDER,
     "the unwinder command's output is not a protocol document: $: not JSON: empty output at byte 0: \"\"; "
     "stderr: (empty)",
     false, 10},
    {"JSON that breaks the protocol", "echo '{\"interpreters\":[{\"threads\":[{\"native_id\":\"{pid}\"}]}]}'",
     COMMAND_TIMEOUT_S, CF_E_UNWINDER,
     "the unwinder command's output is not a protocol document: $.interpreters[0].threads[0].native_id: expected "
     "a non-negative integer, got a string; stderr: (empty)",
     false, 10},
    {"stdout over the limit", "head -c 70000000 /dev/zero | tr '\\0' ' '; echo {pid}", COMMAND_TIMEOUT_S,
     CF_E_UNWINDER, "the unwinder command printed more than 67108864 bytes on stdout (killed); stderr: (empty)",
     false, 20},
    {"the end of a long stderr", "yes 'a long complaint' | head -c 100000 >&2; echo 'the last word' >&2; exit 2 "
                                 "# {pid}",
     COMMAND_TIMEOUT_S, CF_E_UNWINDER, "the unwinder command failed with exit status 2; stderr: ...", true, 10},
};

/* Runs one failing command; one TAP line. */
static void run_failing(tap *t, const failing *f)
{
    cf_adapter_opts o = {.command = f->command};
    cf_adapter_def def;
    cf_sample s;
    cf_sample_init(&s);
    char err[CF_ERRMSG_LEN] = "", want[CF_ERRMSG_LEN];
    void *st = NULL;
    cf_target target = {.pid = (int)getpid(), .timeout = f->timeout};
    bool ok = cf_command_defs(&def, 1, &o) == 1 && def.attach(&def, &target, &st, err, sizeof err) == CF_OK;
    double start = cf_now();
    int rc = ok ? def.sample(st, &s, err, sizeof err) : CF_OK;
    double took = cf_now() - start;
    if (ok)
        def.detach(st);
    /* PID in an expected message stands for the target's pid. */
    cf_strbuf sb;
    cf_sb_init(&sb);
    for (const char *p = f->message; *p;) {
        const char *hit = strstr(p, "PID");
        size_t n = hit ? (size_t)(hit - p) : strlen(p);
        cf_sb_append(&sb, p, n);
        if (!hit)
            break;
        cf_sb_printf(&sb, "%d", (int)getpid());
        p = hit + 3;
    }
    snprintf(want, sizeof want, "%s", cf_sb_str(&sb));
    cf_sb_free(&sb);
    bool msg_ok = f->want_prefix ? strncmp(err, want, strlen(want)) == 0 : strcmp(err, want) == 0;
    ok = ok && rc == f->rc && msg_ok && took < f->max_seconds;
    if (ok && strcmp(f->label, "the end of a long stderr") == 0)
        ok = strlen(err) == sizeof err - 1 && strcmp(err + strlen(err) - strlen("the last word"), "the last word") == 0;
    report(t, ok, "%s: %s", f->label, f->command);
    if (!ok) {
        printf("# rc %d (%s), %.2f s\n", rc, cf_strerror(rc), took);
        diag(err);
        printf("# expected:\n");
        diag(want);
    }
    cf_sample_free(&s);
}

/* Commands that succeed: the pid is substituted everywhere, a background
 * child holding stdout does not hold the sample up, declared fields. */
static void run_succeeding(tap *t)
{
    char err[CF_ERRMSG_LEN] = "";
    cf_sample s;
    cf_sample_init(&s);
    cf_adapter_def def;
    void *st = NULL;
    cf_target target = {.pid = (int)getpid(), .timeout = COMMAND_TIMEOUT_S};

    cf_adapter_opts o = {.command = "sleep 100 & echo '{\"interpreters\":[{\"threads\":[{\"native_id\":{pid},"
                                    "\"thread_id\":{pid},\"frames\":[]}]}]}'"};
    bool ok = cf_command_defs(&def, 1, &o) == 1 && def.attach(&def, &target, &st, err, sizeof err) == CF_OK;
    double start = cf_now();
    cf_sample_reset(&s, def.fields);
    int rc = ok ? def.sample(st, &s, err, sizeof err) : CF_E_UNWINDER;
    double took = cf_now() - start;
    if (ok)
        def.detach(st);
    ok = ok && rc == CF_OK && s.nthreads == 1 && s.threads[0].native_id == (uint64_t)getpid() &&
         s.threads[0].thread_id == (uint64_t)getpid() && s.fields == (CF_FIELD_NATIVE_ID | CF_FIELD_THREAD_ID) &&
         took < CF_COMMAND_DRAIN_S + 2.0;
    report(t, ok, "every {pid} replaced; a background child holding stdout is cut off after the drain time "
                  "(%.2f s)", took);
    if (!ok)
        diag(err);

    /* Declared fields narrow a full document. */
    o = (cf_adapter_opts){.command = "echo '{\"interpreters\":[{\"threads\":[{\"native_id\":{pid},\"main\":true,"
                                     "\"frames\":[{\"function\":\"f\",\"line\":3}]}]}]}'",
                          .command_fields = "native_id,line"};
    ok = cf_command_defs(&def, 1, &o) == 1 && def.fields == (CF_FIELD_NATIVE_ID | CF_FIELD_LINE) &&
         def.attach(&def, &target, &st, err, sizeof err) == CF_OK;
    cf_sample_reset(&s, def.fields);
    rc = ok ? def.sample(st, &s, err, sizeof err) : CF_E_UNWINDER;
    if (ok)
        def.detach(st);
    ok = ok && rc == CF_OK && s.fields == (CF_FIELD_NATIVE_ID | CF_FIELD_LINE) && s.nframes == 1 &&
         s.frames[0].line == 3;
    report(t, ok, "--unwinder-cmd-fields narrows the fields to the declared ones");
    if (!ok)
        diag(err);
    cf_sample_free(&s);
}

static void run_option_checks(tap *t)
{
    static const struct {
        cf_adapter_opts o;
        int rc;
        const char *message;
    } cases[] = {
        {{.command = NULL}, CF_E_NOTFOUND, "--unwinder command needs --unwinder-cmd 'COMMAND ... {pid}'"},
        {{.command = "py-spy dump --json"}, CF_E_FORMAT,
         "--unwinder-cmd: the command has no {pid}: it cannot know which process to sample"},
        {{.command = "x {pid}", .command_fields = "line,colour"}, CF_E_FORMAT,
         "--unwinder-cmd-fields: unknown field \"colour\""},
        {{.command = "x {pid}", .command_fields = "function,line"}, CF_E_FORMAT,
         "--unwinder-cmd-fields: include native_id or thread_id, or threads cannot be matched with the target's "
         "threads"},
        {{.command = "x {pid}", .command_fields = "thread_id,function"}, CF_OK, ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[CF_ERRMSG_LEN] = "";
        cf_adapter_def def;
        int rc = cf_command_check_opts(&cases[i].o, err, sizeof err);
        size_t ndefs = cf_command_defs(&def, 1, &cases[i].o);
        bool ok = rc == cases[i].rc && strcmp(err, cases[i].message) == 0 && ndefs == (rc == CF_OK ? 1u : 0u);
        report(t, ok, "options: %s", cases[i].message[0] ? cases[i].message : "a valid field list");
        if (!ok)
            diag(err);
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s FRAMEPROOF TARGETS_DIR\n", argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    tap t = {0};
    printf("TAP version 13\n");
    run_option_checks(&t);
    for (size_t i = 0; i < sizeof FAILING / sizeof FAILING[0]; i++)
        run_failing(&t, &FAILING[i]);
    run_succeeding(&t);

    char template[4096], err[CF_ERRMSG_LEN];
    snprintf(template, sizeof template, "'%s' dump --json --pid {pid}", argv[1]);
    cf_adapter_opts o = {.command = template};
    cf_adapter_def def;
    if (cf_command_defs(&def, 1, &o) != 1) {
        report(&t, false, "the dump template is accepted");
    } else {
        cf_manifest m;
        char manifest[PATH_MAX];
        if (cf_manifest_default_path(manifest, sizeof manifest) != CF_OK ||
            cf_manifest_load(manifest, &m, err, sizeof err) != CF_OK) {
            report(&t, true, "real interpreters # SKIP no manifest: %s", err);
        } else {
            for (size_t i = 0; i < m.count; i++)
                run_interpreter(&t, &m.items[i], argv[2], &def);
            cf_manifest_free(&m);
        }
    }
    printf("1..%d\n", t.n);
    return t.failed ? 1 : 0;
}
