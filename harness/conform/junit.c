/* junit.c — renders junit.xml: a testsuite per unwinder x interpreter,
 * a testcase per scenario and configuration; mismatches are <failure>,
 * harness errors <error>, inapplicable scenarios and configurations
 * <skipped>. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "case.h"
#include "junit.h"
#include "conform.h"
#include "util.h"

int cf_xml_escape(cf_strbuf *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t n = strlen((const char *)p);
    size_t i = 0;
    while (i < n) {
        unsigned char c = p[i];
        switch (c) {
        case '&': cf_sb_puts(out, "&amp;"); i++; continue;
        case '<': cf_sb_puts(out, "&lt;"); i++; continue;
        case '>': cf_sb_puts(out, "&gt;"); i++; continue;
        case '"': cf_sb_puts(out, "&quot;"); i++; continue;
        case '\'': cf_sb_puts(out, "&apos;"); i++; continue;
        default: break;
        }
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
            cf_sb_puts(out, "?");
            i++;
            continue;
        }
        size_t k = cf_utf8_seq_len(p + i, n - i, false);
        if (k == 0) {
            cf_sb_puts(out, "\xEF\xBF\xBD");
            i++;
            continue;
        }
        /* U+FFFE and U+FFFF are not XML characters either. */
        if (k == 3 && p[i] == 0xEF && p[i + 1] == 0xBF && (p[i + 2] == 0xBE || p[i + 2] == 0xBF)) {
            cf_sb_puts(out, "?");
        } else {
            cf_sb_append(out, (const char *)p + i, k);
        }
        i += k;
    }
    return out->failed ? CF_E_NOMEM : CF_OK;
}

static void attr(cf_strbuf *out, const char *name, const char *value)
{
    cf_sb_printf(out, " %s=\"", name);
    cf_xml_escape(out, value);
    cf_sb_puts(out, "\"");
}

/* Plain-text description of a configuration's failures. */
static void failure_text(json_object *cfg, cf_strbuf *t)
{
    json_object *fails = cf_json_array(cfg, "failures");
    size_t n = fails ? json_object_array_length(fails) : 0;
    for (size_t i = 0; i < n && t->len < CF_JUNIT_MAX_TEXT; i++) {
        json_object *f = json_object_array_get_idx(fails, i);
        const char *cp = cf_json_str(f, "checkpoint", "?");
        int64_t sample = cf_json_int(f, "sample", -1);
        const char *error = cf_json_str(f, "error", NULL);
        cf_sb_printf(t, "checkpoint \"%s\"", cp);
        if (sample >= 0)
            cf_sb_printf(t, ", sample %" PRId64, sample);
        if (error) {
            cf_sb_printf(t, ": %s\n", error);
            continue;
        }
        int64_t count = cf_json_int(f, "mismatch_count", 0);
        int64_t same = cf_json_int(f, "same_as_sample", -1);
        if (same >= 0) {
            cf_sb_printf(t, ": the same %" PRId64 " mismatch%s as sample %" PRId64 "\n", count,
                         count == 1 ? "" : "es", same);
            continue;
        }
        cf_sb_printf(t, ": %" PRId64 " mismatch%s\n", count, count == 1 ? "" : "es");
        json_object *mm = cf_json_array(f, "mismatches");
        for (size_t k = 0; mm && k < json_object_array_length(mm); k++)
            cf_sb_printf(t, "  %s\n", cf_json_str(json_object_array_get_idx(mm, k), "message", ""));
    }
    if (t->len >= CF_JUNIT_MAX_TEXT)
        cf_sb_puts(t, "... (truncated; see report.json)\n");
}

/* The case's entry for configuration `name`, or NULL (stubs have none). */
static json_object *case_config(json_object *c, const char *name)
{
    json_object *cfgs = cf_json_array(c, "unwinders");
    for (size_t i = 0; cfgs && i < json_object_array_length(cfgs); i++) {
        json_object *g = json_object_array_get_idx(cfgs, i);
        if (strcmp(cf_json_str(g, "name", ""), name) == 0)
            return g;
    }
    return NULL;
}

