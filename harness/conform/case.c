/* case.c — runs one case: launches the scenario, speaks the
 * ground-truth protocol, samples the target at each checkpoint with every
 * adapter configuration that applies to the interpreter, compares, and
 * always kills and reaps the target's process group. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "case.h"
#include "channel.h"
#include "compare.h"
#include "interrupt.h"
#include "launch.h"
#include "spawn.h"
#include "strbuf.h"
#include "truth.h"
#include "conform.h"
#include "util.h"
#include "sample.h"

#define SUMMARY_BYTES 160u
#define EOF_EXIT_WAIT_S 2.0   /* how long to wait for an exit status after EOF */

typedef struct config_state {
    const cf_adapter_def *def;
    char label[CF_NAME_SHOWN];
    char na[CF_REASON_LEN];    /* why it does not apply to the interpreter; "" when it does */
    void *state;               /* the adapter's, kept across checkpoints */
    bool attached, attach_failed;
    unsigned samples, failed_samples;
    uint64_t mismatches;
    json_object *failures;
    char info[CF_INFO_LEN];
} config_state;

typedef struct case_run {
    const cf_case_params *p;
    cf_child child;
    cf_linebuf lb;
    int out_fd, err_fd;
    char out_path[PATH_MAX], err_path[PATH_MAX];
    int sample_pid;
    json_object *hello;
    json_object *checkpoints;
    json_object *notes;
    config_state *cfg;
    size_t ncfg;
    cf_sample sample;
    cf_strbuf error;       /* harness error; empty when none */
    bool interrupted;
    bool done;
    double started, timeout, deadline;
} case_run;

/* Records a harness error (the first one wins).  Returns CF_OK so that
 * callers can `return fail(...)` and stop on cr->error.len. */
__attribute__((format(printf, 2, 3))) static int fail(case_run *cr, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = cf_sb_vfirst(&cr->error, fmt, ap);
    va_end(ap);
    return rc;
}

static int note(case_run *cr, const char *text)
{
    return cf_json_push(cr->notes, json_object_new_string(text));
}

static const char *preview(const char *s, size_t n, cf_strbuf *sb)
{
    cf_sb_clear(sb);
    cf_sb_append_sanitized(sb, s, n > CF_PREVIEW_BYTES ? CF_PREVIEW_BYTES : n);
    if (n > CF_PREVIEW_BYTES)
        cf_sb_puts(sb, "...");
    return cf_sb_str(sb);
}

static int record_failure(config_state *c, const cf_truth *t, long sample, const char *error,
                          json_object *mismatches, size_t count, long same_as)
{
    json_object *f = json_object_new_object();
    if (!f)
        return CF_E_NOMEM;
    int rc = cf_json_add(f, "checkpoint", json_object_new_string(t->name));
    if (!rc)
        rc = cf_json_add(f, "seq", json_object_new_int64(t->seq));
    if (!rc && sample >= 0)
        rc = cf_json_add(f, "sample", json_object_new_int64(sample));
    if (!rc && error)
        rc = cf_json_add(f, "error", json_object_new_string(error));
    if (!rc && !error)
        rc = cf_json_add(f, "mismatch_count", json_object_new_int64((int64_t)count));
    if (!rc && same_as >= 0)
        rc = cf_json_add(f, "same_as_sample", json_object_new_int64(same_as));
    if (!rc && mismatches)
        rc = cf_json_add(f, "mismatches", json_object_get(mismatches));
    if (rc) {
        json_object_put(f);
        return rc;
    }
    return cf_json_push(c->failures, f);
}

/* The concatenated messages of a mismatch list: equal signatures mean
 * identical findings. */
static int signature(json_object *mismatches, cf_strbuf *sb)
{
    cf_sb_clear(sb);
    for (size_t i = 0; i < json_object_array_length(mismatches); i++) {
        cf_sb_puts(sb, cf_json_str(json_object_array_get_idx(mismatches, i), "message", ""));
        cf_sb_puts(sb, "\n");
    }
    return sb->failed ? CF_E_NOMEM : CF_OK;
}

