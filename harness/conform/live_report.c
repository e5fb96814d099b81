/* live_report.c — live.json, junit.xml and live.md of a live run (see
 * live_report.h). */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "conform.h"
#include "junit.h"
#include "live_report.h"
#include "matrix.h"
#include "util.h"

static void stack_line(cf_strbuf *out, json_object *thread)
{
    json_object *frames = cf_json_array(thread, "frames");
    size_t n = frames ? json_object_array_length(frames) : 0;
    cf_sb_puts(out, "  - stack (outermost first):");
    for (size_t i = n; i-- > 0;) {
        json_object *f = json_object_array_get_idx(frames, i);
        const char *file = cf_json_str(f, "file", "?");
        const char *slash = strrchr(file, '/');
        cf_sb_printf(out, "%s`%s` (%s:%" PRId64 ")", i + 1 == n ? " " : " > ", cf_json_str(f, "function", "?"),
                     slash ? slash + 1 : file, cf_json_int(f, "line", 0));
    }
    if (n == 0)
        cf_sb_puts(out, " (no frames)");
    cf_sb_puts(out, "\n");
}

static void table(cf_strbuf *out, json_object *cases)
{
    cf_sb_puts(out, "| scenario | interpreter | configuration | samples | valid | rejected | wrong | rejected % | "
                    "samples/s | status |\n|---|---|---|---:|---:|---:|---:|---:|---:|---|\n");
    for (size_t i = 0; i < json_object_array_length(cases); i++) {
        json_object *c = json_object_array_get_idx(cases, i);
        const char *st = cf_json_str(c, "status", "?");
        json_object *cfgs = cf_json_array(c, "unwinders");
        size_t n = cfgs ? json_object_array_length(cfgs) : 0;
        if (n == 0 || strcmp(st, "error") == 0 || strcmp(st, "skip") == 0) {
            cf_sb_printf(out, "| %s | %s | | | | | | | | ", cf_json_str(c, "scenario", "?"),
                         cf_json_str(c, "interpreter", "?"));
            cf_md_cell(out, st);
            cf_sb_puts(out, ": ");
            cf_md_cell(out, cf_json_str(c, "summary", ""));
            cf_sb_puts(out, " |\n");
            continue;
        }
        for (size_t k = 0; k < n; k++) {
            json_object *g = json_object_array_get_idx(cfgs, k);
            const char *gs = cf_json_str(g, "status", "?");
            cf_sb_printf(out, "| %s | %s | %s | ", cf_json_str(c, "scenario", "?"), cf_json_str(c, "interpreter", "?"),
                         cf_json_str(g, "name", "?"));
            if (strcmp(gs, "n/a") == 0 || strcmp(gs, "not_run") == 0) {
                cf_sb_puts(out, "| | | | | | ");
                cf_md_cell(out, gs);
                cf_sb_puts(out, " |\n");
                continue;
            }
            cf_sb_printf(out, "%" PRId64 " | %" PRId64 " | %" PRId64 " | %" PRId64 " | %.2f | %.0f | %s%s |\n",
                         cf_json_int(g, "samples", 0), cf_json_int(g, "valid", 0), cf_json_int(g, "rejected", 0),
                         cf_json_int(g, "wrong", 0), cf_json_double(g, "rejected_pct", 0),
                         cf_json_double(g, "samples_per_second", 0), strcmp(gs, "fail") == 0 ? "FAIL" : gs,
                         cf_json_str(g, "attach_error", NULL) ? " (attach failed)" : "");
        }
    }
}

