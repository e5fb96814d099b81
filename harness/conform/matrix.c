/* matrix.c — renders matrix.md from the report object. */
#include <inttypes.h>
#include <string.h>

#include "matrix.h"
#include "conform.h"
#include "util.h"

#define MAX_LISTED_PROBLEMS 60u  /* failing cases listed under the table */

/* Markdown table cells must not contain '|' or newlines. */
static void cell(cf_strbuf *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            cf_sb_puts(out, "\\|");
        else if (*s == '\n' || *s == '\r')
            cf_sb_puts(out, " ");
        else
            cf_sb_append(out, s, 1);
    }
}

static const char *verdict(const char *status)
{
    if (strcmp(status, "pass") == 0)
        return "pass";
    if (strcmp(status, "fail") == 0)
        return "**FAIL**";
    if (strcmp(status, "skip") == 0)
        return "skip";
    if (strcmp(status, "error") == 0)
        return "**error**";
    return "—";
}

static json_object *find_case(json_object *cases, const char *interp, const char *scen)
{
    for (size_t i = 0; i < json_object_array_length(cases); i++) {
        json_object *c = json_object_array_get_idx(cases, i);
        if (strcmp(cf_json_str(c, "interpreter", ""), interp) == 0 &&
            strcmp(cf_json_str(c, "scenario", ""), scen) == 0)
            return c;
    }
    return NULL;
}

typedef struct tally {
    int64_t pass, fail, skip, error, not_run;
    int64_t agree, disagree, diff_errors;
    bool diff_ran;
} tally;

static void add(tally *t, json_object *c)
{
    const char *s = c ? cf_json_str(c, "status", "not_run") : "not_run";
    if (strcmp(s, "pass") == 0)
        t->pass++;
    else if (strcmp(s, "fail") == 0)
        t->fail++;
    else if (strcmp(s, "skip") == 0)
        t->skip++;
    else if (strcmp(s, "error") == 0)
        t->error++;
    else
        t->not_run++;
    json_object *d = NULL;
    if (c && json_object_object_get_ex(c, "differential", &d) && strcmp(cf_json_str(d, "status", ""), "ran") == 0) {
        t->diff_ran = true;
        t->agree += cf_json_int(d, "agree", 0);
        t->disagree += cf_json_int(d, "disagree", 0);
        t->diff_errors += cf_json_int(d, "errors", 0);
    }
}

static void diff_cell(cf_strbuf *out, const tally *t)
{
    if (!t->diff_ran) {
        cf_sb_puts(out, " — |");
        return;
    }
    cf_sb_printf(out, " %" PRId64 "/%" PRId64, t->agree, t->disagree);
    if (t->diff_errors)
        cf_sb_printf(out, " (%" PRId64 " err)", t->diff_errors);
    cf_sb_puts(out, " |");
}

