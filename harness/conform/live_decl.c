/* live_decl.c — parses and loads a live scenario's declaration into its
 * representation (live_decl_rep.h): every function, thread kind, ignore
 * pattern and exclusive group checked, line tags resolved against the
 * scenario's source, a refusal said in one line; and the line sets'
 * lookup the judge uses. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "live_decl_rep.h"
#include "strbuf.h"
#include "util.h"

typedef struct parser {
    const char *script;
    char *err;
    size_t errlen;
    cf_live_decl *d;
} parser;

__attribute__((format(printf, 2, 3))) static int bad(parser *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err, p->errlen, fmt, ap);
    va_end(ap);
    return CF_E_FORMAT;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static int set_add(cf_live_lines *s, int32_t v)
{
    if (s->n >= CF_LIVE_MAX_LINES)
        return CF_E_LIMIT;
    int32_t *nv = realloc(s->v, (s->n + 1) * sizeof *nv);
    if (!nv)
        return CF_E_NOMEM;
    s->v = nv;
    s->v[s->n++] = v;
    return CF_OK;
}

static void set_finish(cf_live_lines *s)
{
    if (s->n == 0)
        return;
    qsort(s->v, s->n, sizeof *s->v, cmp_i32);
    size_t w = 1;
    for (size_t r = 1; r < s->n; r++)
        if (s->v[r] != s->v[w - 1])
            s->v[w++] = s->v[r];
    s->n = w;
}

bool cf_live_lines_has(const cf_live_lines *s, int32_t v)
{
    return s->any || (s->n && bsearch(&v, s->v, s->n, sizeof *s->v, cmp_i32) != NULL);
}

/* True when the comment of the line [l, end) holds the token tag ("@x"). */
static bool line_has_tag(const char *l, const char *end, const char *tag, size_t taglen)
{
    const char *hash = memchr(l, '#', (size_t)(end - l));
    for (const char *c = hash; c && c < end;) {
        while (c < end && (*c == ' ' || *c == '\t' || *c == '#'))
            c++;
        const char *w = c;
        while (c < end && *c != ' ' && *c != '\t' && *c != '\r')
            c++;
        if ((size_t)(c - w) == taglen && memcmp(w, tag, taglen) == 0)
            return true;
        if (c == w)
            break;
    }
    return false;
}

/* Adds every line of the script tagged with spec ("@x"). */
static int add_tag_lines(parser *p, const char *spec, cf_live_lines *s)
{
    size_t taglen = strlen(spec);
    if (taglen < 2 || taglen > CF_LIVE_MAX_TAG)
        return bad(p, "invalid tag \"%.*s\"", (int)CF_NAME_SHOWN, spec);
    if (!p->script)
        return bad(p, "tag %s used without a scenario source", spec);
    size_t found = 0;
    int32_t lineno = 1;
    for (const char *l = p->script; *l; lineno++) {
        const char *end = strchr(l, '\n');
        if (!end)
            end = l + strlen(l);
        if (line_has_tag(l, end, spec, taglen)) {
            int rc = set_add(s, lineno);
            if (rc)
                return rc == CF_E_LIMIT ? bad(p, "tag %s: more than %u lines", spec, CF_LIVE_MAX_LINES) : rc;
            found++;
        }
        if (!*end || lineno == INT32_MAX)
            break;
        l = end + 1;
    }
    return found ? CF_OK : bad(p, "tag %s is on no line of the scenario", spec);
}

/* "any", or an array of line numbers and "@tag" strings. */
static int parse_lines(parser *p, json_object *v, const char *what, const char *id, cf_live_lines *s)
{
    if (v && json_object_is_type(v, json_type_string) && strcmp(json_object_get_string(v), "any") == 0) {
        s->any = true;
        return CF_OK;
    }
    if (!v || !json_object_is_type(v, json_type_array))
        return bad(p, "function %s: \"%s\" must be \"any\" or an array of lines and @tags", id, what);
    for (size_t i = 0; i < json_object_array_length(v); i++) {
        json_object *e = json_object_array_get_idx(v, i);
        int rc;
        if (json_object_is_type(e, json_type_int)) {
            int64_t n = json_object_get_int64(e);
            if (n < 0 || n > INT32_MAX)
                return bad(p, "function %s: line %" PRId64 " out of range", id, n);
            rc = set_add(s, (int32_t)n);
            if (rc == CF_E_LIMIT)
                return bad(p, "function %s: more than %u lines", id, CF_LIVE_MAX_LINES);
        } else if (json_object_is_type(e, json_type_string) && json_object_get_string(e)[0] == '@') {
            rc = add_tag_lines(p, json_object_get_string(e), s);
        } else {
            return bad(p, "function %s: \"%s\" holds something that is neither a line nor an @tag", id, what);
        }
        if (rc)
            return rc;
    }
    set_finish(s);
    return CF_OK;
}

