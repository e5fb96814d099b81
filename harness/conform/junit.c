/* junit.c — renders junit.xml: a testsuite per interpreter, a
 * testcase per scenario and configuration; mismatches are <failure>,
 * harness errors <error>, inapplicable scenarios <skipped>. */
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

static void testcase(cf_strbuf *out, json_object *c, const char *cfg_name, json_object *cfg, double seconds)
{
    const char *status = cf_json_str(c, "status", "?");
    const char *interp = cf_json_str(c, "interpreter", "?");
    cf_strbuf name, cls, text;
    cf_sb_init(&name);
    cf_sb_init(&cls);
    cf_sb_init(&text);
    cf_sb_printf(&name, "%s [%s]", cf_json_str(c, "scenario", "?"), cfg_name);
    cf_sb_printf(&cls, "conform.%s", interp);
    cf_sb_puts(out, "    <testcase");
    attr(out, "classname", cf_sb_str(&cls));
    attr(out, "name", cf_sb_str(&name));
    cf_sb_printf(out, " time=\"%.3f\"", seconds);
    const char *cfg_status = cf_json_str(cfg, "status", "");
    if (strcmp(status, "skip") == 0) {
        cf_sb_puts(out, ">\n      <skipped");
        attr(out, "message", cf_json_str(c, "skip_reason", ""));
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
    } else if (strcmp(cfg_status, "fail") == 0) {
        failure_text(cfg, &text);
        char msg[128];
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

static void count_case(json_object *c, counts *k)
{
    const char *status = cf_json_str(c, "status", "");
    if (strcmp(status, "not_run") == 0)
        return;
    json_object *cfgs = cf_json_array(c, "configurations");
    k->tests += CF_NUM_CONFIGS;
    k->seconds += cf_json_double(c, "seconds", 0);
    if (strcmp(status, "skip") == 0)
        k->skipped += CF_NUM_CONFIGS;
    else if (strcmp(status, "error") == 0)
        k->errors += CF_NUM_CONFIGS;
    else
        for (size_t i = 0; cfgs && i < json_object_array_length(cfgs); i++)
            if (strcmp(cf_json_str(json_object_array_get_idx(cfgs, i), "status", ""), "fail") == 0)
                k->failures++;
}

static void counts_attrs(cf_strbuf *out, const counts *k)
{
    cf_sb_printf(out, " tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\" time=\"%.3f\"", k->tests,
                 k->failures, k->errors, k->skipped, k->seconds);
}

int cf_junit_render(json_object *report, cf_strbuf *out)
{
    json_object *cases = cf_json_array(report, "cases");
    json_object *interps = cf_json_array(report, "interpreters");
    size_t nc = cases ? json_object_array_length(cases) : 0;
    size_t ni = interps ? json_object_array_length(interps) : 0;
    counts all = {0};
    for (size_t i = 0; i < nc; i++)
        count_case(json_object_array_get_idx(cases, i), &all);
    cf_sb_puts(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"frameproof conform\"");
    counts_attrs(out, &all);
    cf_sb_puts(out, ">\n");
    for (size_t s = 0; s < ni; s++) {
        const char *id = cf_json_str(json_object_array_get_idx(interps, s), "id", "?");
        counts k = {0};
        for (size_t i = 0; i < nc; i++) {
            json_object *c = json_object_array_get_idx(cases, i);
            if (strcmp(cf_json_str(c, "interpreter", ""), id) == 0)
                count_case(c, &k);
        }
        cf_strbuf sname;
        cf_sb_init(&sname);
        cf_sb_printf(&sname, "conform.%s", id);
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
            json_object *cfgs = cf_json_array(c, "configurations");
            double secs = cf_json_double(c, "seconds", 0) / CF_NUM_CONFIGS;
            for (int g = 0; g < CF_NUM_CONFIGS; g++) {
                json_object *cfg = cfgs && (size_t)g < json_object_array_length(cfgs)
                                       ? json_object_array_get_idx(cfgs, (size_t)g)
                                       : NULL;
                testcase(out, c, cfg ? cf_json_str(cfg, "name", cf_config_name(g)) : cf_config_name(g), cfg, secs);
            }
        }
        cf_sb_puts(out, "  </testsuite>\n");
    }
    cf_sb_puts(out, "</testsuites>\n");
    return out->failed ? CF_E_NOMEM : CF_OK;
}
