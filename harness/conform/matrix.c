/* matrix.c — renders matrix.md from the report object: the state of the
 * field (unwinder x interpreter pass/FAIL counts), one scenario x
 * interpreter table per unwinder, each unwinder's most frequent failure
 * classes, and the failing cases. */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"
#include "matrix.h"
#include "util.h"

#define MAX_LISTED_PROBLEMS 60u  /* failing cases listed per unwinder */
#define TOP_CLASSES 6u           /* failure classes listed per unwinder */
#define CLASS_LEN 96u            /* longest failure class name */

void cf_md_cell(cf_strbuf *out, const char *s)
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
    if (strcmp(status, "n/a") == 0)
        return "n/a";
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

/* The verdict of one unwinder in a case: the case's own status when it did
 * not run (skip, error, not_run), else its entry in "verdicts". */
static const char *case_verdict(json_object *c, const char *unwinder)
{
    if (!c)
        return "not_run";
    const char *st = cf_json_str(c, "status", "not_run");
    json_object *v = NULL;
    json_object_object_get_ex(c, "verdicts", &v);
    if (strcmp(st, "pass") != 0 && strcmp(st, "fail") != 0)
        return cf_json_str(v, unwinder, st);
    return cf_json_str(v, unwinder, "n/a");
}

typedef struct tally {
    int64_t pass, fail, skip, na, error, not_run;
} tally;

static void add(tally *t, const char *s)
{
    if (strcmp(s, "pass") == 0)
        t->pass++;
    else if (strcmp(s, "fail") == 0)
        t->fail++;
    else if (strcmp(s, "skip") == 0)
        t->skip++;
    else if (strcmp(s, "n/a") == 0)
        t->na++;
    else if (strcmp(s, "error") == 0)
        t->error++;
    else
        t->not_run++;
}

/* "pass/FAIL" counts, with errors when there are any; "n/a" when the
 * unwinder applied to no case. */
static void tally_cell(cf_strbuf *out, const tally *t)
{
    if (t->pass + t->fail + t->error == 0) {
        cf_sb_puts(out, t->na ? " n/a |" : " — |");
        return;
    }
    cf_sb_printf(out, " %" PRId64 "/%" PRId64, t->pass, t->fail);
    if (t->error)
        cf_sb_printf(out, " (%" PRId64 " error)", t->error);
    cf_sb_puts(out, " |");
}

static void header(cf_strbuf *out, const char *first, json_object *interps)
{
    size_t ni = json_object_array_length(interps);
    cf_sb_printf(out, "| %s |", first);
    for (size_t i = 0; i < ni; i++) {
        cf_sb_puts(out, " ");
        cf_md_cell(out, cf_json_str(json_object_array_get_idx(interps, i), "id", "?"));
        cf_sb_puts(out, " |");
    }
    cf_sb_puts(out, "\n|---|");
    for (size_t i = 0; i < ni; i++)
        cf_sb_puts(out, "---|");
    cf_sb_puts(out, "\n");
}

static tally column(json_object *cases, json_object *scens, const char *id, const char *unwinder)
{
    tally t = {0};
    for (size_t s = 0; s < json_object_array_length(scens); s++)
        add(&t, case_verdict(find_case(cases, id, json_object_get_string(json_object_array_get_idx(scens, s))),
                             unwinder));
    return t;
}

typedef struct fclass {
    char name[CLASS_LEN];
    int64_t count;
} fclass;

typedef struct fclasses {
    fclass *items;
    size_t n, cap;
    bool failed;
} fclasses;

static void class_add(fclasses *fc, const char *name)
{
    for (size_t i = 0; i < fc->n; i++) {
        if (strcmp(fc->items[i].name, name) == 0) {
            fc->items[i].count++;
            return;
        }
    }
    if (fc->n == fc->cap) {
        size_t cap = fc->cap ? fc->cap * 2 : 16;
        fclass *p = realloc(fc->items, cap * sizeof *p);
        if (!p) {
            fc->failed = true;
            return;
        }
        fc->items = p;
        fc->cap = cap;
    }
    fclass *c = &fc->items[fc->n++];
    snprintf(c->name, sizeof c->name, "%s", name);
    c->count = 1;
}