static int attach(case_run *cr, config_state *c, const cf_truth *t)
{
    cf_target target = {
        .pid = cr->sample_pid,
        .interp = cr->p->interp,
        .timeout = CF_ADAPTER_TIMEOUT_S * cr->p->timeout_scale * (cr->p->interp->debug ? CF_DEBUG_TIMEOUT_FACTOR : 1.0),
        .allow_untested = cr->p->allow_untested,
    };
    char err[CF_ERRMSG_LEN] = "", msg[CF_ERRMSG_LEN + 32];
    int rc = c->def->attach(c->def, &target, &c->state, err, sizeof err);
    if (rc == CF_E_NOMEM || rc == CF_E_INTERRUPTED)
        return rc;
    if (rc != CF_OK) {
        snprintf(msg, sizeof msg, "%s%s", rc == CF_E_TIMEOUT ? "attach timed out: " : "", err[0] ? err : "attach failed");
        c->attach_failed = true;
        c->state = NULL;
        return record_failure(c, t, -1, msg, NULL, 0, -1);
    }
    c->attached = true;
    const char *info = c->def->info ? c->def->info(c->state) : NULL;
    if (info)
        snprintf(c->info, sizeof c->info, "%s", info);
    return CF_OK;
}

/* The id the sample's threads are matched on (see cf_sample_find). */
static uint64_t fault_thread(const cf_sample *s, const cf_truth *t)
{
    return (s->fields & CF_FIELD_NATIVE_ID) ? t->threads[0].native_id : t->threads[0].thread_id;
}

/* Takes the configuration's samples for one checkpoint and records every
 * failing one; repeated identical findings are recorded as
 * "same_as_sample" references. */
static int sample_config(case_run *cr, config_state *c, const cf_truth *t)
{
    if (!c->attached && !c->attach_failed) {
        int rc = attach(cr, c, t);
        if (rc)
            return rc;
    }
    if (!c->attached)
        return CF_OK;
    int rc = CF_OK;
    long first_failing = -1;
    cf_strbuf first_sig, sig;
    cf_sb_init(&first_sig);
    cf_sb_init(&sig);
    unsigned per = c->def->samples_per_checkpoint ? c->def->samples_per_checkpoint : 1;
    for (unsigned k = 0; k < per && rc == CF_OK && !cf_interrupted(); k++) {
        c->samples++;
        char err[CF_ERRMSG_LEN] = "", msg[CF_ERRMSG_LEN + 32];
        cf_sample_reset(&cr->sample, c->def->fields);
        int sr = c->def->sample(c->state, &cr->sample, err, sizeof err);
        if (sr == CF_E_NOMEM || sr == CF_E_INTERRUPTED) {
            rc = sr == CF_E_INTERRUPTED ? CF_OK : sr;
            break;
        }
        if (sr != CF_OK) {
            snprintf(msg, sizeof msg, "%s%s", sr == CF_E_TIMEOUT ? "timed out: " : "",
                     err[0] ? err : cf_strerror(sr));
            c->failed_samples++;
            rc = record_failure(c, t, (long)k, msg, NULL, 0, -1);
            continue;
        }
        if (cr->p->fault != CF_FAULT_NONE && t->nthreads > 0)
            cf_sample_inject(&cr->sample, cr->p->fault, fault_thread(&cr->sample, t));
        json_object *mm = json_object_new_array();
        size_t n = 0;
        if (!mm) {
            rc = CF_E_NOMEM;
            break;
        }
        rc = cf_compare(t, &cr->sample, mm, &n);
        if (rc == CF_OK && n > 0) {
            c->failed_samples++;
            c->mismatches += n;
            rc = signature(mm, &sig);
            if (rc == CF_OK && first_failing >= 0 && first_sig.len == sig.len &&
                memcmp(cf_sb_str(&first_sig), cf_sb_str(&sig), sig.len) == 0) {
                rc = record_failure(c, t, (long)k, NULL, NULL, n, first_failing);
            } else if (rc == CF_OK) {
                rc = record_failure(c, t, (long)k, NULL, mm, n, -1);
                if (first_failing < 0) {
                    first_failing = (long)k;
                    cf_sb_clear(&first_sig);
                    rc = rc ? rc : cf_sb_append(&first_sig, cf_sb_str(&sig), sig.len);
                }
            }
        }
        json_object_put(mm);
    }
    cf_sb_free(&first_sig);
    cf_sb_free(&sig);
    return rc;
}

