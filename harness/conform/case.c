/* case.c — runs one case: launches the scenario, speaks the
 * ground-truth protocol, samples the target at each checkpoint with every
 * adapter configuration that applies to the interpreter, compares, and
 * always kills and reaps the target's process group. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "case.h"
#include "case_common.h"
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

/* A configuration's parked state beside its common part. */
typedef struct config_state {
    cf_case_cfg *base;
    void *state;               /* the adapter's, kept across checkpoints */
    bool attached, attach_failed;
    unsigned samples, failed_samples;
    uint64_t mismatches;
} config_state;

typedef struct case_run {
    cf_case_core core;
    json_object *checkpoints;
    config_state *cfg;         /* one per core.cfg */
    cf_sample sample;
} case_run;

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
    return cf_json_push(c->base->failures, f);
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
        .pid = cr->core.sample_pid,
        .interp = cr->core.p->interp,
        .timeout = cf_case_scaled(&cr->core, CF_ADAPTER_TIMEOUT_S),
        .allow_untested = cr->core.p->allow_untested,
    };
    char err[CF_ERRMSG_LEN] = "", msg[CF_ERRMSG_LEN + 32];
    int rc = c->base->def->attach(c->base->def, &target, &c->state, err, sizeof err);
    if (rc == CF_E_NOMEM || rc == CF_E_INTERRUPTED)
        return rc;
    if (rc != CF_OK) {
        snprintf(msg, sizeof msg, "%s%s", rc == CF_E_TIMEOUT ? "attach timed out: " : "", err[0] ? err : "attach failed");
        c->attach_failed = true;
        c->state = NULL;
        return record_failure(c, t, -1, msg, NULL, 0, -1);
    }
    c->attached = true;
    const char *info = c->base->def->info ? c->base->def->info(c->state) : NULL;
    if (info)
        snprintf(c->base->info, sizeof c->base->info, "%s", info);
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
    unsigned per = c->base->def->samples_per_checkpoint ? c->base->def->samples_per_checkpoint : 1;
    for (unsigned k = 0; k < per && rc == CF_OK && !cf_interrupted(); k++) {
        c->samples++;
        char err[CF_ERRMSG_LEN] = "", msg[CF_ERRMSG_LEN + 32];
        cf_sample_reset(&cr->sample, c->base->def->fields);
        int sr = c->base->def->sample(c->state, &cr->sample, err, sizeof err);
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
        if (cr->core.p->fault != CF_FAULT_NONE && t->nthreads > 0)
            cf_sample_inject(&cr->sample, cr->core.p->fault, fault_thread(&cr->sample, t));
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
    if (cr->core.hello)
        return cf_case_fail(&cr->core, "second \"hello\" from the target");
    cr->core.hello = json_object_get(msg);
    int64_t pid = cf_json_int(msg, "pid", -1);
    char text[CF_ERRMSG_LEN];
    if (pid <= 0 || pid > INT_MAX) {
        snprintf(text, sizeof text, "\"hello\" has no valid pid; sampling the spawned pid %d", (int)cr->core.child.pid);
        return cf_case_note(&cr->core, text);
    }
    if (pid != cr->core.child.pid) {
        /* Only possible if the interpreter command forks instead of exec'ing
         * (chroot execs, so normally the pids are equal). */
        return cf_case_hello_pid(&cr->core, pid);
    }
    json_object *py = NULL;
    json_object_object_get_ex(msg, "python", &py);
    const char *v = cf_json_str(py, "version", NULL);
    if (v && strcmp(v, cr->core.p->interp->version) != 0) {
        snprintf(text, sizeof text, "the manifest says version %s, the target reports %s",
                 cr->core.p->interp->version, v);
        return cf_case_note(&cr->core, text);
    }
    return CF_OK;
}