static void examples(cf_strbuf *out, json_object *cases)
{
    bool any = false;
    for (size_t i = 0; i < json_object_array_length(cases); i++) {
        json_object *c = json_object_array_get_idx(cases, i);
        json_object *cfgs = cf_json_array(c, "unwinders");
        for (size_t k = 0; cfgs && k < json_object_array_length(cfgs); k++) {
            json_object *g = json_object_array_get_idx(cfgs, k);
            json_object *fails = cf_json_array(g, "failures");
            if (!fails || json_object_array_length(fails) == 0)
                continue;
            if (!any)
                cf_sb_printf(out, "\n## Wrong samples (at most %u examples per rule)\n", CF_LIVE_EXAMPLES_PER_RULE);
            any = true;
            cf_sb_printf(out, "\n### %s, %s, %s: %" PRId64 " wrong of %" PRId64 "\n\n", cf_json_str(c, "scenario", "?"),
                         cf_json_str(c, "interpreter", "?"), cf_json_str(g, "name", "?"), cf_json_int(g, "wrong", 0),
                         cf_json_int(g, "samples", 0));
            for (size_t f = 0; f < json_object_array_length(fails); f++) {
                json_object *x = json_object_array_get_idx(fails, f);
                const char *error = cf_json_str(x, "error", NULL);
                json_object *mm = cf_json_array(x, "mismatches");
                cf_sb_puts(out, "- ");
                cf_sb_puts(out, error ? error : cf_json_str(json_object_array_get_idx(mm, 0), "message", ""));
                if (!error)
                    cf_sb_printf(out, " (sample %" PRId64 ")", cf_json_int(x, "sample", -1));
                cf_sb_puts(out, "\n");
                json_object *t = NULL;
                if (json_object_object_get_ex(x, "thread", &t) && t)
                    stack_line(out, t);
            }
        }
    }
}

int cf_live_md_render(json_object *report, cf_strbuf *out)
{
    json_object *cases = cf_json_array(report, "cases"), *opts = NULL, *tot = NULL;
    json_object_object_get_ex(report, "options", &opts);
    json_object_object_get_ex(report, "totals", &tot);
    const char *fault = cf_json_str(opts, "inject_fault", NULL);
    cf_sb_puts(out, "# Live conformance\n\n");
    cf_sb_printf(out, "Budget per scenario x interpreter x configuration: %" PRId64 " samples or %.1f s.%s%s\n",
                 cf_json_int(opts, "samples", 0), cf_json_double(opts, "duration", 0),
                 fault ? " Injected fault: " : "", fault ? fault : "");
    cf_sb_printf(out, "Cases: %" PRId64 " (pass %" PRId64 ", FAIL %" PRId64 ", error %" PRId64 ", skip %" PRId64
                      ", not run %" PRId64 ").\n\n",
                 cf_json_int(tot, "cases", 0), cf_json_int(tot, "pass", 0), cf_json_int(tot, "fail", 0),
                 cf_json_int(tot, "error", 0), cf_json_int(tot, "skip", 0), cf_json_int(tot, "not_run", 0));
    if (cases) {
        table(out, cases);
        examples(out, cases);
    }
    return out->failed ? CF_E_NOMEM : CF_OK;
}

int cf_live_write_reports(const char *report_dir, json_object *report)
{
    char path[PATH_MAX], err[CF_ERRMSG_LEN] = "";
    int rc = CF_OK;
    cf_strbuf junit, md;
    cf_sb_init(&junit);
    cf_sb_init(&md);
    if (cf_path_join(path, sizeof path, report_dir, "live.json") ||
        cf_json_write_file(path, report, true, true, err, sizeof err)) {
        fprintf(stderr, "frameproof conform: cannot write live.json: %s\n", err);
        rc = CF_E_IO;
    }
    if (cf_junit_render(report, &junit) != CF_OK || cf_path_join(path, sizeof path, report_dir, "junit.xml") ||
        cf_write_text_file(path, cf_sb_str(&junit), junit.len, err, sizeof err)) {
        fprintf(stderr, "frameproof conform: cannot write junit.xml: %s\n", err);
        rc = CF_E_IO;
    }
    if (cf_live_md_render(report, &md) != CF_OK || cf_path_join(path, sizeof path, report_dir, "live.md") ||
        cf_write_text_file(path, cf_sb_str(&md), md.len, err, sizeof err)) {
        fprintf(stderr, "frameproof conform: cannot write live.md: %s\n", err);
        rc = CF_E_IO;
    }
    fputs(cf_sb_str(&md), stdout);
    printf("\nReports: %s/live.json, %s/junit.xml, %s/live.md (target logs in %s/logs/)\n", report_dir, report_dir,
           report_dir, report_dir);
    fflush(stdout);
    cf_sb_free(&junit);
    cf_sb_free(&md);
    return rc;
}
