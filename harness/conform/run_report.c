/* run_report.c — the report of a whole conformance run (see
 * run_state.h): every case's result with the run's options, interpreters
 * and unwinders, and its totals, written as report.json, junit.xml and
 * matrix.md (a live run's reports are live_report.c's). */
#include <stdio.h>
#include <string.h>

#include "adapter.h"
#include "case.h"
#include "conform.h"
#include "junit.h"
#include "matrix.h"
#include "run_state.h"
#include "strbuf.h"
#include "util.h"
#include "frameproof/frameproof.h"

static json_object *options_json(const conform_run *r)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    const char *fault = cf_fault_name(r->o.fault);
    if (cf_json_add(o, "manifest", json_object_new_string(r->manifest_path)) ||
        cf_json_add(o, "targets", json_object_new_string(r->targets)) ||
        cf_json_add(o, "jobs", json_object_new_int64(r->o.jobs)) ||
        cf_json_add(o, "timeout_scale", cf_json_seconds(r->o.timeout_scale)) ||
        cf_json_add(o, "fast", json_object_new_boolean(r->o.fast)) ||
        cf_json_add(o, "live", json_object_new_boolean(r->o.live)) ||
        (r->o.live && cf_json_add(o, "samples", json_object_new_int64((int64_t)r->o.live_samples))) ||
        (r->o.live && cf_json_add(o, "duration", cf_json_seconds(r->o.live_seconds))) ||
        (r->o.adapter.command && cf_json_add(o, "unwinder_cmd", json_object_new_string(r->o.adapter.command))) ||
        cf_json_add(o, "allow_untested_version", json_object_new_boolean(r->o.adapter.allow_untested)) ||
        json_object_object_add(o, "inject_fault", fault ? json_object_new_string(fault) : NULL) != 0) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

/* The selected configurations: unwinder, configuration, name, fields. */
static json_object *unwinders_json(const conform_run *r)
{
    json_object *a = json_object_new_array();
    for (size_t i = 0; a && i < r->o.adapters->count; i++) {
        const cf_adapter_def *d = &r->o.adapters->defs[i];
        char label[CF_NAME_SHOWN];
        cf_adapter_label(d, label, sizeof label);
        json_object *o = json_object_new_object(), *fields = json_object_new_array();
        for (unsigned b = 0; fields && b < CF_FIELD_COUNT; b++)
            if ((d->fields & (1u << b)) && cf_json_push(fields, json_object_new_string(cf_field_name(1u << b))))
                fields = NULL;
        if (!o || cf_json_add(o, "unwinder", json_object_new_string(d->unwinder)) ||
            cf_json_add(o, "configuration", json_object_new_string(d->config ? d->config : "")) ||
            cf_json_add(o, "name", json_object_new_string(label)) || cf_json_add(o, "fields", fields) ||
            cf_json_push(a, o)) {
            json_object_put(o);
            json_object_put(a);
            return NULL;
        }
    }
    return a;
}

static json_object *unwinder_names_json(const conform_run *r)
{
    json_object *a = json_object_new_array();
    for (size_t i = 0; a && i < r->nunwinder_names; i++) {
        if (cf_json_push(a, json_object_new_string(r->unwinder_names[i]))) {
            json_object_put(a);
            return NULL;
        }
    }
    return a;
}

static json_object *interpreters_json(const conform_run *r)
{
    json_object *a = json_object_new_array();
    for (size_t i = 0; a && i < r->ninterps; i++) {
        const cf_interp *in = &r->manifest.items[r->interps[i]];
        json_object *o = json_object_new_object();
        if (!o || cf_json_add(o, "id", json_object_new_string(in->id)) ||
            cf_json_add(o, "version", json_object_new_string(in->version)) ||
            cf_json_add(o, "free_threaded", json_object_new_boolean(in->free_threaded)) ||
            cf_json_add(o, "debug", json_object_new_boolean(in->debug)) ||
            cf_json_add(o, "jit", json_object_new_boolean(in->jit)) ||
            cf_json_add(o, "root", json_object_new_string(in->root)) ||
            cf_json_add(o, "untested", json_object_new_boolean(cf_interp_untested(in))) || cf_json_push(a, o)) {
            json_object_put(o);
            json_object_put(a);
            return NULL;
        }
    }
    return a;
}