static int on_checkpoint(case_run *cr, json_object *msg)
{
    if (!cr->core.hello)
        return cf_case_fail(&cr->core, "\"checkpoint\" before \"hello\"");
    cf_truth truth;
    char why[CF_ERRMSG_LEN];
    int rc = cf_truth_parse(msg, &truth, why, sizeof why);
    if (rc == CF_E_FORMAT)
        return cf_case_fail(&cr->core, "malformed checkpoint message: %s", why);
    if (rc)
        return rc;
    double held = cf_now();
    rc = cf_json_push(cr->checkpoints, json_object_new_string(truth.name));
    for (size_t i = 0; i < cr->core.ncfg && rc == CF_OK && !cf_interrupted(); i++)
        if (!cr->cfg[i].base->na[0])
            rc = sample_config(cr, &cr->cfg[i], &truth);
    cf_truth_free(&truth);
    if (rc)
        return rc;
    if (cf_interrupted()) {
        cr->core.interrupted = true;
        return cf_case_fail(&cr->core, "interrupted (at checkpoint \"%s\")", cf_json_str(msg, "name", "?"));
    }
    if (cf_channel_continue(cr->core.child.to_child) != CF_OK)
        return cf_case_fail(&cr->core, "cannot send \"continue\": %s", strerror(errno));
    /* The target cannot progress while held: that time does not count. */
    cr->core.deadline += cf_now() - held;
    return CF_OK;
}

static int on_eof(case_run *cr)
{
    cf_child_wait_exit(&cr->core.child, cf_now() + EOF_EXIT_WAIT_S);
    cf_child_kill(&cr->core.child);
    char status[128];
    cf_describe_status(cr->core.child.status, status, sizeof status);
    return cf_case_fail(&cr->core, "target closed the channel before \"done\" (%s%s)", status,
                cr->core.hello ? "" : ", no \"hello\" received");
}

static int dispatch(case_run *cr, json_object *msg, const char *line, size_t len, cf_strbuf *pv)
{
    const char *event = cf_json_str(msg, "event", NULL);
    if (!event)
        return cf_case_fail(&cr->core, "channel message without \"event\": \"%s\"", preview(line, len, pv));
    if (strcmp(event, "hello") == 0)
        return on_hello(cr, msg);
    if (strcmp(event, "checkpoint") == 0)
        return on_checkpoint(cr, msg);
    if (strcmp(event, "done") == 0) {
        if (!cr->core.hello)
            return cf_case_fail(&cr->core, "\"done\" before \"hello\"");
        cr->core.done = true;
        /* Leave time to exit even if the scenario used its whole budget. */
        double min_deadline = cf_now() + CF_EXIT_GRACE_S;
        if (cr->core.deadline < min_deadline)
            cr->core.deadline = min_deadline;
        return CF_OK;
    }
    if (strcmp(event, "error") == 0)
        return cf_case_target_error(&cr->core, msg);
    return cf_case_fail(&cr->core, "unknown event \"%s\": \"%s\"", event, preview(line, len, pv));
}