static int on_hello(case_run *cr, json_object *msg)
{
    if (cr->hello)
        return fail(cr, "second \"hello\" from the target");
    cr->hello = json_object_get(msg);
    int64_t pid = cf_json_int(msg, "pid", -1);
    char text[CF_ERRMSG_LEN];
    if (pid <= 0 || pid > INT_MAX) {
        snprintf(text, sizeof text, "\"hello\" has no valid pid; sampling the spawned pid %d", (int)cr->child.pid);
        return note(cr, text);
    }
    if (pid != cr->child.pid) {
        /* Only possible if the interpreter command forks instead of exec'ing
         * (chroot execs, so normally the pids are equal). */
        cr->sample_pid = (int)pid;
        snprintf(text, sizeof text, "\"hello\" pid %" PRId64 " differs from the spawned pid %d; sampling %" PRId64,
                 pid, (int)cr->child.pid, pid);
        return note(cr, text);
    }
    json_object *py = NULL;
    json_object_object_get_ex(msg, "python", &py);
    const char *v = cf_json_str(py, "version", NULL);
    if (v && strcmp(v, cr->p->interp->version) != 0) {
        snprintf(text, sizeof text, "the manifest says version %s, the target reports %s",
                 cr->p->interp->version, v);
        return note(cr, text);
    }
    return CF_OK;
}

static int on_checkpoint(case_run *cr, json_object *msg)
{
    if (!cr->hello)
        return fail(cr, "\"checkpoint\" before \"hello\"");
    cf_truth truth;
    char why[CF_ERRMSG_LEN];
    int rc = cf_truth_parse(msg, &truth, why, sizeof why);
    if (rc == CF_E_FORMAT)
        return fail(cr, "malformed checkpoint message: %s", why);
    if (rc)
        return rc;
    double held = cf_now();
    rc = cf_json_push(cr->checkpoints, json_object_new_string(truth.name));
    for (size_t i = 0; i < cr->ncfg && rc == CF_OK && !cf_interrupted(); i++)
        if (!cr->cfg[i].na[0])
            rc = sample_config(cr, &cr->cfg[i], &truth);
    cf_truth_free(&truth);
    if (rc)
        return rc;
    if (cf_interrupted()) {
        cr->interrupted = true;
        return fail(cr, "interrupted (at checkpoint \"%s\")", cf_json_str(msg, "name", "?"));
    }
    if (cf_channel_continue(cr->child.to_child) != CF_OK)
        return fail(cr, "cannot send \"continue\": %s", strerror(errno));
    /* The target cannot progress while held: that time does not count. */
    cr->deadline += cf_now() - held;
    return CF_OK;
}

static int on_eof(case_run *cr)
{
    cf_child_wait_exit(&cr->child, cf_now() + EOF_EXIT_WAIT_S);
    cf_child_kill(&cr->child);
    char status[128];
    cf_describe_status(cr->child.status, status, sizeof status);
    return fail(cr, "target closed the channel before \"done\" (%s%s)", status,
                cr->hello ? "" : ", no \"hello\" received");
}

