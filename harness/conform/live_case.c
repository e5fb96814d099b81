/* live_case.c — runs one live case: launches the live scenario, waits for
 * "ready", lets every applicable configuration attach and sample as fast
 * as it can for the budget while the target runs freely, classifies every
 * sample against the declaration, sends "stop", waits for "done" and a
 * clean exit, and always kills and reaps the target's process group. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "case_common.h"
#include "channel.h"
#include "conform.h"
#include "interrupt.h"
#include "launch.h"
#include "live_case.h"
#include "live_faults.h"
#include "live_judge.h"
#include "spawn.h"
#include "strbuf.h"
#include "util.h"

#define LIVE_SUBDIR "live"
#define LIVE_CHECKPOINT "live"   /* the "checkpoint" of live failures in the report */

/* A configuration's live state beside its common part. */
typedef struct live_cfg {
    cf_case_cfg *base;               /* its failures: example wrong samples, capped per rule */
    char attach_error[CF_ERRMSG_LEN]; /* "" unless attach failed */
    bool ran;
    uint64_t samples, valid, rejected, wrong, spliced;
    uint64_t splice_caught;          /* spliced samples judged wrong whose original was not */
    uint64_t by_rule[CF_RULE_COUNT];
    double seconds;
    json_object *rejections;         /* [{reason, count}], capped */
    uint64_t other_rejections;       /* rejections beyond the kept reasons */
} live_cfg;

typedef struct live_run {
    cf_case_core core;
    const cf_live_budget *b;
    cf_live_decl *decl;
    live_cfg *cfg;                   /* one per core.cfg */
    cf_sample cur, prev, spliced;
    bool ready;
} live_run;

/* ------------------------------------------------------------------ */
/* Channel */

/* Reads the next event until the deadline; *msg is the parsed object (the
 * caller puts it).  A harness error is recorded and *msg stays NULL. */
static int next_event(live_run *lr, double deadline, const char *waiting_for, json_object **msg)
{
    *msg = NULL;
    char *line;
    size_t len;
    int r = cf_linebuf_read(&lr->core.lb, lr->core.child.from_child, deadline, &line, &len);
    if (r == CF_E_EOF) {
        cf_child_wait_exit(&lr->core.child, cf_now() + CF_EXIT_GRACE_S);
        cf_child_kill(&lr->core.child);
        char status[128];
        cf_describe_status(lr->core.child.status, status, sizeof status);
        return cf_case_fail(&lr->core, "target closed the channel while the harness waited for %s (%s)", waiting_for,
                            status);
    }
    if (r == CF_E_TIMEOUT)
        return cf_case_fail(&lr->core, "timeout: no %s within %.1f s (killed)", waiting_for,
                            deadline - lr->core.started);
    if (r == CF_E_INTERRUPTED) {
        lr->core.interrupted = true;
        return cf_case_fail(&lr->core, "interrupted");
    }
    if (r == CF_E_LIMIT)
        return cf_case_fail(&lr->core, "channel line longer than %u bytes", CF_MAX_LINE_BYTES);
    if (r != CF_OK)
        return r == CF_E_NOMEM ? r : cf_case_fail(&lr->core, "reading the channel: %s", strerror(errno));
    char why[CF_ERRMSG_LEN];
    r = cf_channel_parse(line, len, msg, why, sizeof why);
    if (r == CF_E_FORMAT)
        return cf_case_fail(&lr->core, "%s", why);
    if (r)
        return r;
    const char *event = cf_json_str(*msg, "event", "");
    if (strcmp(event, "error") == 0) {
        r = cf_case_target_error(&lr->core, *msg);
        json_object_put(*msg);
        *msg = NULL;
        return r;
    }
    return CF_OK;
}

/* Waits for the event `want`; any other event is a harness error. */
static int expect_event(live_run *lr, const char *want, double deadline)
{
    json_object *msg = NULL;
    char what[64];
    snprintf(what, sizeof what, "\"%s\"", want);
    int rc = next_event(lr, deadline, what, &msg);
    if (rc || !msg)
        return rc;
    const char *event = cf_json_str(msg, "event", "");
    if (strcmp(event, want) != 0) {
        rc = cf_case_fail(&lr->core, "expected \"%s\" from the target, got \"%.*s\"", want, (int)CF_NAME_SHOWN, event);
    } else if (strcmp(want, "hello") == 0) {
        lr->core.hello = json_object_get(msg);
        int64_t pid = cf_json_int(msg, "pid", -1);
        if (pid > 0 && pid <= INT_MAX && pid != lr->core.child.pid)
            rc = cf_case_hello_pid(&lr->core, pid);
    }
    json_object_put(msg);
    return rc;
}