static void pattern_free(cf_live_pattern *pt)
{
    free(pt->function);
    for (size_t i = 0; i < pt->nfiles; i++)
        free(pt->files[i]);
    free(pt->files);
}

/* {"function": PATTERN, "file": PATTERN or [PATTERN, ...]} (file optional). */
static int parse_pattern(parser *p, json_object *o, const char *what, cf_live_pattern *pt)
{
    const char *fn = cf_json_str(o, "function", NULL);
    if (!fn || !*fn)
        return bad(p, "%s: \"function\" must be a non-empty pattern", what);
    pt->function = strdup(fn);
    if (!pt->function)
        return CF_E_NOMEM;
    json_object *files = NULL;
    if (!json_object_object_get_ex(o, "file", &files) || !files)
        return CF_OK;
    bool one = json_object_is_type(files, json_type_string);
    if (!one && !json_object_is_type(files, json_type_array))
        return bad(p, "%s: \"file\" must be a pattern or an array of patterns", what);
    size_t n = one ? 1 : json_object_array_length(files);
    if (n == 0 || n > CF_LIVE_MAX_PATTERNS)
        return bad(p, "%s: 1 to %u file patterns", what, CF_LIVE_MAX_PATTERNS);
    pt->files = calloc(n, sizeof *pt->files);
    if (!pt->files)
        return CF_E_NOMEM;
    for (size_t i = 0; i < n; i++) {
        json_object *e = one ? files : json_object_array_get_idx(files, i);
        if (!json_object_is_type(e, json_type_string))
            return bad(p, "%s: a file pattern is not a string", what);
        pt->files[i] = strdup(json_object_get_string(e));
        if (!pt->files[i])
            return CF_E_NOMEM;
        pt->nfiles++;
    }
    return CF_OK;
}

static long find_fn(const cf_live_decl *d, const char *id)
{
    for (size_t i = 0; i < d->nfns; i++)
        if (strcmp(d->fns[i].id, id) == 0)
            return (long)i;
    return CF_LIVE_NONE;
}

/* An array of function ids into a freshly allocated index array. */
static int parse_ids(parser *p, json_object *a, const char *what, long **out, size_t *n, size_t max)
{
    if (!a || !json_object_is_type(a, json_type_array) || json_object_array_length(a) == 0)
        return bad(p, "%s must be a non-empty array of function ids", what);
    size_t len = json_object_array_length(a);
    if (len > max)
        return bad(p, "%s: more than %zu ids", what, max);
    *out = calloc(len, sizeof **out);
    if (!*out)
        return CF_E_NOMEM;
    for (size_t i = 0; i < len; i++) {
        const char *id = json_object_get_string(json_object_array_get_idx(a, i));
        long k = id ? find_fn(p->d, id) : CF_LIVE_NONE;
        if (k == CF_LIVE_NONE)
            return bad(p, "%s: unknown function id \"%.*s\"", what, (int)CF_NAME_SHOWN, id ? id : "(not a string)");
        (*out)[i] = k;
    }
    *n = len;
    return CF_OK;
}

static int parse_calls(parser *p, json_object *calls, cf_live_fn *f)
{
    if (!calls)
        return CF_OK;
    if (!json_object_is_type(calls, json_type_array))
        return bad(p, "function %s: \"calls\" must be an array", f->id);
    size_t n = json_object_array_length(calls);
    f->calls = calloc(n ? n : 1, sizeof *f->calls);
    if (!f->calls)
        return CF_E_NOMEM;
    for (size_t i = 0; i < n; i++) {
        json_object *c = json_object_array_get_idx(calls, i), *at = NULL, *to = NULL;
        cf_live_call *r = &f->calls[f->ncalls++];
        json_object_object_get_ex(c, "at", &at);
        json_object_object_get_ex(c, "to", &to);
        char what[CF_NAME_SHOWN + 32];
        snprintf(what, sizeof what, "function %s: \"calls\"", f->id);
        int rc = parse_lines(p, at, "at", f->id, &r->at);
        if (!rc)
            rc = parse_ids(p, to, what, &r->to, &r->nto, CF_LIVE_MAX_FUNCTIONS);
        if (rc)
            return rc;
    }
    return CF_OK;
}