static int dispatch(case_run *cr, json_object *msg, const char *line, size_t len, cf_strbuf *pv)
{
    const char *event = cf_json_str(msg, "event", NULL);
    if (!event)
        return fail(cr, "channel message without \"event\": \"%s\"", preview(line, len, pv));
    if (strcmp(event, "hello") == 0)
        return on_hello(cr, msg);
    if (strcmp(event, "checkpoint") == 0)
        return on_checkpoint(cr, msg);
    if (strcmp(event, "done") == 0) {
        if (!cr->hello)
            return fail(cr, "\"done\" before \"hello\"");
        cr->done = true;
        /* Leave time to exit even if the scenario used its whole budget. */
        double min_deadline = cf_now() + CF_EXIT_GRACE_S;
        if (cr->deadline < min_deadline)
            cr->deadline = min_deadline;
        return CF_OK;
    }
    if (strcmp(event, "error") == 0) {
        cf_strbuf m;
        cf_sb_init(&m);
        const char *text = cf_json_str(msg, "message", "(no message)");
        cf_sb_append_sanitized(&m, text, strlen(text));
        int rc = fail(cr, "target reported an error: %s", cf_sb_str(&m));
        cf_sb_free(&m);
        return rc;
    }
    return fail(cr, "unknown event \"%s\": \"%s\"", event, preview(line, len, pv));
}

static int protocol(case_run *cr)
{
    int rc = CF_OK;
    cf_strbuf pv;
    cf_sb_init(&pv);
    while (rc == CF_OK && cr->error.len == 0) {
        char *line;
        size_t len;
        int r = cf_linebuf_read(&cr->lb, cr->child.from_child, cr->deadline, &line, &len);
        if (r == CF_E_EOF && len > 0) {
            rc = fail(cr, "target closed the channel in the middle of a line: \"%s\"", preview(line, len, &pv));
        } else if (r == CF_E_EOF) {
            if (!cr->done)
                rc = on_eof(cr);
            break;
        } else if (r == CF_E_TIMEOUT) {
            rc = fail(cr, "timeout: %s within %.1f s (killed)",
                      cr->done ? "no exit after \"done\"" : cr->hello ? "no \"done\"" : "no \"hello\"", cr->timeout);
        } else if (r == CF_E_INTERRUPTED) {
            cr->interrupted = true;
            rc = fail(cr, "interrupted");
        } else if (r == CF_E_LIMIT) {
            rc = fail(cr, "channel line longer than %u bytes", CF_MAX_LINE_BYTES);
        } else if (r != CF_OK) {
            rc = r == CF_E_NOMEM ? r : fail(cr, "reading the channel: %s", strerror(errno));
        } else if (cr->done) {
            rc = fail(cr, "message after \"done\": \"%s\"", preview(line, len, &pv));
        } else {
            json_object *msg = NULL;
            char why[CF_ERRMSG_LEN];
            r = cf_channel_parse(line, len, &msg, why, sizeof why);
            if (r == CF_E_FORMAT)
                rc = fail(cr, "%s", why);
            else if (r != CF_OK)
                rc = r;
            else
                rc = dispatch(cr, msg, line, len, &pv);
            json_object_put(msg);
        }
    }
    cf_sb_free(&pv);
    if (rc || cr->error.len || !cr->done)
        return rc;
    /* "done" and EOF: the target must now exit with status 0. */
    char why[CF_ERRMSG_LEN];
    int w = cf_launched_await_exit(&cr->child, cr->deadline, why, sizeof why);
    cr->interrupted |= w == CF_E_INTERRUPTED;
    return w ? fail(cr, "%s", why) : CF_OK;
}

static int init_run(case_run *cr, const cf_case_params *p)
{
    memset(cr, 0, sizeof *cr);
    cr->p = p;
    cr->out_fd = cr->err_fd = -1;
    cr->child.from_child = cr->child.to_child = -1;
    cf_linebuf_init(&cr->lb);
    cf_sample_init(&cr->sample);
    cf_sb_init(&cr->error);
    cr->checkpoints = json_object_new_array();
    cr->notes = json_object_new_array();
    cr->ncfg = p->adapters->count;
    cr->cfg = calloc(cr->ncfg ? cr->ncfg : 1, sizeof *cr->cfg);
    if (!cr->checkpoints || !cr->notes || !cr->cfg)
        return CF_E_NOMEM;
    for (size_t i = 0; i < cr->ncfg; i++) {
        config_state *c = &cr->cfg[i];
        c->def = &p->adapters->defs[i];
        cf_adapter_label(c->def, c->label, sizeof c->label);
        cf_adapter_na(c->def, p->interp, c->na, sizeof c->na);
        c->failures = json_object_new_array();
        if (!c->failures)
            return CF_E_NOMEM;
    }
    return CF_OK;
}