int cf_matrix_render(json_object *report, cf_strbuf *out)
{
    json_object *cases = cf_json_array(report, "cases");
    json_object *interps = cf_json_array(report, "interpreters");
    json_object *scens = cf_json_array(report, "scenarios");
    json_object *opts = NULL;
    json_object_object_get_ex(report, "options", &opts);
    size_t ni = interps ? json_object_array_length(interps) : 0;
    size_t ns = scens ? json_object_array_length(scens) : 0;
    bool differential = cf_json_bool(opts, "differential", false);
    if (!cases)
        return CF_E_FORMAT;

    cf_sb_puts(out, "# frameproof conform\n\n");
    if (cf_json_bool(report, "interrupted", false))
        cf_sb_puts(out, "**Interrupted: partial results.**\n\n");
    const char *fault = cf_json_str(opts, "inject_fault", NULL);
    if (fault)
        cf_sb_printf(out, "**Self-test: fault `%s` injected into every sample.**\n\n", fault);
    cf_sb_puts(out, "| scenario |");
    for (size_t i = 0; i < ni; i++) {
        cf_sb_puts(out, " ");
        cell(out, cf_json_str(json_object_array_get_idx(interps, i), "id", "?"));
        cf_sb_puts(out, " |");
    }
    if (differential)
        cf_sb_puts(out, " differential agree/disagree |");
    cf_sb_puts(out, "\n|---|");
    for (size_t i = 0; i < ni; i++)
        cf_sb_puts(out, "---|");
    if (differential)
        cf_sb_puts(out, "---|");
    cf_sb_puts(out, "\n");

    tally total = {0};
    for (size_t s = 0; s < ns; s++) {
        const char *scen = json_object_get_string(json_object_array_get_idx(scens, s));
        tally row = {0};
        cf_sb_puts(out, "| ");
        cell(out, scen);
        cf_sb_puts(out, " |");
        for (size_t i = 0; i < ni; i++) {
            const char *id = cf_json_str(json_object_array_get_idx(interps, i), "id", "?");
            json_object *c = find_case(cases, id, scen);
            add(&row, c);
            add(&total, c);
            cf_sb_printf(out, " %s |", verdict(c ? cf_json_str(c, "status", "not_run") : "not_run"));
        }
        if (differential)
            diff_cell(out, &row);
        cf_sb_puts(out, "\n");
    }
    /* Totals per interpreter: pass/FAIL/skip/error. */
    cf_sb_puts(out, "| **pass/FAIL/skip/error** |");
    for (size_t i = 0; i < ni; i++) {
        const char *id = cf_json_str(json_object_array_get_idx(interps, i), "id", "?");
        tally col = {0};
        for (size_t s = 0; s < ns; s++)
            add(&col, find_case(cases, id, json_object_get_string(json_object_array_get_idx(scens, s))));
        cf_sb_printf(out, " %" PRId64 "/%" PRId64 "/%" PRId64 "/%" PRId64 " |", col.pass, col.fail, col.skip,
                     col.error);
    }
    if (differential)
        diff_cell(out, &total);
    cf_sb_puts(out, "\n");
    if (differential) {
        cf_sb_puts(out, "| **differential agree/disagree** |");
        for (size_t i = 0; i < ni; i++) {
            const char *id = cf_json_str(json_object_array_get_idx(interps, i), "id", "?");
            tally col = {0};
            for (size_t s = 0; s < ns; s++)
                add(&col, find_case(cases, id, json_object_get_string(json_object_array_get_idx(scens, s))));
            diff_cell(out, &col);
        }
        diff_cell(out, &total);
        cf_sb_puts(out, "\n");
    }

    int64_t cases_n = total.pass + total.fail + total.skip + total.error + total.not_run;
    cf_sb_printf(out, "\n**Totals:** %" PRId64 " case%s: %" PRId64 " pass, %" PRId64 " FAIL, %" PRId64
                      " skip, %" PRId64 " error",
                 cases_n, cases_n == 1 ? "" : "s", total.pass, total.fail, total.skip, total.error);
    if (total.not_run)
        cf_sb_printf(out, ", %" PRId64 " not run", total.not_run);
    cf_sb_printf(out, " (%.1f s).\n", cf_json_double(report, "seconds", 0));
    if (differential)
        cf_sb_printf(out,
                     "\n**Differential** (CPython's RemoteUnwinder vs the ground truth on function, file and "
                     "line; informational): %" PRId64 " parked threads agree, %" PRId64 " disagree, %" PRId64
                     " runs failed.\n",
                     total.agree, total.disagree, total.diff_errors);

    size_t listed = 0, problems = 0;
    for (size_t i = 0; i < json_object_array_length(cases); i++) {
        json_object *c = json_object_array_get_idx(cases, i);
        const char *st = cf_json_str(c, "status", "");
        if (strcmp(st, "fail") != 0 && strcmp(st, "error") != 0)
            continue;
        problems++;
        if (listed >= MAX_LISTED_PROBLEMS)
            continue;
        if (listed++ == 0)
            cf_sb_puts(out, "\n## Failures and errors\n\n");
        cf_sb_printf(out, "- %s `%s` %s: ", cf_json_str(c, "interpreter", "?"), cf_json_str(c, "scenario", "?"),
                     strcmp(st, "fail") == 0 ? "FAIL" : "error");
        cell(out, cf_json_str(c, "summary", ""));
        cf_sb_puts(out, "\n");
    }
    if (problems > listed)
        cf_sb_printf(out, "- ... and %zu more (see report.json)\n", problems - listed);
    return out->failed ? CF_E_NOMEM : CF_OK;
}