/* A sample error's class: its text up to the first quote or digit run,
 * so that the same failure on other threads and lines falls together. */
static void error_class(const char *error, char *buf, size_t len)
{
    size_t k = 0;
    k += (size_t)snprintf(buf, len, "sample error: ");
    for (const char *p = error; *p && k + 2 < len; p++) {
        if (*p == '"' || *p == '(' || *p == '\n')
            break;
        if (isdigit((unsigned char)*p)) {
            if (k == 0 || buf[k - 1] != 'N')
                buf[k++] = 'N';
            continue;
        }
        buf[k++] = *p;
    }
    while (k > 0 && (buf[k - 1] == ' ' || buf[k - 1] == ':'))
        k--;
    buf[k] = '\0';
}

/* A mismatch's class: its type with the fields that differ. */
static void mismatch_class(json_object *m, char *name, size_t size)
{
    const char *type = cf_json_str(m, "type", "?");
    json_object *fields = cf_json_array(m, "fields");
    const char *field = cf_json_str(m, "field", NULL);
    size_t len = (size_t)snprintf(name, size, "%s", type);
    for (size_t j = 0; fields && j < json_object_array_length(fields) && len < size; j++)
        len += (size_t)snprintf(name + len, size - len, "%s%s", j ? "," : ": ",
                                json_object_get_string(json_object_array_get_idx(fields, j)));
    if (field && len < size)
        snprintf(name + len, size - len, ": %s", field);
}

/* The mismatches of a failed sample; a sample recorded as "the same as
 * sample N" has those of sample N of the same checkpoint. */
static json_object *sample_mismatches(json_object *fails, json_object *f)
{
    int64_t same = cf_json_int(f, "same_as_sample", -1);
    if (same < 0)
        return cf_json_array(f, "mismatches");
    int64_t seq = cf_json_int(f, "seq", -1);
    for (size_t i = 0; i < json_object_array_length(fails); i++) {
        json_object *g = json_object_array_get_idx(fails, i);
        if (cf_json_int(g, "sample", -1) == same && cf_json_int(g, "seq", -1) == seq &&
            cf_json_int(g, "same_as_sample", -1) < 0)
            return cf_json_array(g, "mismatches");
    }
    return NULL;
}

/* Every failure of a configuration counted once per sample and class. */
static void classify(fclasses *fc, json_object *cfg)
{
    json_object *fails = cf_json_array(cfg, "failures");
    for (size_t i = 0; fails && i < json_object_array_length(fails); i++) {
        json_object *f = json_object_array_get_idx(fails, i);
        char name[CLASS_LEN], other[CLASS_LEN];
        const char *error = cf_json_str(f, "error", NULL);
        if (error) {
            error_class(error, name, sizeof name);
            class_add(fc, name);
            continue;
        }
        json_object *mm = sample_mismatches(fails, f);
        for (size_t k = 0; mm && k < json_object_array_length(mm); k++) {
            mismatch_class(json_object_array_get_idx(mm, k), name, sizeof name);
            bool seen = false;
            for (size_t j = 0; j < k && !seen; j++) {
                mismatch_class(json_object_array_get_idx(mm, j), other, sizeof other);
                seen = strcmp(name, other) == 0;
            }
            if (!seen)
                class_add(fc, name);
        }
    }
}

static int by_count(const void *a, const void *b)
{
    const fclass *x = a, *y = b;
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;
    return strcmp(x->name, y->name);
}