static void free_run(case_run *cr)
{
    cf_launched l = {.child = &cr->child, .out_fd = &cr->out_fd, .err_fd = &cr->err_fd};
    cf_launched_close(&l, cr->p ? cr->p->pgid_path : NULL);
    for (size_t i = 0; cr->cfg && i < cr->ncfg; i++) {
        if (cr->cfg[i].attached)
            cr->cfg[i].def->detach(cr->cfg[i].state);
        json_object_put(cr->cfg[i].failures);
    }
    free(cr->cfg);
    json_object_put(cr->hello);
    json_object_put(cr->checkpoints);
    json_object_put(cr->notes);
    cf_sample_free(&cr->sample);
    cf_linebuf_free(&cr->lb);
    cf_sb_free(&cr->error);
}

/* Starts the target; a failure is a harness error of the case. */
static int launch(case_run *cr)
{
    const cf_case_params *p = cr->p;
    cf_launch_req req = {.interp = p->interp, .targets_dir = p->targets_dir, .subdir = "scenarios",
                         .file = p->scen->file, .log_dir = p->log_dir, .name = p->scen->name,
                         .pgid_path = p->pgid_path};
    cf_launched out = {.child = &cr->child, .out_fd = &cr->out_fd, .err_fd = &cr->err_fd,
                       .out_path = cr->out_path, .err_path = cr->err_path};
    char err[CF_ERRMSG_LEN];
    int rc = cf_launch_scenario(&req, &out, err, sizeof err);
    if (rc == CF_E_NOMEM)
        return rc;
    if (rc)
        return fail(cr, "%s", err);
    cr->sample_pid = (int)cr->child.pid;
    return CF_OK;
}

static const char *config_status(const config_state *c, bool case_error)
{
    if (c->na[0])
        return "n/a";
    if (c->attach_failed || c->failed_samples)
        return "fail";
    return c->samples == 0 && case_error ? "not_run" : "pass";
}

static json_object *fields_json(unsigned fields)
{
    json_object *a = json_object_new_array();
    for (unsigned i = 0; a && i < CF_FIELD_COUNT; i++) {
        if ((fields & (1u << i)) && cf_json_push(a, json_object_new_string(cf_field_name(1u << i)))) {
            json_object_put(a);
            return NULL;
        }
    }
    return a;
}

static json_object *config_json(const config_state *c, bool case_error)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    if (cf_json_add(o, "unwinder", json_object_new_string(c->def->unwinder)) ||
        cf_json_add(o, "configuration", json_object_new_string(c->def->config ? c->def->config : "")) ||
        cf_json_add(o, "name", json_object_new_string(c->label)) ||
        cf_json_add(o, "status", json_object_new_string(config_status(c, case_error))) ||
        cf_json_add(o, "fields", fields_json(c->def->fields)) ||
        (c->na[0] && cf_json_add(o, "reason", json_object_new_string(c->na))) ||
        (c->info[0] && cf_json_add(o, "info", json_object_new_string(c->info))) ||
        cf_json_add(o, "samples", json_object_new_int64(c->samples)) ||
        cf_json_add(o, "failed_samples", json_object_new_int64(c->failed_samples)) ||
        cf_json_add(o, "mismatches", json_object_new_int64((int64_t)c->mismatches)) ||
        cf_json_add(o, "failures", json_object_get(c->failures))) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

/* Verdict of one unwinder in this case: "fail" if a configuration failed,
 * "n/a" if none applies, else "pass" (or the case's error/not_run). */
static const char *unwinder_verdict(const case_run *cr, const char *unwinder, bool case_error)
{
    bool any = false, failed = false;
    for (size_t i = 0; i < cr->ncfg; i++) {
        const config_state *c = &cr->cfg[i];
        if (strcmp(c->def->unwinder, unwinder) != 0 || c->na[0])
            continue;
        any = true;
        failed |= c->attach_failed || c->failed_samples;
    }
    if (case_error)
        return "error";
    return !any ? "n/a" : failed ? "fail" : "pass";
}