/* What one testcase reports: pass, fail, skip (with reason) or error. */
static const char *testcase_status(json_object *c, json_object *cfg, const char **reason)
{
    const char *status = cf_json_str(c, "status", "?");
    *reason = NULL;
    if (strcmp(status, "skip") == 0) {
        *reason = cf_json_str(c, "skip_reason", "");
        return "skip";
    }
    if (strcmp(status, "error") == 0)
        return "error";
    const char *cs = cf_json_str(cfg, "status", "");
    if (strcmp(cs, "n/a") == 0) {
        *reason = cf_json_str(cfg, "reason", "");
        return "skip";
    }
    return strcmp(cs, "fail") == 0 ? "fail" : "pass";
}

static void testcase(cf_strbuf *out, json_object *c, const char *unwinder, const char *cfg_name, double seconds)
{
    json_object *cfg = case_config(c, cfg_name);
    const char *reason;
    const char *status = testcase_status(c, cfg, &reason);
    const char *interp = cf_json_str(c, "interpreter", "?");
    cf_strbuf name, cls, text;
    cf_sb_init(&name);
    cf_sb_init(&cls);
    cf_sb_init(&text);
    cf_sb_printf(&name, "%s [%s]", cf_json_str(c, "scenario", "?"), cfg_name);
    cf_sb_printf(&cls, "conform.%s.%s", unwinder, interp);
    cf_sb_puts(out, "    <testcase");
    attr(out, "classname", cf_sb_str(&cls));
    attr(out, "name", cf_sb_str(&name));
    cf_sb_printf(out, " time=\"%.3f\"", seconds);
    if (strcmp(status, "skip") == 0) {
        cf_sb_puts(out, ">\n      <skipped");
        attr(out, "message", reason ? reason : "");
        cf_sb_puts(out, "/>\n    </testcase>\n");
    } else if (strcmp(status, "error") == 0) {
        const char *error = cf_json_str(c, "error", "harness error");
        size_t first = strcspn(error, "\n");
        cf_strbuf msg;
        cf_sb_init(&msg);
        cf_sb_append(&msg, error, first);
        cf_sb_printf(&text, "harness error: %s\n", error);
        if (cfg)
            failure_text(cfg, &text);
        cf_sb_puts(out, ">\n      <error type=\"harness\"");
        attr(out, "message", cf_sb_str(&msg));
        cf_sb_puts(out, ">");
        cf_xml_escape(out, cf_sb_str(&text));
        cf_sb_puts(out, "</error>\n    </testcase>\n");
        cf_sb_free(&msg);
    } else if (strcmp(status, "fail") == 0) {
        failure_text(cfg, &text);
        char msg[CF_ERRMSG_LEN];
        json_object *first = json_object_array_get_idx(cf_json_array(cfg, "failures"), 0);
        if (cf_json_int(cfg, "samples", 0) == 0 && cf_json_str(first, "error", NULL))
            snprintf(msg, sizeof msg, "%s", cf_json_str(first, "error", ""));
        else
            snprintf(msg, sizeof msg, "%" PRId64 " mismatch(es) in %" PRId64 "/%" PRId64 " samples",
                     cf_json_int(cfg, "mismatches", 0), cf_json_int(cfg, "failed_samples", 0),
                     cf_json_int(cfg, "samples", 0));
        cf_sb_puts(out, ">\n      <failure type=\"mismatch\"");
        attr(out, "message", msg);
        cf_sb_puts(out, ">");
        cf_xml_escape(out, cf_sb_str(&text));
        cf_sb_puts(out, "</failure>\n    </testcase>\n");
    } else {
        cf_sb_puts(out, "/>\n");
    }
    cf_sb_free(&name);
    cf_sb_free(&cls);
    cf_sb_free(&text);
}

typedef struct counts {
    size_t tests, failures, errors, skipped;
    double seconds;
} counts;

/* Counts the testcases of one case for the configurations of `unwinder`
 * (all configurations when NULL) in the report's list. */