static void unwinder_classes(cf_strbuf *out, json_object *cases, const char *unwinder)
{
    fclasses fc = {0};
    for (size_t i = 0; i < json_object_array_length(cases); i++) {
        json_object *cfgs = cf_json_array(json_object_array_get_idx(cases, i), "unwinders");
        for (size_t g = 0; cfgs && g < json_object_array_length(cfgs); g++) {
            json_object *cfg = json_object_array_get_idx(cfgs, g);
            if (strcmp(cf_json_str(cfg, "unwinder", ""), unwinder) == 0)
                classify(&fc, cfg);
        }
    }
    if (fc.n) {
        qsort(fc.items, fc.n, sizeof *fc.items, by_count);
        cf_sb_puts(out, "\nMost frequent failure classes (failed samples x class, all configurations):\n\n");
        for (size_t i = 0; i < fc.n && i < TOP_CLASSES; i++) {
            cf_sb_printf(out, "- %" PRId64 " × ", fc.items[i].count);
            cf_md_cell(out, fc.items[i].name);
            cf_sb_puts(out, "\n");
        }
    }
    if (fc.failed)
        cf_sb_puts(out, "\n(out of memory while classifying failures)\n");
    free(fc.items);
}

static void unwinder_section(cf_strbuf *out, json_object *report, const char *unwinder)
{
    json_object *cases = cf_json_array(report, "cases");
    json_object *interps = cf_json_array(report, "interpreters");
    json_object *scens = cf_json_array(report, "scenarios");
    size_t ni = json_object_array_length(interps), ns = json_object_array_length(scens);
    cf_sb_printf(out, "\n## %s\n\n", unwinder);
    header(out, "scenario", interps);
    tally total = {0};
    for (size_t s = 0; s < ns; s++) {
        const char *scen = json_object_get_string(json_object_array_get_idx(scens, s));
        cf_sb_puts(out, "| ");
        cf_md_cell(out, scen);
        cf_sb_puts(out, " |");
        for (size_t i = 0; i < ni; i++) {
            const char *id = cf_json_str(json_object_array_get_idx(interps, i), "id", "?");
            const char *v = case_verdict(find_case(cases, id, scen), unwinder);
            add(&total, v);
            cf_sb_printf(out, " %s |", verdict(v));
        }
        cf_sb_puts(out, "\n");
    }
    cf_sb_printf(out, "\n**%s:** %" PRId64 " pass, %" PRId64 " FAIL, %" PRId64 " error, %" PRId64
                      " skip (scenario does not apply), %" PRId64 " n/a (unwinder does not apply)",
                 unwinder, total.pass, total.fail, total.error, total.skip, total.na);
    if (total.not_run)
        cf_sb_printf(out, ", %" PRId64 " not run", total.not_run);
    cf_sb_puts(out, ".\n");
    unwinder_classes(out, cases, unwinder);
    size_t listed = 0, problems = 0;
    for (size_t i = 0; i < json_object_array_length(cases); i++) {
        json_object *c = json_object_array_get_idx(cases, i);
        const char *v = case_verdict(c, unwinder);
        if (strcmp(v, "fail") != 0 && strcmp(v, "error") != 0)
            continue;
        problems++;
        if (listed >= MAX_LISTED_PROBLEMS)
            continue;
        if (listed++ == 0)
            cf_sb_printf(out, "\nFailing cases of %s:\n\n", unwinder);
        cf_sb_printf(out, "- %s `%s` %s: ", cf_json_str(c, "interpreter", "?"), cf_json_str(c, "scenario", "?"),
                     strcmp(v, "fail") == 0 ? "FAIL" : "error");
        cf_md_cell(out, strcmp(v, "error") == 0 ? cf_json_str(c, "summary", "") : "");
        json_object *cfgs = cf_json_array(c, "unwinders");
        const char *sep = "";
        for (size_t g = 0; strcmp(v, "fail") == 0 && cfgs && g < json_object_array_length(cfgs); g++) {
            json_object *cfg = json_object_array_get_idx(cfgs, g);
            if (strcmp(cf_json_str(cfg, "unwinder", ""), unwinder) != 0 ||
                strcmp(cf_json_str(cfg, "status", ""), "fail") != 0)
                continue;
            json_object *f = json_object_array_get_idx(cf_json_array(cfg, "failures"), 0);
            const char *what = cf_json_str(f, "error", NULL);
            json_object *mm = cf_json_array(f, "mismatches");
            if (!what)
                what = cf_json_str(json_object_array_get_idx(mm, 0), "message", "");
            cf_sb_printf(out, "%s[%s] ", sep, cf_json_str(cfg, "name", "?"));
            cf_md_cell(out, what);
            sep = "; ";
            break; /* the first failing configuration tells the story; report.json has all */
        }
        cf_sb_puts(out, "\n");
    }
    if (problems > listed)
        cf_sb_printf(out, "- ... and %zu more (see report.json)\n", problems - listed);
}