static int protocol(case_run *cr)
{
    int rc = CF_OK;
    cf_strbuf pv;
    cf_sb_init(&pv);
    while (rc == CF_OK && cr->core.error.len == 0) {
        char *line;
        size_t len;
        int r = cf_linebuf_read(&cr->core.lb, cr->core.child.from_child, cr->core.deadline, &line, &len);
        if (r == CF_E_EOF && len > 0) {
            rc = cf_case_fail(&cr->core, "target closed the channel in the middle of a line: \"%s\"",
                              preview(line, len, &pv));
        } else if (r == CF_E_EOF) {
            if (!cr->core.done)
                rc = on_eof(cr);
            break;
        } else if (r == CF_E_TIMEOUT) {
            const char *what = cr->core.done ? "no exit after \"done\"" : cr->core.hello ? "no \"done\"" : "no \"hello\"";
            rc = cf_case_fail(&cr->core, "timeout: %s within %.1f s (killed)", what, cr->core.timeout);
        } else if (r == CF_E_INTERRUPTED) {
            cr->core.interrupted = true;
            rc = cf_case_fail(&cr->core, "interrupted");
        } else if (r == CF_E_LIMIT) {
            rc = cf_case_fail(&cr->core, "channel line longer than %u bytes", CF_MAX_LINE_BYTES);
        } else if (r != CF_OK) {
            rc = r == CF_E_NOMEM ? r : cf_case_fail(&cr->core, "reading the channel: %s", strerror(errno));
        } else if (cr->core.done) {
            rc = cf_case_fail(&cr->core, "message after \"done\": \"%s\"", preview(line, len, &pv));
        } else {
            json_object *msg = NULL;
            char why[CF_ERRMSG_LEN];
            r = cf_channel_parse(line, len, &msg, why, sizeof why);
            if (r == CF_E_FORMAT)
                rc = cf_case_fail(&cr->core, "%s", why);
            else if (r != CF_OK)
                rc = r;
            else
                rc = dispatch(cr, msg, line, len, &pv);
            json_object_put(msg);
        }
    }
    cf_sb_free(&pv);
    if (rc || cr->core.error.len || !cr->core.done)
        return rc;
    /* "done" and EOF: the target must now exit with status 0. */
    char why[CF_ERRMSG_LEN];
    int w = cf_launched_await_exit(&cr->core.child, cr->core.deadline, why, sizeof why);
    cr->core.interrupted |= w == CF_E_INTERRUPTED;
    return w ? cf_case_fail(&cr->core, "%s", why) : CF_OK;
}

static int init_run(case_run *cr, const cf_case_params *p)
{
    cr->checkpoints = NULL;
    cr->cfg = NULL;
    cf_sample_init(&cr->sample);
    int rc = cf_case_core_init(&cr->core, p);
    if (rc)
        return rc;
    cr->checkpoints = json_object_new_array();
    cr->cfg = calloc(cr->core.ncfg ? cr->core.ncfg : 1, sizeof *cr->cfg);
    if (!cr->checkpoints || !cr->cfg)
        return CF_E_NOMEM;
    for (size_t i = 0; i < cr->core.ncfg; i++)
        cr->cfg[i].base = &cr->core.cfg[i];
    return CF_OK;
}

static void free_run(case_run *cr)
{
    for (size_t i = 0; cr->cfg && i < cr->core.ncfg; i++)
        if (cr->cfg[i].attached)
            cr->cfg[i].base->def->detach(cr->cfg[i].state);
    cf_case_core_free(&cr->core);
    free(cr->cfg);
    json_object_put(cr->checkpoints);
    cf_sample_free(&cr->sample);
}