static void count_case(json_object *c, json_object *configs, const char *unwinder, counts *k)
{
    if (strcmp(cf_json_str(c, "status", ""), "not_run") == 0)
        return;
    k->seconds += cf_json_double(c, "seconds", 0);
    for (size_t i = 0; configs && i < json_object_array_length(configs); i++) {
        json_object *g = json_object_array_get_idx(configs, i);
        if (unwinder && strcmp(cf_json_str(g, "unwinder", ""), unwinder) != 0)
            continue;
        const char *reason;
        const char *st = testcase_status(c, case_config(c, cf_json_str(g, "name", "")), &reason);
        k->tests++;
        k->skipped += strcmp(st, "skip") == 0;
        k->errors += strcmp(st, "error") == 0;
        k->failures += strcmp(st, "fail") == 0;
    }
}

static void counts_attrs(cf_strbuf *out, const counts *k)
{
    cf_sb_printf(out, " tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\" time=\"%.3f\"", k->tests,
                 k->failures, k->errors, k->skipped, k->seconds);
}

static void suite(cf_strbuf *out, json_object *cases, json_object *configs, const char *unwinder, const char *id)
{
    size_t nc = json_object_array_length(cases);
    counts k = {0};
    size_t ncfg = 0;
    for (size_t g = 0; g < json_object_array_length(configs); g++)
        ncfg += strcmp(cf_json_str(json_object_array_get_idx(configs, g), "unwinder", ""), unwinder) == 0;
    for (size_t i = 0; i < nc; i++) {
        json_object *c = json_object_array_get_idx(cases, i);
        if (strcmp(cf_json_str(c, "interpreter", ""), id) == 0)
            count_case(c, configs, unwinder, &k);
    }
    cf_strbuf sname;
    cf_sb_init(&sname);
    cf_sb_printf(&sname, "conform.%s.%s", unwinder, id);
    cf_sb_puts(out, "  <testsuite");
    attr(out, "name", cf_sb_str(&sname));
    cf_sb_free(&sname);
    counts_attrs(out, &k);
    cf_sb_puts(out, ">\n");
    for (size_t i = 0; i < nc; i++) {
        json_object *c = json_object_array_get_idx(cases, i);
        if (strcmp(cf_json_str(c, "interpreter", ""), id) != 0 ||
            strcmp(cf_json_str(c, "status", ""), "not_run") == 0)
            continue;
        double secs = cf_json_double(c, "seconds", 0) / (double)(ncfg ? ncfg : 1);
        for (size_t g = 0; g < json_object_array_length(configs); g++) {
            json_object *cfg = json_object_array_get_idx(configs, g);
            if (strcmp(cf_json_str(cfg, "unwinder", ""), unwinder) == 0)
                testcase(out, c, unwinder, cf_json_str(cfg, "name", "?"), secs);
        }
    }
    cf_sb_puts(out, "  </testsuite>\n");
}

int cf_junit_render(json_object *report, cf_strbuf *out)
{
    json_object *cases = cf_json_array(report, "cases");
    json_object *interps = cf_json_array(report, "interpreters");
    json_object *configs = cf_json_array(report, "unwinders");
    json_object *names = cf_json_array(report, "unwinder_names");
    if (!cases || !interps || !configs || !names)
        return CF_E_FORMAT;
    size_t nc = json_object_array_length(cases);
    counts all = {0};
    for (size_t i = 0; i < nc; i++)
        count_case(json_object_array_get_idx(cases, i), configs, NULL, &all);
    cf_sb_puts(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"frameproof conform\"");
    counts_attrs(out, &all);
    cf_sb_puts(out, ">\n");
    for (size_t u = 0; u < json_object_array_length(names); u++)
        for (size_t s = 0; s < json_object_array_length(interps); s++)
            suite(out, cases, configs, json_object_get_string(json_object_array_get_idx(names, u)),
                  cf_json_str(json_object_array_get_idx(interps, s), "id", "?"));
    cf_sb_puts(out, "</testsuites>\n");
    return out->failed ? CF_E_NOMEM : CF_OK;
}