int cf_matrix_render(json_object *report, cf_strbuf *out)
{
    json_object *cases = cf_json_array(report, "cases");
    json_object *interps = cf_json_array(report, "interpreters");
    json_object *scens = cf_json_array(report, "scenarios");
    json_object *names = cf_json_array(report, "unwinder_names");
    json_object *opts = NULL;
    json_object_object_get_ex(report, "options", &opts);
    if (!cases || !interps || !scens || !names)
        return CF_E_FORMAT;
    size_t ni = json_object_array_length(interps);

    cf_sb_puts(out, "# frameproof conform\n\n");
    if (cf_json_bool(report, "interrupted", false))
        cf_sb_puts(out, "**Interrupted: partial results.**\n\n");
    const char *fault = cf_json_str(opts, "inject_fault", NULL);
    if (fault)
        cf_sb_printf(out, "**Self-test: fault `%s` injected into every sample.**\n\n", fault);
    for (size_t i = 0; i < ni; i++) {
        json_object *in = json_object_array_get_idx(interps, i);
        if (cf_json_bool(in, "untested", false))
            cf_sb_printf(out, "**%s is newer than the supported versions: unwound from its own debug offsets, "
                              "untested.**\n\n",
                         cf_json_str(in, "id", "?"));
    }
    cf_sb_puts(out, "## State of the field\n\nCases passed/FAILED per unwinder and interpreter (a case passes "
                    "when every sample of every configuration of the unwinder matched the ground truth).\n\n");
    header(out, "unwinder", interps);
    for (size_t u = 0; u < json_object_array_length(names); u++) {
        const char *unwinder = json_object_get_string(json_object_array_get_idx(names, u));
        cf_sb_puts(out, "| ");
        cf_md_cell(out, unwinder);
        cf_sb_puts(out, " |");
        for (size_t i = 0; i < ni; i++) {
            tally t = column(cases, scens, cf_json_str(json_object_array_get_idx(interps, i), "id", "?"), unwinder);
            tally_cell(out, &t);
        }
        cf_sb_puts(out, "\n");
    }
    tally total = {0};
    for (size_t i = 0; i < json_object_array_length(cases); i++)
        add(&total, cf_json_str(json_object_array_get_idx(cases, i), "status", "not_run"));
    int64_t n = (int64_t)json_object_array_length(cases);
    cf_sb_printf(out, "\n**Totals:** %" PRId64 " case%s (scenario x interpreter): %" PRId64 " pass, %" PRId64
                      " FAIL, %" PRId64 " skip, %" PRId64 " error",
                 n, n == 1 ? "" : "s", total.pass, total.fail, total.skip, total.error);
    if (total.not_run)
        cf_sb_printf(out, ", %" PRId64 " not run", total.not_run);
    cf_sb_printf(out, " (%.1f s).\n", cf_json_double(report, "seconds", 0));
    for (size_t u = 0; u < json_object_array_length(names); u++)
        unwinder_section(out, report, json_object_get_string(json_object_array_get_idx(names, u)));
    return out->failed ? CF_E_NOMEM : CF_OK;
}