/* While sampling: anything from the target (an error, an early exit) ends
 * the case as a harness error. */
static int look_at_channel(live_run *lr)
{
    struct pollfd pfd = {.fd = lr->core.child.from_child, .events = POLLIN};
    if (poll(&pfd, 1, 0) <= 0)
        return CF_OK;
    json_object *msg = NULL;
    int rc = next_event(lr, cf_now() + CF_EXIT_GRACE_S, "nothing (the target is being sampled)", &msg);
    if (rc == CF_OK && msg)
        rc = cf_case_fail(&lr->core, "unexpected \"%.*s\" while sampling", (int)CF_NAME_SHOWN,
                          cf_json_str(msg, "event", "?"));
    json_object_put(msg);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Recording */

/* A JSON string of untrusted text (names an unwinder read, its messages):
 * invalid UTF-8 and control characters become \xNN escapes. */
static json_object *text_json(const char *s)
{
    cf_strbuf sb;
    cf_sb_init(&sb);
    cf_sb_append_sanitized(&sb, s, strlen(s));
    json_object *o = sb.failed ? NULL : json_object_new_string(cf_sb_str(&sb));
    cf_sb_free(&sb);
    return o;
}

static json_object *stack_json(const cf_sample *s, const cf_thread *t)
{
    json_object *o = json_object_new_object(), *frames = json_object_new_array();
    if (!o || !frames)
        goto fail;
    if (((s->fields & CF_FIELD_NATIVE_ID) && cf_json_add(o, "native_id", json_object_new_int64((int64_t)t->native_id))) ||
        ((s->fields & CF_FIELD_THREAD_ID) && cf_json_add(o, "thread_id", json_object_new_int64((int64_t)t->thread_id))) ||
        ((s->fields & CF_FIELD_MAIN) && cf_json_add(o, "main", json_object_new_boolean(t->main))))
        goto fail;
    for (size_t i = 0; i < t->count; i++) {
        const cf_frame *f = &s->frames[t->first + i];
        json_object *fo = json_object_new_object();
        if (!fo || cf_json_push(frames, fo) ||
            ((s->fields & CF_FIELD_FUNCTION) && cf_json_add(fo, "function", text_json(f->function))) ||
            ((s->fields & CF_FIELD_FILE) && cf_json_add(fo, "file", text_json(f->file))) ||
            ((s->fields & CF_FIELD_LINE) &&
             json_object_object_add(fo, "line", f->line == CF_POS_NONE ? NULL : json_object_new_int(f->line))))
            goto fail;
        /* Where the unwinder found the frame, when it says: what a wrong
         * sample's diagnosis starts from. */
        if (f->frame_addr && (cf_json_add(fo, "frame_addr", json_object_new_int64((int64_t)f->frame_addr)) ||
                              cf_json_add(fo, "instr_offset", json_object_new_int(f->instr_offset))))
            goto fail;
    }
    if (cf_json_add(o, "frames", frames) == CF_OK)
        return o;
    frames = NULL;
fail:
    json_object_put(o);
    json_object_put(frames);
    return NULL;
}

/* Keeps the first CF_LIVE_EXAMPLES_PER_RULE wrong samples of each rule. */
static int record_wrong(live_cfg *c, const cf_sample *s, const cf_live_result *res, uint64_t index)
{
    for (size_t k = 0; k < res->nfindings; k++) {
        const cf_live_finding *f = &res->findings[k];
        if (c->by_rule[f->rule]++ >= CF_LIVE_EXAMPLES_PER_RULE)
            continue;
        char message[CF_LIVE_REASON_LEN + 32];
        snprintf(message, sizeof message, "%s: %s", cf_live_rule_name(f->rule), f->reason);
        json_object *o = json_object_new_object(), *mm = json_object_new_array(), *m = json_object_new_object();
        int rc = o && mm && m ? CF_OK : CF_E_NOMEM;
        if (!rc)
            rc = cf_json_add(m, "message", text_json(message));
        if (!rc)
            rc = cf_json_push(mm, m);
        m = NULL;
        if (rc || cf_json_add(o, "checkpoint", json_object_new_string(LIVE_CHECKPOINT)) ||
            cf_json_add(o, "sample", json_object_new_int64((int64_t)index)) ||
            cf_json_add(o, "rule", json_object_new_string(cf_live_rule_name(f->rule))) ||
            cf_json_add(o, "mismatch_count", json_object_new_int64(1)) || cf_json_add(o, "mismatches", mm) ||
            cf_json_add(o, "threads_in_sample", json_object_new_int64((int64_t)s->nthreads)) ||
            (f->thread >= 0 && cf_json_add(o, "thread", stack_json(s, &s->threads[f->thread])))) {
            if (rc == CF_OK)
                mm = NULL; /* owned by o once added */
            json_object_put(m);
            json_object_put(mm);
            json_object_put(o);
            return CF_E_NOMEM;
        }
        if (cf_json_push(c->base->failures, o))
            return CF_E_NOMEM;
    }
    return CF_OK;
}

static int record_rejection(live_cfg *c, const char *reason)
{
    c->rejected++;
    char text[CF_REASON_LEN];
    cf_strbuf sb;
    cf_sb_init(&sb);
    const char *given = reason && *reason ? reason : "no reason given";
    /* Numbers (addresses, thread ids, sizes) vary from sample to sample:
     * reasons are grouped by their words, numbers shown as '#'. */
    for (const char *p = given; *p;) {
        size_t digits = strspn(p, "0123456789");
        size_t hex = strncmp(p, "0x", 2) == 0 ? 2 + strspn(p + 2, "0123456789abcdefABCDEF") : 0;
        size_t len = hex > 2 ? hex : digits;
        if (len > 0) {
            cf_sb_append(&sb, "#", 1);
            p += len;
            continue;
        }
        size_t run = strcspn(p, "0123456789");
        cf_sb_append_sanitized(&sb, p, run);
        p += run;
    }
    snprintf(text, sizeof text, "%s", cf_sb_str(&sb));
    bool failed = sb.failed;
    cf_sb_free(&sb);
    if (failed)
        return CF_E_NOMEM;
    size_t n = json_object_array_length(c->rejections);
    for (size_t i = 0; i < n; i++) {
        json_object *r = json_object_array_get_idx(c->rejections, i);
        if (strcmp(cf_json_str(r, "reason", ""), text) == 0)
            return cf_json_add(r, "count", json_object_new_int64(cf_json_int(r, "count", 0) + 1));
    }
    if (n >= CF_LIVE_REJECT_KINDS) {
        c->other_rejections++;
        return CF_OK;
    }
    json_object *r = json_object_new_object();
    if (!r || cf_json_add(r, "reason", json_object_new_string(text)) ||
        cf_json_add(r, "count", json_object_new_int64(1))) {
        json_object_put(r);
        return CF_E_NOMEM;
    }
    return cf_json_push(c->rejections, r);
}

/* ------------------------------------------------------------------ */
/* Sampling */

/* Classifies one good sample (spliced first under splice-previous). */
static int judge_sample(live_run *lr, live_cfg *c)
{
    const cf_sample *judged = &lr->cur;
    cf_live_result res;
    bool original_wrong = false;
    int n = 0;
    if (cf_fault_is_live(lr->core.p->fault)) {
        n = lr->core.p->fault == CF_FAULT_SPLICE_PREVIOUS ? cf_live_splice(&lr->cur, &lr->prev, &lr->spliced)
                                                     : cf_live_cache_by_address(&lr->cur, &lr->prev, &lr->spliced);
        if (n < 0)
            return n;
        c->spliced += (uint64_t)n;
        judged = &lr->spliced;
        if (n > 0) {
            int rc = cf_live_classify(lr->decl, &lr->cur, &res);
            if (rc)
                return rc;
            original_wrong = res.verdict == CF_LIVE_WRONG;
        }
    }
    int rc = cf_live_classify(lr->decl, judged, &res);
    if (rc)
        return rc;
    if (n > 0 && !original_wrong && res.verdict == CF_LIVE_WRONG)
        c->splice_caught++;
    if (res.verdict == CF_LIVE_WRONG) {
        c->wrong++;
        return record_wrong(c, judged, &res, c->samples - 1);
    }
    if (res.verdict == CF_LIVE_REJECTED)
        return record_rejection(c, res.reject_reason);
    c->valid++;
    return CF_OK;
}

static int run_config(live_run *lr, live_cfg *c)
{
    cf_target target = {.pid = lr->core.sample_pid, .interp = lr->core.p->interp,
                        .timeout = cf_case_scaled(&lr->core, CF_ADAPTER_TIMEOUT_S)};
    void *state = NULL;
    char err[CF_ERRMSG_LEN] = "";
    int rc = c->base->def->attach(c->base->def, &target, &state, err, sizeof err);
    if (rc == CF_E_NOMEM || rc == CF_E_INTERRUPTED)
        return rc;
    c->ran = true;
    if (rc != CF_OK) {
        snprintf(c->attach_error, sizeof c->attach_error, "%s%s", rc == CF_E_TIMEOUT ? "attach timed out: " : "",
                 err[0] ? err : "attach failed");
        return CF_OK;
    }
    const char *info = c->base->def->info ? c->base->def->info(state) : NULL;
    if (info)
        snprintf(c->base->info, sizeof c->base->info, "%s", info);
    cf_sample_reset(&lr->prev, c->base->def->fields);
    double start = cf_now(), last_look = start, now = start;
    rc = CF_OK;
    while (rc == CF_OK && lr->core.error.len == 0 && c->samples < lr->b->samples && now - start < lr->b->seconds) {
        if (cf_interrupted()) {
            lr->core.interrupted = true;
            rc = cf_case_fail(&lr->core, "interrupted (sampling with %s)", c->base->label);
            break;
        }
        cf_sample_reset(&lr->cur, c->base->def->fields);
        err[0] = '\0';
        int sr = c->base->def->sample(state, &lr->cur, err, sizeof err);
        now = cf_now();
        if (sr == CF_E_NOMEM) {
            rc = sr;
            break;
        }
        if (sr == CF_E_INTERRUPTED)
            continue;
        c->samples++;
        if (sr != CF_OK) {
            rc = record_rejection(c, err[0] ? err : cf_strerror(sr));
        } else {
            rc = judge_sample(lr, c);
            /* The adapter's strings may die at its next sample: keep a copy. */
            if (rc == CF_OK && cf_fault_is_live(lr->core.p->fault))
                rc = cf_sample_copy(&lr->prev, &lr->cur);
        }
        if (rc == CF_OK && now - last_look >= CF_LIVE_POLL_S) {
            last_look = now;
            rc = look_at_channel(lr);
        }
    }
    c->seconds = cf_now() - start;
    c->base->def->detach(state);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Report */

static const char *config_status(const live_cfg *c)
{
    if (c->base->na[0])
        return "n/a";
    if (!c->ran)
        return "not_run";
    return c->attach_error[0] || c->wrong ? "fail" : "pass";
}

static json_object *rules_json(const live_cfg *c)
{
    json_object *o = json_object_new_object();
    for (int r = 0; o && r < (int)CF_RULE_COUNT; r++) {
        if (c->by_rule[r] && cf_json_add(o, cf_live_rule_name(r), json_object_new_int64((int64_t)c->by_rule[r]))) {
            json_object_put(o);
            return NULL;
        }
    }
    return o;
}

static json_object *config_json(const live_cfg *c)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    double pct = c->samples ? 100.0 * (double)c->rejected / (double)c->samples : 0.0;
    double rate = c->seconds > 0 ? (double)c->samples / c->seconds : 0.0;
    json_object *failures = c->base->failures;
    if (c->attach_error[0]) {
        failures = json_object_new_array();
        json_object *f = json_object_new_object();
        if (!failures || !f || cf_json_add(f, "checkpoint", json_object_new_string(LIVE_CHECKPOINT)) ||
            cf_json_add(f, "error", json_object_new_string(c->attach_error)) || cf_json_push(failures, f)) {
            json_object_put(f);
            json_object_put(failures);
            json_object_put(o);
            return NULL;
        }
    } else {
        json_object_get(failures);
    }
    if (cf_json_add(o, "failures", failures) || cf_case_cfg_head(o, c->base, config_status(c)) ||
        cf_case_cfg_about(o, c->base) ||
        (c->attach_error[0] && cf_json_add(o, "attach_error", json_object_new_string(c->attach_error))) ||
        cf_json_add(o, "samples", json_object_new_int64((int64_t)c->samples)) ||
        cf_json_add(o, "valid", json_object_new_int64((int64_t)c->valid)) ||
        cf_json_add(o, "rejected", json_object_new_int64((int64_t)c->rejected)) ||
        cf_json_add(o, "wrong", json_object_new_int64((int64_t)c->wrong)) ||
        cf_json_add(o, "rejected_pct", json_object_new_double(pct)) ||
        cf_json_add(o, "sampling_seconds", cf_json_seconds(c->seconds)) ||
        cf_json_add(o, "samples_per_second", json_object_new_double(rate)) ||
        cf_json_add(o, "spliced_threads", json_object_new_int64((int64_t)c->spliced)) ||
        cf_json_add(o, "splice_caught", json_object_new_int64((int64_t)c->splice_caught)) ||
        cf_json_add(o, "wrong_by_rule", rules_json(c)) ||
        cf_json_add(o, "rejections", json_object_get(c->rejections)) ||
        cf_json_add(o, "other_rejections", json_object_new_int64((int64_t)c->other_rejections)) ||
        /* the names the JUnit writer reads */
        cf_json_add(o, "mismatches", json_object_new_int64((int64_t)c->wrong)) ||
        cf_json_add(o, "failed_samples", json_object_new_int64((int64_t)c->wrong))) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

static void summarize(const live_run *lr, const char *status, char *buf, size_t len)
{
    if (strcmp(status, "error") == 0) {
        cf_case_error_summary(&lr->core, CF_NAME_SHOWN, buf, len);
        return;
    }
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < lr->core.ncfg && used < len; i++) {
        const live_cfg *c = &lr->cfg[i];
        if (c->base->na[0])
            continue;
        int n = c->attach_error[0]
                    ? snprintf(buf + used, len - used, "%s%s: attach failed", used ? "; " : "", c->base->label)
                    : snprintf(buf + used, len - used, "%s%s: %" PRIu64 " samples, %" PRIu64 " wrong, %" PRIu64
                               " rejected", used ? "; " : "", c->base->label, c->samples, c->wrong, c->rejected);
        used += n > 0 ? (size_t)n : 0;
    }
}

static int build_result(live_run *lr, json_object **result)
{
    bool error = lr->core.error.len > 0, failed = false;
    for (size_t i = 0; i < lr->core.ncfg; i++) {
        lr->cfg[i].base->failed = strcmp(config_status(&lr->cfg[i]), "fail") == 0;
        failed |= lr->cfg[i].base->failed;
    }
    const char *status = error ? "error" : failed ? "fail" : "pass";
    char summary[CF_ERRMSG_LEN];
    summarize(lr, status, summary, sizeof summary);
    json_object *o = json_object_new_object(), *configs = json_object_new_array();
    cf_strbuf tail;
    cf_sb_init(&tail);
    int rc = o && configs ? CF_OK : CF_E_NOMEM;
    for (size_t i = 0; rc == CF_OK && i < lr->core.ncfg; i++)
        rc = cf_json_push(configs, config_json(&lr->cfg[i]));
    if (rc == CF_OK && error)
        rc = cf_read_tail(lr->core.err_path, CF_TAIL_BYTES, &tail);
    if (rc || cf_case_result_head(o, &lr->core, "live", status, summary, NULL) ||
        (error && cf_json_add(o, "stderr_tail", json_object_new_string(cf_sb_str(&tail)))) ||
        cf_json_add(o, "verdicts", cf_case_verdicts_json(&lr->core, error))) {
        json_object_put(o);
        json_object_put(configs);
        cf_sb_free(&tail);
        return CF_E_NOMEM;
    }
    cf_sb_free(&tail);
    if (cf_json_add(o, "unwinders", configs)) {
        json_object_put(o);
        return CF_E_NOMEM;
    }
    *result = o;
    return CF_OK;
}

/* ------------------------------------------------------------------ */
/* The case */

static int init_run(live_run *lr, const cf_case_params *p, const cf_live_budget *b)
{
    lr->b = b;
    lr->decl = NULL;
    lr->cfg = NULL;
    lr->ready = false;
    cf_sample_init(&lr->cur);
    cf_sample_init(&lr->prev);
    cf_sample_init(&lr->spliced);
    int rc = cf_case_core_init(&lr->core, p);
    if (rc)
        return rc;
    lr->cfg = calloc(lr->core.ncfg ? lr->core.ncfg : 1, sizeof *lr->cfg);
    if (!lr->cfg)
        return CF_E_NOMEM;
    for (size_t i = 0; i < lr->core.ncfg; i++) {
        live_cfg *c = &lr->cfg[i];
        c->base = &lr->core.cfg[i];
        c->rejections = json_object_new_array();
        if (!c->rejections)
            return CF_E_NOMEM;
    }
    return CF_OK;
}

static void free_run(live_run *lr)
{
    cf_case_core_free(&lr->core);
    for (size_t i = 0; lr->cfg && i < lr->core.ncfg; i++)
        json_object_put(lr->cfg[i].rejections);
    free(lr->cfg);
    cf_live_decl_free(lr->decl);
    cf_sample_free(&lr->cur);
    cf_sample_free(&lr->prev);
    cf_sample_free(&lr->spliced);
}

static int load_declaration(live_run *lr)
{
    const cf_scenario *s = lr->core.p->scen;
    char dir[PATH_MAX], decl[PATH_MAX], script[PATH_MAX], err[CF_ERRMSG_LEN];
    if (!s->declaration)
        return cf_case_fail(&lr->core, "live scenario %s has no \"declaration\" in its index entry", s->name);
    if (cf_path_join(dir, sizeof dir, lr->core.p->targets_dir, LIVE_SUBDIR) ||
        cf_path_join(decl, sizeof decl, dir, s->declaration) || cf_path_join(script, sizeof script, dir, s->file))
        return cf_case_fail(&lr->core, "declaration path too long");
    int rc = cf_live_decl_load(decl, script, &lr->decl, err, sizeof err);
    if (rc == CF_E_NOMEM)
        return rc;
    return rc ? cf_case_fail(&lr->core, "declaration: %s", err) : CF_OK;
}

/* "stop", then "done" and a clean exit. */
static int stop_target(live_run *lr)
{
    if (cf_channel_send(lr->core.child.to_child, "stop") != CF_OK)
        return cf_case_fail(&lr->core, "cannot send \"stop\": %s", strerror(errno));
    double deadline = cf_now() + cf_case_scaled(&lr->core, CF_LIVE_STOP_WAIT_S);
    int rc = expect_event(lr, "done", deadline);
    if (rc || lr->core.error.len)
        return rc;
    lr->core.done = true;
    char why[CF_ERRMSG_LEN];
    int w = cf_launched_await_exit(&lr->core.child, deadline + CF_EXIT_GRACE_S, why, sizeof why);
    lr->core.interrupted |= w == CF_E_INTERRUPTED;
    return w ? cf_case_fail(&lr->core, "%s", why) : CF_OK;
}

static int run_case(live_run *lr)
{
    int rc = load_declaration(lr);
    if (rc || lr->core.error.len)
        return rc;
    rc = cf_case_launch(&lr->core, LIVE_SUBDIR);
    if (rc || lr->core.error.len)
        return rc;
    rc = expect_event(lr, "hello", lr->core.deadline);
    if (rc == CF_OK && !lr->core.error.len)
        rc = expect_event(lr, "ready", lr->core.deadline);
    if (rc || lr->core.error.len)
        return rc;
    lr->ready = true;
    for (size_t i = 0; i < lr->core.ncfg && rc == CF_OK && !lr->core.error.len; i++)
        if (!lr->cfg[i].base->na[0])
            rc = run_config(lr, &lr->cfg[i]);
    if (rc || lr->core.error.len)
        return rc;
    return stop_target(lr);
}

int cf_live_case_run(const cf_case_params *p, const cf_live_budget *b, json_object **result)
{
    live_run lr;
    *result = NULL;
    int rc = init_run(&lr, p, b);
    if (rc == CF_OK) {
        cf_case_core_start(&lr.core);
        rc = run_case(&lr);
        cf_child_kill(&lr.core.child);
        if (rc == CF_OK)
            rc = build_result(&lr, result);
    }
    free_run(&lr);
    return rc;
}
