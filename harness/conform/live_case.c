/* live_case.c — runs one live case: launches the live scenario, waits for
 * "ready", lets every applicable configuration attach and sample as fast
 * as it can for the budget while the target runs freely, classifies every
 * sample against the declaration, sends "stop", waits for "done" and a
 * clean exit, and always kills and reaps the target's process group. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

typedef struct live_cfg {
    const cf_adapter_def *def;
    char label[CF_NAME_SHOWN];
    char na[CF_REASON_LEN];          /* why it does not apply; "" when it does */
    char info[CF_INFO_LEN];
    char attach_error[CF_ERRMSG_LEN]; /* "" unless attach failed */
    bool ran;
    uint64_t samples, valid, rejected, wrong, spliced;
    uint64_t splice_caught;          /* spliced samples judged wrong whose original was not */
    uint64_t by_rule[CF_RULE_COUNT];
    double seconds;
    json_object *failures;           /* example wrong samples, capped per rule */
    json_object *rejections;         /* [{reason, count}], capped */
    uint64_t other_rejections;       /* rejections beyond the kept reasons */
} live_cfg;

typedef struct live_run {
    const cf_case_params *p;
    const cf_live_budget *b;
    cf_child child;
    cf_linebuf lb;
    int out_fd, err_fd;
    char out_path[PATH_MAX], err_path[PATH_MAX];
    int sample_pid;
    json_object *hello;
    json_object *notes;
    cf_live_decl *decl;
    live_cfg *cfg;
    size_t ncfg;
    cf_sample cur, prev, spliced;
    cf_strbuf error;
    bool interrupted, ready, done;
    double started, timeout, deadline;
} live_run;

__attribute__((format(printf, 2, 3))) static int fail(live_run *lr, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = cf_sb_vfirst(&lr->error, fmt, ap);
    va_end(ap);
    return rc;
}

static double scaled(const live_run *lr, double seconds)
{
    return seconds * lr->p->timeout_scale * (lr->p->interp->debug ? CF_DEBUG_TIMEOUT_FACTOR : 1.0);
}

/* ------------------------------------------------------------------ */
/* Channel */

/* Reads the next event until the deadline; *msg is the parsed object (the
 * caller puts it).  A harness error is recorded and *msg stays NULL. */
static int next_event(live_run *lr, double deadline, const char *waiting_for, json_object **msg)
{
    *msg = NULL;
    char *line;
    size_t len;
    int r = cf_linebuf_read(&lr->lb, lr->child.from_child, deadline, &line, &len);
    if (r == CF_E_EOF) {
        cf_child_wait_exit(&lr->child, cf_now() + CF_EXIT_GRACE_S);
        cf_child_kill(&lr->child);
        char status[128];
        cf_describe_status(lr->child.status, status, sizeof status);
        return fail(lr, "target closed the channel while the harness waited for %s (%s)", waiting_for, status);
    }
    if (r == CF_E_TIMEOUT)
        return fail(lr, "timeout: no %s within %.1f s (killed)", waiting_for, deadline - lr->started);
    if (r == CF_E_INTERRUPTED) {
        lr->interrupted = true;
        return fail(lr, "interrupted");
    }
    if (r == CF_E_LIMIT)
        return fail(lr, "channel line longer than %u bytes", CF_MAX_LINE_BYTES);
    if (r != CF_OK)
        return r == CF_E_NOMEM ? r : fail(lr, "reading the channel: %s", strerror(errno));
    char why[CF_ERRMSG_LEN];
    r = cf_channel_parse(line, len, msg, why, sizeof why);
    if (r == CF_E_FORMAT)
        return fail(lr, "%s", why);
    if (r)
        return r;
    const char *event = cf_json_str(*msg, "event", "");
    if (strcmp(event, "error") == 0) {
        cf_strbuf m;
        cf_sb_init(&m);
        const char *text = cf_json_str(*msg, "message", "(no message)");
        cf_sb_append_sanitized(&m, text, strlen(text));
        r = fail(lr, "target reported an error: %s", cf_sb_str(&m));
        cf_sb_free(&m);
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
        rc = fail(lr, "expected \"%s\" from the target, got \"%.*s\"", want, (int)CF_NAME_SHOWN, event);
    } else if (strcmp(want, "hello") == 0) {
        lr->hello = json_object_get(msg);
        int64_t pid = cf_json_int(msg, "pid", -1);
        if (pid > 0 && pid <= INT_MAX && pid != lr->child.pid) {
            char text[CF_ERRMSG_LEN];
            lr->sample_pid = (int)pid;
            snprintf(text, sizeof text, "\"hello\" pid %" PRId64 " differs from the spawned pid %d; sampling %" PRId64,
                     pid, (int)lr->child.pid, pid);
            rc = cf_json_push(lr->notes, json_object_new_string(text));
        }
    }
    json_object_put(msg);
    return rc;
}