static int parse_generation(parser *p, json_object *g, cf_live_fn *f)
{
    if (!g)
        return CF_OK;
    const char *prefix = cf_json_str(g, "prefix", NULL);
    int64_t stride = cf_json_int(g, "stride", 0);
    if (!prefix || stride <= 0 || stride > INT32_MAX)
        return bad(p, "function %s: \"generation\" needs a \"prefix\" and a positive \"stride\"", f->id);
    f->gen_prefix = strdup(prefix);
    f->gen_stride = (int32_t)stride;
    return f->gen_prefix ? CF_OK : CF_E_NOMEM;
}

static int parse_functions(parser *p, json_object *decl)
{
    json_object *list = cf_json_array(decl, "functions");
    if (!list || json_object_array_length(list) == 0)
        return bad(p, "no \"functions\" array");
    size_t n = json_object_array_length(list);
    if (n > CF_LIVE_MAX_FUNCTIONS)
        return bad(p, "more than %u functions", CF_LIVE_MAX_FUNCTIONS);
    cf_live_decl *d = p->d;
    d->fns = calloc(n, sizeof *d->fns);
    if (!d->fns)
        return CF_E_NOMEM;
    /* First the ids, so that calls may name functions declared later. */
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(list, i);
        const char *id = cf_json_str(e, "id", NULL);
        if (!id || !*id)
            return bad(p, "function %zu has no \"id\"", i);
        if (find_fn(d, id) != CF_LIVE_NONE)
            return bad(p, "duplicate function id \"%.*s\"", (int)CF_NAME_SHOWN, id);
        cf_live_fn *f = &d->fns[d->nfns++];
        f->group = CF_LIVE_NONE;
        f->id = strdup(id);
        if (!f->id)
            return CF_E_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(list, i), *lines = NULL, *calls = NULL, *gen = NULL;
        cf_live_fn *f = &d->fns[i];
        char what[CF_NAME_SHOWN + 16];
        snprintf(what, sizeof what, "function %s", f->id);
        json_object_object_get_ex(e, "lines", &lines);
        json_object_object_get_ex(e, "calls", &calls);
        json_object_object_get_ex(e, "generation", &gen);
        int rc = parse_pattern(p, e, what, &f->pat);
        if (!rc)
            rc = parse_lines(p, lines, "lines", f->id, &f->lines);
        if (!rc)
            rc = parse_calls(p, calls, f);
        if (!rc)
            rc = parse_generation(p, gen, f);
        if (rc)
            return rc;
    }
    return CF_OK;
}

static int parse_kinds(parser *p, json_object *decl)
{
    json_object *list = cf_json_array(decl, "threads");
    if (!list || json_object_array_length(list) == 0)
        return bad(p, "no \"threads\" array");
    cf_live_decl *d = p->d;
    size_t n = json_object_array_length(list);
    d->kinds = calloc(n, sizeof *d->kinds);
    if (!d->kinds)
        return CF_E_NOMEM;
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(list, i), *mainv = NULL;
        cf_live_kind *k = &d->kinds[d->nkinds++];
        k->name = strdup(cf_json_str(e, "kind", "thread"));
        if (!k->name)
            return CF_E_NOMEM;
        k->main = CF_UNKNOWN;
        if (json_object_object_get_ex(e, "main", &mainv) && mainv)
            k->main = json_object_get_boolean(mainv) ? CF_YES : CF_NO;
        json_object *roots = cf_json_array(e, "roots");
        size_t nr = roots ? json_object_array_length(roots) : 0;
        if (nr == 0)
            return bad(p, "thread kind %s: \"roots\" must be a non-empty array", k->name);
        k->roots = calloc(nr, sizeof *k->roots);
        if (!k->roots)
            return CF_E_NOMEM;
        for (size_t r = 0; r < nr; r++) {
            long *ids = NULL;
            size_t len = 0;
            char what[CF_NAME_SHOWN + 32];
            snprintf(what, sizeof what, "thread kind %s: a root", k->name);
            int rc = parse_ids(p, json_object_array_get_idx(roots, r), what, &ids, &len, CF_LIVE_MAX_ROOT);
            if (rc == CF_OK) {
                memcpy(k->roots[r].ids, ids, len * sizeof *ids);
                k->roots[r].len = len;
                k->nroots++;
            }
            free(ids);
            if (rc)
                return rc;
        }
    }
    return CF_OK;
}