static json_object *verdicts_json(const case_run *cr, bool case_error)
{
    json_object *o = json_object_new_object();
    for (size_t i = 0; o && i < cr->ncfg; i++) {
        const char *u = cr->cfg[i].def->unwinder;
        if (json_object_object_get_ex(o, u, NULL))
            continue;
        if (cf_json_add(o, u, json_object_new_string(unwinder_verdict(cr, u, case_error)))) {
            json_object_put(o);
            return NULL;
        }
    }
    return o;
}

/* The first failure of a configuration: its error, or its first mismatch. */
static const char *first_finding(const config_state *c)
{
    json_object *f = json_object_array_get_idx(c->failures, 0);
    const char *error = cf_json_str(f, "error", NULL);
    if (error)
        return error;
    json_object *mm = cf_json_array(f, "mismatches");
    return mm ? cf_json_str(json_object_array_get_idx(mm, 0), "message", "") : "";
}

static void summarize(const case_run *cr, const char *status, char *buf, size_t len)
{
    if (strcmp(status, "error") == 0) {
        size_t n = strcspn(cf_sb_str(&cr->error), "\n");
        snprintf(buf, len, "%.*s", (int)(n < SUMMARY_BYTES ? n : SUMMARY_BYTES), cf_sb_str(&cr->error));
        return;
    }
    size_t cps = json_object_array_length(cr->checkpoints);
    if (strcmp(status, "pass") == 0) {
        snprintf(buf, len, "%zu checkpoint%s", cps, cps == 1 ? "" : "s");
        return;
    }
    uint64_t total = 0;
    unsigned failing = 0, applicable = 0;
    const config_state *first = NULL;
    for (size_t i = 0; i < cr->ncfg; i++) {
        const config_state *c = &cr->cfg[i];
        applicable += !c->na[0];
        if (!c->attach_failed && !c->failed_samples)
            continue;
        failing++;
        total += c->mismatches;
        if (!first)
            first = c;
    }
    const char *finding = first ? first_finding(first) : "";
    size_t n = strlen(finding);
    snprintf(buf, len, "%" PRIu64 " mismatch%s, %u/%u configurations failing; first (%s): %.*s%s", total,
             total == 1 ? "" : "es", failing, applicable, first ? first->label : "?",
             (int)(n < SUMMARY_BYTES ? n : SUMMARY_BYTES), finding, n > SUMMARY_BYTES ? "..." : "");
}