int cf_run_build_report(conform_run *r, bool interrupted, json_object **out, cf_run_totals *t)
{
    json_object *root = json_object_new_object(), *cases = json_object_new_array(), *scens = json_object_new_array();
    json_object *tot = json_object_new_object();
    int rc = CF_E_NOMEM;
    memset(t, 0, sizeof *t);
    if (!root || !cases || !scens || !tot)
        goto fail;
    for (size_t s = 0; s < r->nscens; s++)
        if (cf_json_push(scens, json_object_new_string(r->index.items[r->scens[s]].name)))
            goto fail;
    for (size_t k = 0; k < r->ncases; k++) {
        case_slot *c = &r->cases[k];
        if (!c->result) {
            c->result = cf_case_stub(&r->manifest.items[c->interp], &r->index.items[c->scen], "not_run",
                                     "not started: interrupted");
            if (!c->result)
                goto fail;
        }
        const char *st = cf_json_str(c->result, "status", "");
        if (strcmp(st, "pass") == 0)
            t->pass++;
        else if (strcmp(st, "fail") == 0)
            t->fail++;
        else if (strcmp(st, "skip") == 0)
            t->skip++;
        else if (strcmp(st, "error") == 0)
            t->error++;
        else
            t->not_run++;
        if (cf_json_push(cases, json_object_get(c->result)))
            goto fail;
    }
    if (cf_json_add(tot, "cases", json_object_new_int64((int64_t)r->ncases)) ||
        cf_json_add(tot, "pass", json_object_new_int64(t->pass)) ||
        cf_json_add(tot, "fail", json_object_new_int64(t->fail)) ||
        cf_json_add(tot, "skip", json_object_new_int64(t->skip)) ||
        cf_json_add(tot, "error", json_object_new_int64(t->error)) ||
        cf_json_add(tot, "not_run", json_object_new_int64(t->not_run)))
        goto fail;
    if (cf_json_add(root, "frameproof_version", json_object_new_string(FP_VERSION_STRING)) ||
        cf_json_add(root, "interrupted", json_object_new_boolean(interrupted)) ||
        cf_json_add(root, "seconds", cf_json_seconds(cf_now() - r->started)) ||
        cf_json_add(root, "options", options_json(r)) ||
        cf_json_add(root, "interpreters", interpreters_json(r)) ||
        cf_json_add(root, "unwinder_names", unwinder_names_json(r)) ||
        cf_json_add(root, "unwinders", unwinders_json(r)))
        goto fail;
    rc = cf_json_add(root, "scenarios", scens);
    scens = NULL;
    if (rc == CF_OK)
        rc = cf_json_add(root, "totals", tot);
    tot = NULL;
    if (rc == CF_OK)
        rc = cf_json_add(root, "cases", cases);
    cases = NULL;
    if (rc)
        goto fail;
    *out = root;
    return CF_OK;
fail:
    json_object_put(root);
    json_object_put(cases);
    json_object_put(scens);
    json_object_put(tot);
    return CF_E_NOMEM;
}

int cf_run_write_reports(conform_run *r, json_object *report)
{
    char path[PATH_MAX], err[CF_ERRMSG_LEN];
    int rc = CF_OK;
    cf_strbuf junit, md;
    cf_sb_init(&junit);
    cf_sb_init(&md);
    if (cf_path_join(path, sizeof path, r->report, "report.json") ||
        cf_json_write_file(path, report, true, true, err, sizeof err)) {
        fprintf(stderr, "frameproof conform: %s\n", err);
        rc = CF_E_IO;
    }
    if (cf_junit_render(report, &junit) != CF_OK || cf_path_join(path, sizeof path, r->report, "junit.xml") ||
        cf_write_text_file(path, cf_sb_str(&junit), junit.len, err, sizeof err)) {
        fprintf(stderr, "frameproof conform: cannot write junit.xml: %s\n", err);
        rc = CF_E_IO;
    }
    if (cf_matrix_render(report, &md) != CF_OK || cf_path_join(path, sizeof path, r->report, "matrix.md") ||
        cf_write_text_file(path, cf_sb_str(&md), md.len, err, sizeof err)) {
        fprintf(stderr, "frameproof conform: cannot write matrix.md: %s\n", err);
        rc = CF_E_IO;
    }
    fputs(cf_sb_str(&md), stdout);
    printf("\nReports: %s/report.json, %s/junit.xml, %s/matrix.md (target logs in %s/logs/)\n", r->report,
           r->report, r->report, r->report);
    fflush(stdout);
    cf_sb_free(&junit);
    cf_sb_free(&md);
    return rc;
}