static int parse_rest(parser *p, json_object *decl)
{
    cf_live_decl *d = p->d;
    json_object *ign = cf_json_array(decl, "ignore");
    size_t n = ign ? json_object_array_length(ign) : 0;
    d->ignore = calloc(n ? n : 1, sizeof *d->ignore);
    if (!d->ignore)
        return CF_E_NOMEM;
    for (size_t i = 0; i < n; i++) {
        int rc = parse_pattern(p, json_object_array_get_idx(ign, i), "ignore", &d->ignore[d->nignore++]);
        if (rc)
            return rc;
    }
    const char *fl = cf_json_str(decl, "frameless", "never");
    if (strcmp(fl, "workers") == 0)
        d->frameless_workers = true;
    else if (strcmp(fl, "never") != 0)
        return bad(p, "\"frameless\" must be \"never\" or \"workers\"");
    int64_t mt = cf_json_int(decl, "min_threads", 0);
    if (mt < 0 || mt > (int64_t)CF_LIVE_MAX_FUNCTIONS)
        return bad(p, "\"min_threads\" out of range");
    d->min_threads = (size_t)mt;
    json_object *ex = cf_json_array(decl, "exclusive");
    for (size_t g = 0; ex && g < json_object_array_length(ex); g++) {
        long *ids = NULL;
        size_t len = 0;
        int rc = parse_ids(p, json_object_array_get_idx(ex, g), "an \"exclusive\" group", &ids, &len,
                           CF_LIVE_MAX_FUNCTIONS);
        for (size_t i = 0; rc == CF_OK && i < len; i++) {
            if (d->fns[ids[i]].group != CF_LIVE_NONE)
                rc = bad(p, "function %s is in two exclusive groups", d->fns[ids[i]].id);
            d->fns[ids[i]].group = (long)g;
        }
        free(ids);
        if (rc)
            return rc;
        d->ngroups++;
    }
    return CF_OK;
}

int cf_live_decl_parse(json_object *decl, const char *script, cf_live_decl **out, char *err, size_t errlen)
{
    *out = NULL;
    cf_live_decl *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return CF_E_NOMEM;
    }
    cf_sb_init(&d->key);
    parser p = {.script = script, .err = err, .errlen = errlen, .d = d};
    int rc = json_object_is_type(decl, json_type_object) ? CF_OK : bad(&p, "the declaration is not an object");
    if (!rc)
        rc = parse_functions(&p, decl);
    if (!rc)
        rc = parse_kinds(&p, decl);
    if (!rc)
        rc = parse_rest(&p, decl);
    if (!rc) {
        d->cache = calloc(CF_LIVE_CACHE_SLOTS, sizeof *d->cache);
        if (!d->cache)
            rc = CF_E_NOMEM;
    }
    if (rc == CF_E_NOMEM)
        snprintf(err, errlen, "out of memory");
    if (rc) {
        cf_live_decl_free(d);
        return rc;
    }
    *out = d;
    return CF_OK;
}

int cf_live_decl_load(const char *decl_path, const char *script_path, cf_live_decl **out, char *err,
                      size_t errlen)
{
    json_object *decl = NULL;
    cf_strbuf script;
    cf_sb_init(&script);
    *out = NULL;
    int rc = cf_json_read_file(decl_path, &decl, err, errlen);
    if (rc)
        return rc;
    FILE *f = fopen(script_path, "re");
    if (!f) {
        snprintf(err, errlen, "%s: %s", script_path, strerror(errno));
        rc = CF_E_IO;
        goto out;
    }
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        cf_sb_append(&script, buf, n);
    bool failed = ferror(f) != 0;
    fclose(f);
    if (failed || script.failed) {
        snprintf(err, errlen, "%s: %s", script_path, failed ? "read error" : "out of memory");
        rc = failed ? CF_E_IO : CF_E_NOMEM;
        goto out;
    }
    char why[CF_ERRMSG_LEN];
    rc = cf_live_decl_parse(decl, cf_sb_str(&script), out, why, sizeof why);
    if (rc)
        snprintf(err, errlen, "%s: %s", decl_path, why);
out:
    json_object_put(decl);
    cf_sb_free(&script);
    return rc;
}

void cf_live_decl_free(cf_live_decl *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->nfns; i++) {
        cf_live_fn *f = &d->fns[i];
        free(f->id);
        pattern_free(&f->pat);
        free(f->lines.v);
        for (size_t c = 0; c < f->ncalls; c++) {
            free(f->calls[c].at.v);
            free(f->calls[c].to);
        }
        free(f->calls);
        free(f->gen_prefix);
    }
    free(d->fns);
    for (size_t i = 0; i < d->nkinds; i++) {
        free(d->kinds[i].name);
        free(d->kinds[i].roots);
    }
    free(d->kinds);
    for (size_t i = 0; i < d->nignore; i++)
        pattern_free(&d->ignore[i]);
    free(d->ignore);
    for (size_t i = 0; d->cache && i < CF_LIVE_CACHE_SLOTS; i++)
        free(d->cache[i].key);
    free(d->cache);
    free(d->scratch);
    cf_sb_free(&d->key);
    free(d);
}