static int build_result(case_run *cr, json_object **result)
{
    const cf_case_params *p = cr->p;
    bool error = cr->error.len > 0;
    bool failed = false;
    for (size_t i = 0; i < cr->ncfg; i++)
        failed |= cr->cfg[i].attach_failed || cr->cfg[i].failed_samples;
    const char *status = error ? "error" : failed ? "fail" : "pass";
    char summary[CF_ERRMSG_LEN];
    summarize(cr, status, summary, sizeof summary);
    int rc = CF_E_NOMEM;
    json_object *o = json_object_new_object(), *configs = json_object_new_array();
    cf_strbuf tail;
    cf_sb_init(&tail);
    if (!o || !configs)
        goto out;
    if (cf_json_add(o, "interpreter", json_object_new_string(p->interp->id)) ||
        cf_json_add(o, "scenario", json_object_new_string(p->scen->name)) ||
        cf_json_add(o, "status", json_object_new_string(status)) ||
        cf_json_add(o, "summary", json_object_new_string(summary)) ||
        cf_json_add(o, "seconds", cf_json_seconds(cf_now() - cr->started)) ||
        cf_json_add(o, "timeout", cf_json_seconds(cr->timeout)) ||
        cf_json_add(o, "pid", json_object_new_int64(cr->child.pid)) ||
        cf_json_add(o, "sampled_pid", json_object_new_int64(cr->sample_pid)))
        goto out;
    json_object *py = NULL;
    if (cr->hello)
        json_object_object_get_ex(cr->hello, "python", &py);
    if (json_object_object_add(o, "python", json_object_get(py)) != 0)
        goto out;
    if (cf_json_add(o, "checkpoints", json_object_get(cr->checkpoints)) ||
        cf_json_add(o, "notes", json_object_get(cr->notes)))
        goto out;
    if (error && (cf_json_add(o, "error", json_object_new_string(cf_sb_str(&cr->error))) ||
                  cf_json_add(o, "interrupted", json_object_new_boolean(cr->interrupted))))
        goto out;
    char rel[PATH_MAX];
    if (cr->err_fd >= 0) {
        const char *base = strrchr(cr->err_path, '/');
        if (cf_path_join(rel, sizeof rel, p->log_rel, base ? base + 1 : cr->err_path) == CF_OK &&
            cf_json_add(o, "stderr_log", json_object_new_string(rel)))
            goto out;
        base = strrchr(cr->out_path, '/');
        if (cf_path_join(rel, sizeof rel, p->log_rel, base ? base + 1 : cr->out_path) == CF_OK &&
            cf_json_add(o, "stdout_log", json_object_new_string(rel)))
            goto out;
        if (strcmp(status, "pass") != 0) {
            if (cf_read_tail(cr->err_path, CF_TAIL_BYTES, &tail) != CF_OK ||
                cf_json_add(o, "stderr_tail", json_object_new_string(cf_sb_str(&tail))))
                goto out;
        }
    }
    for (size_t i = 0; i < cr->ncfg; i++)
        if (cf_json_push(configs, config_json(&cr->cfg[i], error)))
            goto out;
    if (cf_json_add(o, "verdicts", verdicts_json(cr, error)))
        goto out;
    if (cf_json_add(o, "unwinders", configs))
        goto out_configs_owned;
    configs = NULL;
    *result = o;
    o = NULL;
    rc = CF_OK;
out:
    json_object_put(configs);
out_configs_owned:
    json_object_put(o);
    cf_sb_free(&tail);
    return rc;
}

/* Harness errors carry the end of the target's stderr. */
static int append_stderr_tail(case_run *cr)
{
    cf_strbuf tail;
    cf_sb_init(&tail);
    int rc = cf_read_tail(cr->err_path, CF_TAIL_BYTES, &tail);
    if (rc == CF_OK && tail.len > 0) {
        cf_sb_puts(&cr->error, "\n--- target stderr (end) ---\n");
        cf_sb_append(&cr->error, cf_sb_str(&tail), tail.len);
        rc = cr->error.failed ? CF_E_NOMEM : CF_OK;
    }
    cf_sb_free(&tail);
    return rc;
}

int cf_case_run(const cf_case_params *p, json_object **result)
{
    case_run cr;
    *result = NULL;
    int rc = init_run(&cr, p);
    if (rc)
        goto out;
    cr.started = cf_now();
    cr.timeout = p->scen->timeout * p->timeout_scale * (p->interp->debug ? CF_DEBUG_TIMEOUT_FACTOR : 1.0);
    cr.deadline = cr.started + cr.timeout;
    rc = launch(&cr);
    if (rc == CF_OK && cr.error.len == 0)
        rc = protocol(&cr);
    /* Every exit path: kill the whole group and reap before reporting, so
     * that the stderr log is complete. */
    cf_child_kill(&cr.child);
    if (rc == CF_OK && cr.error.len && cr.err_fd >= 0)
        rc = append_stderr_tail(&cr);
    if (rc == CF_OK)
        rc = build_result(&cr, result);
out:
    free_run(&cr);
    return rc;
}

json_object *cf_case_stub(const cf_interp *in, const cf_scenario *s, const char *status, const char *reason)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    const char *key = strcmp(status, "skip") == 0 ? "skip_reason" : "error";
    if (cf_json_add(o, "interpreter", json_object_new_string(in->id)) ||
        cf_json_add(o, "scenario", json_object_new_string(s->name)) ||
        cf_json_add(o, "status", json_object_new_string(status)) ||
        cf_json_add(o, "summary", json_object_new_string(reason ? reason : "")) ||
        (reason && cf_json_add(o, key, json_object_new_string(reason)))) {
        json_object_put(o);
        return NULL;
    }
    return o;
}