/* While sampling: anything from the target (an error, an early exit) ends
 * the case as a harness error. */
static int look_at_channel(live_run *lr)
{
    struct pollfd pfd = {.fd = lr->child.from_child, .events = POLLIN};
    if (poll(&pfd, 1, 0) <= 0)
        return CF_OK;
    json_object *msg = NULL;
    int rc = next_event(lr, cf_now() + CF_EXIT_GRACE_S, "nothing (the target is being sampled)", &msg);
    if (rc == CF_OK && msg)
        rc = fail(lr, "unexpected \"%.*s\" while sampling", (int)CF_NAME_SHOWN, cf_json_str(msg, "event", "?"));
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
        if (cf_json_push(c->failures, o))
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
    if (cf_fault_is_live(lr->p->fault)) {
        n = lr->p->fault == CF_FAULT_SPLICE_PREVIOUS ? cf_live_splice(&lr->cur, &lr->prev, &lr->spliced)
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
    cf_target target = {.pid = lr->sample_pid, .interp = lr->p->interp, .timeout = scaled(lr, CF_ADAPTER_TIMEOUT_S)};
    void *state = NULL;
    char err[CF_ERRMSG_LEN] = "";
    int rc = c->def->attach(c->def, &target, &state, err, sizeof err);
    if (rc == CF_E_NOMEM || rc == CF_E_INTERRUPTED)
        return rc;
    c->ran = true;
    if (rc != CF_OK) {
        snprintf(c->attach_error, sizeof c->attach_error, "%s%s", rc == CF_E_TIMEOUT ? "attach timed out: " : "",
                 err[0] ? err : "attach failed");
        return CF_OK;
    }
    const char *info = c->def->info ? c->def->info(state) : NULL;
    if (info)
        snprintf(c->info, sizeof c->info, "%s", info);
    cf_sample_reset(&lr->prev, c->def->fields);
    double start = cf_now(), last_look = start, now = start;
    rc = CF_OK;
    while (rc == CF_OK && lr->error.len == 0 && c->samples < lr->b->samples && now - start < lr->b->seconds) {
        if (cf_interrupted()) {
            lr->interrupted = true;
            rc = fail(lr, "interrupted (sampling with %s)", c->label);
            break;
        }
        cf_sample_reset(&lr->cur, c->def->fields);
        err[0] = '\0';
        int sr = c->def->sample(state, &lr->cur, err, sizeof err);
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
            if (rc == CF_OK && cf_fault_is_live(lr->p->fault))
                rc = cf_sample_copy(&lr->prev, &lr->cur);
        }
        if (rc == CF_OK && now - last_look >= CF_LIVE_POLL_S) {
            last_look = now;
            rc = look_at_channel(lr);
        }
    }
    c->seconds = cf_now() - start;
    c->def->detach(state);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Report */

static const char *config_status(const live_cfg *c)
{
    if (c->na[0])
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
    json_object *failures = c->failures;
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
    if (cf_json_add(o, "failures", failures) || cf_json_add(o, "unwinder", json_object_new_string(c->def->unwinder)) ||
        cf_json_add(o, "configuration", json_object_new_string(c->def->config ? c->def->config : "")) ||
        cf_json_add(o, "name", json_object_new_string(c->label)) ||
        cf_json_add(o, "status", json_object_new_string(config_status(c))) ||
        (c->na[0] && cf_json_add(o, "reason", json_object_new_string(c->na))) ||
        (c->info[0] && cf_json_add(o, "info", json_object_new_string(c->info))) ||
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

static json_object *verdicts_json(const live_run *lr, bool error)
{
    json_object *o = json_object_new_object();
    for (size_t i = 0; o && i < lr->ncfg; i++) {
        const char *u = lr->cfg[i].def->unwinder;
        bool any = false, failed = false;
        for (size_t k = 0; k < lr->ncfg; k++) {
            if (strcmp(lr->cfg[k].def->unwinder, u) != 0 || lr->cfg[k].na[0])
                continue;
            any = true;
            failed |= strcmp(config_status(&lr->cfg[k]), "fail") == 0;
        }
        const char *v = error ? "error" : !any ? "n/a" : failed ? "fail" : "pass";
        if (cf_json_add(o, u, json_object_new_string(v))) {
            json_object_put(o);
            return NULL;
        }
    }
    return o;
}

static void summarize(const live_run *lr, const char *status, char *buf, size_t len)
{
    if (strcmp(status, "error") == 0) {
        size_t n = strcspn(cf_sb_str(&lr->error), "\n");
        snprintf(buf, len, "%.*s", (int)(n < CF_NAME_SHOWN ? n : CF_NAME_SHOWN), cf_sb_str(&lr->error));
        return;
    }
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < lr->ncfg && used < len; i++) {
        const live_cfg *c = &lr->cfg[i];
        if (c->na[0])
            continue;
        int n = c->attach_error[0]
                    ? snprintf(buf + used, len - used, "%s%s: attach failed", used ? "; " : "", c->label)
                    : snprintf(buf + used, len - used, "%s%s: %" PRIu64 " samples, %" PRIu64 " wrong, %" PRIu64
                               " rejected", used ? "; " : "", c->label, c->samples, c->wrong, c->rejected);
        used += n > 0 ? (size_t)n : 0;
    }
}

static int build_result(live_run *lr, json_object **result)
{
    const cf_case_params *p = lr->p;
    bool error = lr->error.len > 0, failed = false;
    for (size_t i = 0; i < lr->ncfg; i++)
        failed |= strcmp(config_status(&lr->cfg[i]), "fail") == 0;
    const char *status = error ? "error" : failed ? "fail" : "pass";
    char summary[CF_ERRMSG_LEN];
    summarize(lr, status, summary, sizeof summary);
    json_object *o = json_object_new_object(), *configs = json_object_new_array(), *py = NULL;
    cf_strbuf tail;
    cf_sb_init(&tail);
    if (lr->hello)
        json_object_object_get_ex(lr->hello, "python", &py);
    int rc = o && configs ? CF_OK : CF_E_NOMEM;
    for (size_t i = 0; rc == CF_OK && i < lr->ncfg; i++)
        rc = cf_json_push(configs, config_json(&lr->cfg[i]));
    if (rc == CF_OK && error)
        rc = cf_read_tail(lr->err_path, CF_TAIL_BYTES, &tail);
    if (rc || cf_json_add(o, "interpreter", json_object_new_string(p->interp->id)) ||
        cf_json_add(o, "scenario", json_object_new_string(p->scen->name)) ||
        cf_json_add(o, "mode", json_object_new_string("live")) ||
        cf_json_add(o, "status", json_object_new_string(status)) ||
        cf_json_add(o, "summary", json_object_new_string(summary)) ||
        cf_json_add(o, "seconds", cf_json_seconds(cf_now() - lr->started)) ||
        cf_json_add(o, "pid", json_object_new_int64(lr->child.pid)) ||
        cf_json_add(o, "sampled_pid", json_object_new_int64(lr->sample_pid)) ||
        json_object_object_add(o, "python", json_object_get(py)) != 0 ||
        cf_json_add(o, "notes", json_object_get(lr->notes)) ||
        (error && cf_json_add(o, "error", json_object_new_string(cf_sb_str(&lr->error)))) ||
        (error && cf_json_add(o, "interrupted", json_object_new_boolean(lr->interrupted))) ||
        (error && cf_json_add(o, "stderr_tail", json_object_new_string(cf_sb_str(&tail)))) ||
        cf_json_add(o, "verdicts", verdicts_json(lr, error))) {
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
    memset(lr, 0, sizeof *lr);
    lr->p = p;
    lr->b = b;
    lr->out_fd = lr->err_fd = -1;
    lr->child.from_child = lr->child.to_child = -1;
    cf_linebuf_init(&lr->lb);
    cf_sample_init(&lr->cur);
    cf_sample_init(&lr->prev);
    cf_sample_init(&lr->spliced);
    cf_sb_init(&lr->error);
    lr->notes = json_object_new_array();
    lr->ncfg = p->adapters->count;
    lr->cfg = calloc(lr->ncfg ? lr->ncfg : 1, sizeof *lr->cfg);
    if (!lr->notes || !lr->cfg)
        return CF_E_NOMEM;
    for (size_t i = 0; i < lr->ncfg; i++) {
        live_cfg *c = &lr->cfg[i];
        c->def = &p->adapters->defs[i];
        cf_adapter_label(c->def, c->label, sizeof c->label);
        cf_adapter_na(c->def, p->interp, c->na, sizeof c->na);
        c->failures = json_object_new_array();
        c->rejections = json_object_new_array();
        if (!c->failures || !c->rejections)
            return CF_E_NOMEM;
    }
    return CF_OK;
}

static void free_run(live_run *lr)
{
    cf_launched l = {.child = &lr->child, .out_fd = &lr->out_fd, .err_fd = &lr->err_fd};
    cf_launched_close(&l, lr->p ? lr->p->pgid_path : NULL);
    for (size_t i = 0; lr->cfg && i < lr->ncfg; i++) {
        json_object_put(lr->cfg[i].failures);
        json_object_put(lr->cfg[i].rejections);
    }
    free(lr->cfg);
    cf_live_decl_free(lr->decl);
    json_object_put(lr->hello);
    json_object_put(lr->notes);
    cf_sample_free(&lr->cur);
    cf_sample_free(&lr->prev);
    cf_sample_free(&lr->spliced);
    cf_linebuf_free(&lr->lb);
    cf_sb_free(&lr->error);
}

static int load_declaration(live_run *lr)
{
    const cf_scenario *s = lr->p->scen;
    char dir[PATH_MAX], decl[PATH_MAX], script[PATH_MAX], err[CF_ERRMSG_LEN];
    if (!s->declaration)
        return fail(lr, "live scenario %s has no \"declaration\" in its index entry", s->name);
    if (cf_path_join(dir, sizeof dir, lr->p->targets_dir, LIVE_SUBDIR) ||
        cf_path_join(decl, sizeof decl, dir, s->declaration) || cf_path_join(script, sizeof script, dir, s->file))
        return fail(lr, "declaration path too long");
    int rc = cf_live_decl_load(decl, script, &lr->decl, err, sizeof err);
    if (rc == CF_E_NOMEM)
        return rc;
    return rc ? fail(lr, "declaration: %s", err) : CF_OK;
}

/* "stop", then "done" and a clean exit. */
static int stop_target(live_run *lr)
{
    if (cf_channel_send(lr->child.to_child, "stop") != CF_OK)
        return fail(lr, "cannot send \"stop\": %s", strerror(errno));
    double deadline = cf_now() + scaled(lr, CF_LIVE_STOP_WAIT_S);
    int rc = expect_event(lr, "done", deadline);
    if (rc || lr->error.len)
        return rc;
    lr->done = true;
    char why[CF_ERRMSG_LEN];
    int w = cf_launched_await_exit(&lr->child, deadline + CF_EXIT_GRACE_S, why, sizeof why);
    lr->interrupted |= w == CF_E_INTERRUPTED;
    return w ? fail(lr, "%s", why) : CF_OK;
}

static int run_case(live_run *lr)
{
    const cf_case_params *p = lr->p;
    int rc = load_declaration(lr);
    if (rc || lr->error.len)
        return rc;
    cf_launch_req req = {.interp = p->interp, .targets_dir = p->targets_dir, .subdir = LIVE_SUBDIR,
                         .file = p->scen->file, .log_dir = p->log_dir, .name = p->scen->name,
                         .pgid_path = p->pgid_path};
    cf_launched out = {.child = &lr->child, .out_fd = &lr->out_fd, .err_fd = &lr->err_fd,
                       .out_path = lr->out_path, .err_path = lr->err_path};
    char err[CF_ERRMSG_LEN];
    rc = cf_launch_scenario(&req, &out, err, sizeof err);
    if (rc)
        return rc == CF_E_NOMEM ? rc : fail(lr, "%s", err);
    lr->sample_pid = (int)lr->child.pid;
    rc = expect_event(lr, "hello", lr->deadline);
    if (rc == CF_OK && !lr->error.len)
        rc = expect_event(lr, "ready", lr->deadline);
    if (rc || lr->error.len)
        return rc;
    lr->ready = true;
    for (size_t i = 0; i < lr->ncfg && rc == CF_OK && !lr->error.len; i++)
        if (!lr->cfg[i].na[0])
            rc = run_config(lr, &lr->cfg[i]);
    if (rc || lr->error.len)
        return rc;
    return stop_target(lr);
}

int cf_live_case_run(const cf_case_params *p, const cf_live_budget *b, json_object **result)
{
    live_run lr;
    *result = NULL;
    int rc = init_run(&lr, p, b);
    if (rc == CF_OK) {
        lr.started = cf_now();
        lr.timeout = p->scen->timeout * p->timeout_scale * (p->interp->debug ? CF_DEBUG_TIMEOUT_FACTOR : 1.0);
        lr.deadline = lr.started + lr.timeout;
        rc = run_case(&lr);
        cf_child_kill(&lr.child);
        if (rc == CF_OK)
            rc = build_result(&lr, result);
    }
    free_run(&lr);
    return rc;
}