static const char *config_status(const config_state *c, bool case_error)
{
    if (c->base->na[0])
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
    if (cf_case_cfg_head(o, c->base, config_status(c, case_error)) ||
        cf_json_add(o, "fields", fields_json(c->base->def->fields)) || cf_case_cfg_about(o, c->base) ||
        cf_json_add(o, "samples", json_object_new_int64(c->samples)) ||
        cf_json_add(o, "failed_samples", json_object_new_int64(c->failed_samples)) ||
        cf_json_add(o, "mismatches", json_object_new_int64((int64_t)c->mismatches)) ||
        cf_json_add(o, "failures", json_object_get(c->base->failures))) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

/* The first failure of a configuration: its error, or its first mismatch. */
static const char *first_finding(const config_state *c)
{
    json_object *f = json_object_array_get_idx(c->base->failures, 0);
    const char *error = cf_json_str(f, "error", NULL);
    if (error)
        return error;
    json_object *mm = cf_json_array(f, "mismatches");
    return mm ? cf_json_str(json_object_array_get_idx(mm, 0), "message", "") : "";
}

static void summarize(const case_run *cr, const char *status, char *buf, size_t len)
{
    if (strcmp(status, "error") == 0) {
        cf_case_error_summary(&cr->core, SUMMARY_BYTES, buf, len);
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
    for (size_t i = 0; i < cr->core.ncfg; i++) {
        const config_state *c = &cr->cfg[i];
        applicable += !c->base->na[0];
        if (!c->base->failed)
            continue;
        failing++;
        total += c->mismatches;
        if (!first)
            first = c;
    }
    const char *finding = first ? first_finding(first) : "";
    size_t n = strlen(finding);
    snprintf(buf, len, "%" PRIu64 " mismatch%s, %u/%u configurations failing; first (%s): %.*s%s", total,
             total == 1 ? "" : "es", failing, applicable, first ? first->base->label : "?",
             (int)(n < SUMMARY_BYTES ? n : SUMMARY_BYTES), finding, n > SUMMARY_BYTES ? "..." : "");
}

static int build_result(case_run *cr, json_object **result)
{
    const cf_case_params *p = cr->core.p;
    bool error = cr->core.error.len > 0;
    bool failed = false;
    for (size_t i = 0; i < cr->core.ncfg; i++) {
        cr->cfg[i].base->failed = cr->cfg[i].attach_failed || cr->cfg[i].failed_samples;
        failed |= cr->cfg[i].base->failed;
    }
    const char *status = error ? "error" : failed ? "fail" : "pass";
    char summary[CF_ERRMSG_LEN];
    summarize(cr, status, summary, sizeof summary);
    int rc = CF_E_NOMEM;
    json_object *o = json_object_new_object(), *configs = json_object_new_array();
    cf_strbuf tail;
    cf_sb_init(&tail);
    if (!o || !configs)
        goto out;
    if (cf_case_result_head(o, &cr->core, NULL, status, summary, cr->checkpoints))
        goto out;
    char rel[PATH_MAX];
    if (cr->core.err_fd >= 0) {
        const char *base = strrchr(cr->core.err_path, '/');
        if (cf_path_join(rel, sizeof rel, p->log_rel, base ? base + 1 : cr->core.err_path) == CF_OK &&
            cf_json_add(o, "stderr_log", json_object_new_string(rel)))
            goto out;
        base = strrchr(cr->core.out_path, '/');
        if (cf_path_join(rel, sizeof rel, p->log_rel, base ? base + 1 : cr->core.out_path) == CF_OK &&
            cf_json_add(o, "stdout_log", json_object_new_string(rel)))
            goto out;
        if (strcmp(status, "pass") != 0) {
            if (cf_read_tail(cr->core.err_path, CF_TAIL_BYTES, &tail) != CF_OK ||
                cf_json_add(o, "stderr_tail", json_object_new_string(cf_sb_str(&tail))))
                goto out;
        }
    }
    for (size_t i = 0; i < cr->core.ncfg; i++)
        if (cf_json_push(configs, config_json(&cr->cfg[i], error)))
            goto out;
    if (cf_json_add(o, "verdicts", cf_case_verdicts_json(&cr->core, error)))
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
    int rc = cf_read_tail(cr->core.err_path, CF_TAIL_BYTES, &tail);
    if (rc == CF_OK && tail.len > 0) {
        cf_sb_puts(&cr->core.error, "\n--- target stderr (end) ---\n");
        cf_sb_append(&cr->core.error, cf_sb_str(&tail), tail.len);
        rc = cr->core.error.failed ? CF_E_NOMEM : CF_OK;
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
    cf_case_core_start(&cr.core);
    rc = cf_case_launch(&cr.core, "scenarios");
    if (rc == CF_OK && cr.core.error.len == 0)
        rc = protocol(&cr);
    /* Every exit path: kill the whole group and reap before reporting, so
     * that the stderr log is complete. */
    cf_child_kill(&cr.core.child);
    if (rc == CF_OK && cr.core.error.len && cr.core.err_fd >= 0)
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
