/* case_common.c — the skeleton shared by the parked and the live case
 * runners (case_common.h): setting up and tearing down a case's target,
 * recording harness errors and notes, the launch, and the report keys both
 * modes write. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "case_common.h"
#include "launch.h"
#include "util.h"

int cf_case_core_init(cf_case_core *c, const cf_case_params *p)
{
    memset(c, 0, sizeof *c);
    c->p = p;
    c->out_fd = c->err_fd = -1;
    c->child.from_child = c->child.to_child = -1;
    cf_linebuf_init(&c->lb);
    cf_sb_init(&c->error);
    c->notes = json_object_new_array();
    c->ncfg = p->adapters->count;
    c->cfg = calloc(c->ncfg ? c->ncfg : 1, sizeof *c->cfg);
    if (!c->notes || !c->cfg)
        return CF_E_NOMEM;
    for (size_t i = 0; i < c->ncfg; i++) {
        cf_case_cfg *cfg = &c->cfg[i];
        cfg->def = &p->adapters->defs[i];
        cf_adapter_label(cfg->def, cfg->label, sizeof cfg->label);
        cf_adapter_na(cfg->def, p->interp, cfg->na, sizeof cfg->na);
        cfg->failures = json_object_new_array();
        if (!cfg->failures)
            return CF_E_NOMEM;
    }
    return CF_OK;
}

void cf_case_core_start(cf_case_core *c)
{
    c->started = cf_now();
    c->timeout = cf_case_scaled(c, c->p->scen->timeout);
    c->deadline = c->started + c->timeout;
}

void cf_case_core_free(cf_case_core *c)
{
    cf_launched l = {.child = &c->child, .out_fd = &c->out_fd, .err_fd = &c->err_fd};
    cf_launched_close(&l, c->p ? c->p->pgid_path : NULL);
    for (size_t i = 0; c->cfg && i < c->ncfg; i++)
        json_object_put(c->cfg[i].failures);
    free(c->cfg);
    json_object_put(c->hello);
    json_object_put(c->notes);
    cf_linebuf_free(&c->lb);
    cf_sb_free(&c->error);
}

int cf_case_fail(cf_case_core *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = cf_sb_vfirst(&c->error, fmt, ap);
    va_end(ap);
    return rc;
}

int cf_case_note(cf_case_core *c, const char *text)
{
    return cf_json_push(c->notes, json_object_new_string(text));
}

double cf_case_scaled(const cf_case_core *c, double seconds)
{
    return seconds * c->p->timeout_scale * (c->p->interp->debug ? CF_DEBUG_TIMEOUT_FACTOR : 1.0);
}

int cf_case_launch(cf_case_core *c, const char *subdir)
{
    const cf_case_params *p = c->p;
    cf_launch_req req = {.interp = p->interp, .targets_dir = p->targets_dir, .subdir = subdir,
                         .file = p->scen->file, .log_dir = p->log_dir, .name = p->scen->name,
                         .pgid_path = p->pgid_path};
    cf_launched out = {.child = &c->child, .out_fd = &c->out_fd, .err_fd = &c->err_fd,
                       .out_path = c->out_path, .err_path = c->err_path};
    char err[CF_ERRMSG_LEN];
    int rc = cf_launch_scenario(&req, &out, err, sizeof err);
    if (rc == CF_E_NOMEM)
        return rc;
    if (rc)
        return cf_case_fail(c, "%s", err);
    c->sample_pid = (int)c->child.pid;
    return CF_OK;
}

int cf_case_hello_pid(cf_case_core *c, int64_t pid)
{
    char text[CF_ERRMSG_LEN];
    c->sample_pid = (int)pid;
    snprintf(text, sizeof text, "\"hello\" pid %" PRId64 " differs from the spawned pid %d; sampling %" PRId64, pid,
             (int)c->child.pid, pid);
    return cf_case_note(c, text);
}

int cf_case_target_error(cf_case_core *c, json_object *msg)
{
    cf_strbuf m;
    cf_sb_init(&m);
    const char *text = cf_json_str(msg, "message", "(no message)");
    cf_sb_append_sanitized(&m, text, strlen(text));
    int rc = cf_case_fail(c, "target reported an error: %s", cf_sb_str(&m));
    cf_sb_free(&m);
    return rc;
}

void cf_case_error_summary(const cf_case_core *c, size_t shown, char *buf, size_t len)
{
    size_t n = strcspn(cf_sb_str(&c->error), "\n");
    snprintf(buf, len, "%.*s", (int)(n < shown ? n : shown), cf_sb_str(&c->error));
}

int cf_case_result_head(json_object *o, const cf_case_core *c, const char *mode, const char *status,
                        const char *summary, json_object *checkpoints)
{
    const cf_case_params *p = c->p;
    bool error = c->error.len > 0;
    json_object *py = NULL;
    if (c->hello)
        json_object_object_get_ex(c->hello, "python", &py);
    if (cf_json_add(o, "interpreter", json_object_new_string(p->interp->id)) ||
        cf_json_add(o, "scenario", json_object_new_string(p->scen->name)) ||
        (mode && cf_json_add(o, "mode", json_object_new_string(mode))) ||
        cf_json_add(o, "status", json_object_new_string(status)) ||
        cf_json_add(o, "summary", json_object_new_string(summary)) ||
        cf_json_add(o, "seconds", cf_json_seconds(cf_now() - c->started)) ||
        (checkpoints && cf_json_add(o, "timeout", cf_json_seconds(c->timeout))) ||
        cf_json_add(o, "pid", json_object_new_int64(c->child.pid)) ||
        cf_json_add(o, "sampled_pid", json_object_new_int64(c->sample_pid)) ||
        json_object_object_add(o, "python", json_object_get(py)) != 0 ||
        (checkpoints && cf_json_add(o, "checkpoints", json_object_get(checkpoints))) ||
        cf_json_add(o, "notes", json_object_get(c->notes)) ||
        (error && cf_json_add(o, "error", json_object_new_string(cf_sb_str(&c->error)))) ||
        (error && cf_json_add(o, "interrupted", json_object_new_boolean(c->interrupted))))
        return CF_E_NOMEM;
    return CF_OK;
}

int cf_case_cfg_head(json_object *o, const cf_case_cfg *cfg, const char *status)
{
    if (cf_json_add(o, "unwinder", json_object_new_string(cfg->def->unwinder)) ||
        cf_json_add(o, "configuration", json_object_new_string(cfg->def->config ? cfg->def->config : "")) ||
        cf_json_add(o, "name", json_object_new_string(cfg->label)) ||
        cf_json_add(o, "status", json_object_new_string(status)))
        return CF_E_NOMEM;
    return CF_OK;
}

int cf_case_cfg_about(json_object *o, const cf_case_cfg *cfg)
{
    if ((cfg->na[0] && cf_json_add(o, "reason", json_object_new_string(cfg->na))) ||
        (cfg->info[0] && cf_json_add(o, "info", json_object_new_string(cfg->info))))
        return CF_E_NOMEM;
    return CF_OK;
}

/* The verdict of one unwinder over its configurations. */
static const char *unwinder_verdict(const cf_case_core *c, const char *unwinder, bool error)
{
    bool any = false, failed = false;
    for (size_t i = 0; i < c->ncfg; i++) {
        const cf_case_cfg *cfg = &c->cfg[i];
        if (strcmp(cfg->def->unwinder, unwinder) != 0 || cfg->na[0])
            continue;
        any = true;
        failed |= cfg->failed;
    }
    if (error)
        return "error";
    return !any ? "n/a" : failed ? "fail" : "pass";
}

json_object *cf_case_verdicts_json(const cf_case_core *c, bool error)
{
    json_object *o = json_object_new_object();
    for (size_t i = 0; o && i < c->ncfg; i++) {
        const char *u = c->cfg[i].def->unwinder;
        if (json_object_object_get_ex(o, u, NULL))
            continue;
        if (cf_json_add(o, u, json_object_new_string(unwinder_verdict(c, u, error)))) {
            json_object_put(o);
            return NULL;
        }
    }
    return o;
}
