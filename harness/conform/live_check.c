/* live_check.c — loads a live scenario's declaration (functions matched by
 * qualname and file patterns, their lines, call sites and callees, thread
 * kinds with their bottom frames, ignored threads, exclusive groups,
 * generations) and classifies samples against it; also the splice-previous
 * fault.  Frame identities are cached per declaration, so a sample costs a
 * hash lookup per frame. */
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "live_check.h"
#include "strbuf.h"
#include "util.h"

#define NONE (-1L)

typedef struct line_set {
    int32_t *v;                /* sorted, unique */
    size_t n;
    bool any;
} line_set;

typedef struct call_rule {
    line_set at;               /* the caller's lines (relative for generated functions) */
    long *to;                  /* callee function indexes */
    size_t nto;
} call_rule;

typedef struct pattern {
    char *function;            /* fnmatch pattern on co_qualname */
    char **files;              /* fnmatch patterns on co_filename; none: any file */
    size_t nfiles;
} pattern;

typedef struct fn_decl {
    char *id;
    pattern pat;
    line_set lines;            /* where it may be the innermost frame */
    call_rule *calls;
    size_t ncalls;
    char *gen_prefix;          /* generated: the generation number follows this prefix */
    int32_t gen_stride;        /* generation N's lines are stride * N + relative line */
    long group;                /* exclusive group, or NONE */
} fn_decl;

typedef struct root_decl {
    size_t len;
    long ids[CF_LIVE_MAX_ROOT]; /* outermost first */
} root_decl;

typedef struct kind_decl {
    char *name;
    int main;                  /* enum cf_tristate: CF_UNKNOWN when the kind does not say */
    root_decl *roots;
    size_t nroots;
} kind_decl;

typedef struct cache_slot {
    char *key;                 /* function "\x01" file, or NULL when empty */
    uint64_t hash;
    long fn;                   /* function index, NONE, or IGNORE_MATCH */
} cache_slot;

struct cf_live_decl {
    fn_decl *fns;
    size_t nfns;
    kind_decl *kinds;
    size_t nkinds;
    pattern *ignore;
    size_t nignore;
    bool frameless_workers;    /* non-main threads may have no frames (they start and exit) */
    size_t min_threads;
    size_t ngroups;
    cache_slot *cache;
    size_t cache_used;
    long *scratch;             /* function index per frame of the thread being judged */
    size_t scratch_cap;
    cf_strbuf key;
};

#define IGNORE_MATCH (-2L)

static const char *const RULE_NAMES[CF_RULE_COUNT] = {
    "unknown-frame", "root", "call-site", "edge", "generation", "exclusive", "line",
    "frameless", "main-missing", "thread-count",
};

const char *cf_live_rule_name(int rule)
{
    return rule >= 0 && rule < (int)CF_RULE_COUNT ? RULE_NAMES[rule] : NULL;
}

/* ------------------------------------------------------------------ */
/* Declaration parsing */

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

static int set_add(line_set *s, int32_t v)
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

static void set_finish(line_set *s)
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

static bool set_has(const line_set *s, int32_t v)
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
static int add_tag_lines(parser *p, const char *spec, line_set *s)
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
static int parse_lines(parser *p, json_object *v, const char *what, const char *id, line_set *s)
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

static void pattern_free(pattern *pt)
{
    free(pt->function);
    for (size_t i = 0; i < pt->nfiles; i++)
        free(pt->files[i]);
    free(pt->files);
}

/* {"function": PATTERN, "file": PATTERN or [PATTERN, ...]} (file optional). */
static int parse_pattern(parser *p, json_object *o, const char *what, pattern *pt)
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
    return NONE;
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
        long k = id ? find_fn(p->d, id) : NONE;
        if (k == NONE)
            return bad(p, "%s: unknown function id \"%.*s\"", what, (int)CF_NAME_SHOWN, id ? id : "(not a string)");
        (*out)[i] = k;
    }
    *n = len;
    return CF_OK;
}

static int parse_calls(parser *p, json_object *calls, fn_decl *f)
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
        call_rule *r = &f->calls[f->ncalls++];
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

static int parse_generation(parser *p, json_object *g, fn_decl *f)
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
        if (find_fn(d, id) != NONE)
            return bad(p, "duplicate function id \"%.*s\"", (int)CF_NAME_SHOWN, id);
        fn_decl *f = &d->fns[d->nfns++];
        f->group = NONE;
        f->id = strdup(id);
        if (!f->id)
            return CF_E_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(list, i), *lines = NULL, *calls = NULL, *gen = NULL;
        fn_decl *f = &d->fns[i];
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
        kind_decl *k = &d->kinds[d->nkinds++];
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
            if (d->fns[ids[i]].group != NONE)
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
        fn_decl *f = &d->fns[i];
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

/* ------------------------------------------------------------------ */
/* Frame identities */

static bool pattern_match(const pattern *pt, const char *function, const char *file, unsigned fields)
{
    if ((fields & CF_FIELD_FUNCTION) && fnmatch(pt->function, function, 0) != 0)
        return false;
    if (!(fields & CF_FIELD_FILE) || pt->nfiles == 0)
        return true;
    for (size_t i = 0; i < pt->nfiles; i++)
        if (fnmatch(pt->files[i], file, 0) == 0)
            return true;
    return false;
}

/* IGNORE_MATCH when the frame marks a thread that is not the scenario's,
 * else the first declared function it matches, else NONE. */
static long identify_uncached(const cf_live_decl *d, const char *function, const char *file, unsigned fields)
{
    for (size_t i = 0; i < d->nignore; i++)
        if (pattern_match(&d->ignore[i], function, file, fields))
            return IGNORE_MATCH;
    for (size_t i = 0; i < d->nfns; i++)
        if (pattern_match(&d->fns[i].pat, function, file, fields))
            return (long)i;
    return NONE;
}

static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

static int identify(cf_live_decl *d, const cf_frame *f, unsigned fields, long *out)
{
    const char *function = (fields & CF_FIELD_FUNCTION) ? f->function : "";
    const char *file = (fields & CF_FIELD_FILE) ? f->file : "";
    cf_sb_clear(&d->key);
    cf_sb_puts(&d->key, function);
    cf_sb_append(&d->key, "\x01", 1);
    cf_sb_puts(&d->key, file);
    if (d->key.failed)
        return CF_E_NOMEM;
    const char *key = cf_sb_str(&d->key);
    uint64_t h = fnv1a(key, d->key.len) ^ fields;
    size_t mask = CF_LIVE_CACHE_SLOTS - 1;
    for (size_t i = (size_t)h & mask, probes = 0; probes < CF_LIVE_CACHE_SLOTS; i = (i + 1) & mask, probes++) {
        cache_slot *s = &d->cache[i];
        if (!s->key) {
            long fn = identify_uncached(d, function, file, fields);
            *out = fn;
            /* Keep the table at most three quarters full. */
            if (d->cache_used >= CF_LIVE_CACHE_SLOTS / 4 * 3)
                return CF_OK;
            s->key = strdup(key);
            if (!s->key)
                return CF_E_NOMEM;
            s->hash = h;
            s->fn = fn;
            d->cache_used++;
            return CF_OK;
        }
        if (s->hash == h && strcmp(s->key, key) == 0) {
            *out = s->fn;
            return CF_OK;
        }
    }
    *out = identify_uncached(d, function, file, fields);
    return CF_OK;
}

/* ------------------------------------------------------------------ */
/* Classification */

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* "name (file:line)" on the reported fields. */
static void describe(const cf_frame *f, unsigned fields, char *buf, size_t len)
{
    int w = (int)CF_NAME_SHOWN;
    const char *fn = (fields & CF_FIELD_FUNCTION) ? f->function : "?";
    const char *file = (fields & CF_FIELD_FILE) ? base_name(f->file) : "?";
    if ((fields & CF_FIELD_LINE) && f->line != CF_POS_NONE)
        snprintf(buf, len, "%.*s (%.*s:%" PRId32 ")", w, fn, w, file, f->line);
    else
        snprintf(buf, len, "%.*s (%.*s)", w, fn, w, file);
}

static bool line_known(const cf_frame *f, unsigned fields)
{
    return (fields & CF_FIELD_LINE) && f->line != CF_POS_NONE;
}

/* The generation number of a generated function's frame, or -1. */
static long generation_of(const fn_decl *fd, const cf_frame *f, unsigned fields)
{
    if (!fd->gen_prefix || !(fields & CF_FIELD_FUNCTION))
        return -1;
    const char *s = f->function;
    size_t pl = strlen(fd->gen_prefix);
    if (strncmp(s, fd->gen_prefix, pl) != 0 || s[pl] < '0' || s[pl] > '9')
        return -1;
    char *end;
    errno = 0;
    long n = strtol(s + pl, &end, 10);
    if (errno || n < 0 || n > INT32_MAX / (fd->gen_stride ? fd->gen_stride : 1))
        return -1;
    return n;
}

typedef struct judge {
    cf_live_decl *d;
    const cf_sample *s;
    const cf_thread *t;
    cf_live_finding *f;
} judge;

__attribute__((format(printf, 3, 4))) static bool violate(judge *j, int rule, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    j->f->rule = rule;
    vsnprintf(j->f->reason, sizeof j->f->reason, fmt, ap);
    va_end(ap);
    return true;
}

static const cf_frame *frame_at(const judge *j, size_t i)
{
    return &j->s->frames[j->t->first + i];
}

/* The line of frame i relative to its generation's base (or as is). */
static int32_t rel_line(const judge *j, size_t i, long gen)
{
    const fn_decl *fd = &j->d->fns[j->d->scratch[i]];
    int32_t line = frame_at(j, i)->line;
    return gen >= 0 ? line - (int32_t)gen * fd->gen_stride : line;
}

/* Rule root: the outermost frames of the thread against the roots of the
 * kinds it may be; sets *main_kind when it matches a main kind. */
static bool check_root(judge *j, bool *main_kind)
{
    const cf_thread *t = j->t;
    const long *ids = j->d->scratch;
    bool main_known = (j->s->fields & CF_FIELD_MAIN) != 0;
    const kind_decl *first = NULL;
    for (size_t k = 0; k < j->d->nkinds; k++) {
        const kind_decl *kd = &j->d->kinds[k];
        if (main_known && kd->main != CF_UNKNOWN && kd->main != (t->main ? CF_YES : CF_NO))
            continue;
        if (!first)
            first = kd;
        for (size_t r = 0; r < kd->nroots; r++) {
            const root_decl *rd = &kd->roots[r];
            bool ok = t->count >= rd->len;
            for (size_t x = 0; ok && x < rd->len; x++)
                ok = ids[t->count - 1 - x] == rd->ids[x];
            if (ok) {
                *main_kind = kd->main == CF_YES;
                return false;
            }
        }
    }
    char got[2 * CF_NAME_SHOWN + 64], want[CF_LIVE_REASON_LEN / 2] = "";
    describe(frame_at(j, t->count - 1), j->s->fields, got, sizeof got);
    if (first) {
        size_t used = 0;
        for (size_t x = 0; x < first->roots[0].len && used < sizeof want; x++) {
            int n = snprintf(want + used, sizeof want - used, "%s%s", x ? " > " : "",
                             j->d->fns[first->roots[0].ids[x]].id);
            used += n > 0 ? (size_t)n : 0;
        }
    }
    if (!first)
        return violate(j, CF_RULE_ROOT, "%s thread: no declared thread kind", t->main ? "main" : "non-main");
    return violate(j, CF_RULE_ROOT, "outermost frame %s, %zu frames: matches no root of a %s thread (e.g. %s)", got,
                   t->count, first->name, want);
}

/* Rules call-site, edge and generation for caller frame i (i >= 1). */
static bool check_caller(judge *j, size_t i)
{
    const long *ids = j->d->scratch;
    const fn_decl *caller = &j->d->fns[ids[i]], *callee = &j->d->fns[ids[i - 1]];
    const cf_frame *fc = frame_at(j, i), *fe = frame_at(j, i - 1);
    unsigned fields = j->s->fields;
    char a[2 * CF_NAME_SHOWN + 64], b[2 * CF_NAME_SHOWN + 64];
    describe(fc, fields, a, sizeof a);
    describe(fe, fields, b, sizeof b);
    long gen = generation_of(caller, fc, fields);
    bool known = line_known(fc, fields);
    int32_t line = known ? rel_line(j, i, gen) : 0;
    bool site = false, allowed = false;
    for (size_t c = 0; c < caller->ncalls; c++) {
        const call_rule *r = &caller->calls[c];
        if (known && !set_has(&r->at, line))
            continue;
        site = true;
        for (size_t k = 0; k < r->nto && !allowed; k++)
            allowed = r->to[k] == ids[i - 1];
    }
    if (!site && caller->ncalls == 0)
        return violate(j, CF_RULE_EDGE, "%s calls nothing, yet %s is above it", a, b);
    if (!site && gen >= 0)
        return violate(j, CF_RULE_GENERATION, "%s: line %" PRId32 " is no call site of generation %ld", a,
                       fc->line, gen);
    if (!site)
        return violate(j, CF_RULE_CALL_SITE, "%s is below %s, but that line is not a call site of %s", a, b,
                       caller->id);
    if (!allowed)
        return violate(j, CF_RULE_EDGE, "%s may not call %s (not a callee of %s at that line)", a, b, caller->id);
    long cgen = generation_of(callee, fe, fields);
    if (gen >= 0 && cgen >= 0 && gen != cgen)
        return violate(j, CF_RULE_GENERATION, "%s of generation %ld calls %s of generation %ld", a, gen, b, cgen);
    return false;
}

/* Rules line and generation for the innermost frame. */
static bool check_innermost(judge *j)
{
    const fn_decl *fd = &j->d->fns[j->d->scratch[0]];
    const cf_frame *f = frame_at(j, 0);
    if (!line_known(f, j->s->fields))
        return false;
    long gen = generation_of(fd, f, j->s->fields);
    if (set_has(&fd->lines, rel_line(j, 0, gen)))
        return false;
    char a[2 * CF_NAME_SHOWN + 64];
    describe(f, j->s->fields, a, sizeof a);
    if (gen >= 0)
        return violate(j, CF_RULE_GENERATION, "innermost %s: line %" PRId32 " is not a line of generation %ld", a,
                       f->line, gen);
    return violate(j, CF_RULE_LINE, "innermost %s: line %" PRId32 " is not a line where %s can be innermost", a,
                   f->line, fd->id);
}

static bool check_exclusive(judge *j)
{
    const long *ids = j->d->scratch;
    long seen = NONE;
    size_t at = 0;
    for (size_t i = 0; i < j->t->count; i++) {
        long g = j->d->fns[ids[i]].group;
        if (g == NONE)
            continue;
        if (seen == NONE) {
            seen = g;
            at = i;
        } else if (g != seen) {
            char a[2 * CF_NAME_SHOWN + 64], b[2 * CF_NAME_SHOWN + 64];
            describe(frame_at(j, at), j->s->fields, a, sizeof a);
            describe(frame_at(j, i), j->s->fields, b, sizeof b);
            return violate(j, CF_RULE_EXCLUSIVE, "%s and %s are in one stack (exclusive groups %ld and %ld)", a, b,
                           seen + 1, g + 1);
        }
    }
    return false;
}

enum { THREAD_VALID, THREAD_WRONG, THREAD_IGNORED };

/* A frameless thread whose id another thread with frames carries: on 3.11
 * and 3.12 a thread state made for a thread that has not started yet
 * holds the ids of the thread that creates it (its main flag follows). */
static bool unbound_state(const cf_sample *s, const cf_thread *t)
{
    bool by_native = (s->fields & CF_FIELD_NATIVE_ID) != 0;
    if (!by_native && !(s->fields & CF_FIELD_THREAD_ID))
        return false;
    for (size_t i = 0; i < s->nthreads; i++) {
        const cf_thread *o = &s->threads[i];
        if (o != t && o->count > 0 && (by_native ? o->native_id == t->native_id : o->thread_id == t->thread_id))
            return true;
    }
    return false;
}

/* Judges thread t (which carries no error). */
static int judge_thread(judge *j, bool *main_kind, int *status)
{
    const cf_thread *t = j->t;
    cf_live_decl *d = j->d;
    unsigned fields = j->s->fields;
    *status = THREAD_WRONG;
    *main_kind = (fields & CF_FIELD_MAIN) && t->main;
    if (t->count == 0) {
        bool main_known = (fields & CF_FIELD_MAIN) != 0;
        if (unbound_state(j->s, t)) {
            *main_kind = false;
            if (d->frameless_workers)
                *status = THREAD_VALID;
            else
                violate(j, CF_RULE_FRAMELESS, "a thread state not yet bound to its thread (no frames, the id of "
                                              "another thread): this scenario starts no threads");
        } else if (main_known && t->main)
            violate(j, CF_RULE_FRAMELESS, "the main thread has no frames");
        else if (!d->frameless_workers)
            violate(j, CF_RULE_FRAMELESS, "a thread has no frames (every thread of this scenario runs Python)");
        else
            *status = THREAD_VALID;
        return CF_OK;
    }
    if (!(fields & CF_FIELD_FUNCTION)) {
        *status = THREAD_VALID; /* frames cannot be identified: only the thread rules apply */
        return CF_OK;
    }
    if (d->scratch_cap < t->count) {
        long *ns = realloc(d->scratch, t->count * sizeof *ns);
        if (!ns)
            return CF_E_NOMEM;
        d->scratch = ns;
        d->scratch_cap = t->count;
    }
    long unknown = NONE;
    for (size_t i = 0; i < t->count; i++) {
        int rc = identify(d, frame_at(j, i), fields, &d->scratch[i]);
        if (rc)
            return rc;
        if (d->scratch[i] == IGNORE_MATCH) {
            *status = THREAD_IGNORED;
            return CF_OK;
        }
        if (d->scratch[i] == NONE && unknown == NONE)
            unknown = (long)i;
    }
    if (unknown != NONE) {
        char a[2 * CF_NAME_SHOWN + 64];
        describe(frame_at(j, (size_t)unknown), fields, a, sizeof a);
        violate(j, CF_RULE_UNKNOWN_FRAME, "frame #%ld %s matches no declared function", unknown, a);
        return CF_OK;
    }
    if (check_root(j, main_kind))
        return CF_OK;
    for (size_t i = t->count - 1; i >= 1; i--)
        if (check_caller(j, i))
            return CF_OK;
    if (check_exclusive(j) || check_innermost(j))
        return CF_OK;
    *status = THREAD_VALID;
    return CF_OK;
}

static void add_finding(cf_live_result *out, const cf_live_finding *f)
{
    out->wrong++;
    if (out->nfindings < CF_LIVE_MAX_FINDINGS)
        out->findings[out->nfindings++] = *f;
}

int cf_live_classify(cf_live_decl *d, const cf_sample *s, cf_live_result *out)
{
    memset(out, 0, sizeof *out);
    bool main_seen = false;
    for (size_t i = 0; i < s->nthreads; i++) {
        const cf_thread *t = &s->threads[i];
        if (t->error) {
            out->rejected++;
            if (!out->reject_reason)
                out->reject_reason = t->error;
            continue;
        }
        cf_live_finding f = {.thread = (long)i};
        judge j = {.d = d, .s = s, .t = t, .f = &f};
        bool main_kind = false;
        int status;
        int rc = judge_thread(&j, &main_kind, &status);
        if (rc)
            return rc;
        if (status == THREAD_IGNORED) {
            out->ignored++;
            continue;
        }
        out->checked++;
        main_seen |= main_kind || ((s->fields & CF_FIELD_MAIN) && t->main);
        if (status == THREAD_WRONG)
            add_finding(out, &f);
    }
    if ((s->fields & CF_FIELD_ALL_THREADS) && out->rejected == 0) {
        cf_live_finding f = {.thread = -1};
        if (!main_seen) {
            f.rule = CF_RULE_MAIN_MISSING;
            snprintf(f.reason, sizeof f.reason, "no main thread among the %zu threads of a sample of every thread",
                     s->nthreads);
            add_finding(out, &f);
        }
        if (out->checked < d->min_threads) {
            f.rule = CF_RULE_THREAD_COUNT;
            snprintf(f.reason, sizeof f.reason, "%zu scenario threads, the scenario runs at least %zu",
                     out->checked, d->min_threads);
            add_finding(out, &f);
        }
    }
    out->verdict = out->wrong ? CF_LIVE_WRONG : out->rejected ? CF_LIVE_REJECTED : CF_LIVE_VALID;
    return CF_OK;
}

/* ------------------------------------------------------------------ */
/* splice-previous */

static bool same_frame(const cf_frame *a, const cf_frame *b)
{
    return a->line == b->line && strcmp(a->function, b->function) == 0 && strcmp(a->file, b->file) == 0;
}

static bool stacks_differ(const cf_sample *a, const cf_thread *ta, const cf_sample *b, const cf_thread *tb)
{
    if (ta->count != tb->count)
        return true;
    for (size_t i = 0; i < ta->count; i++)
        if (!same_frame(&a->frames[ta->first + i], &b->frames[tb->first + i]))
            return true;
    return false;
}

/* Copies cur's thread i (without frames) to out and finds it in prev
 * (NULL when absent). */
static int copy_thread(const cf_sample *cur, const cf_sample *prev, size_t i, cf_sample *out, const cf_thread **p)
{
    const cf_thread *t = &cur->threads[i];
    bool by_native = (cur->fields & CF_FIELD_NATIVE_ID) != 0;
    *p = cf_sample_find(prev, by_native ? t->native_id : t->thread_id);
    cf_thread *nt;
    return cf_sample_add_thread(out, t, &nt);
}

int cf_live_splice(const cf_sample *cur, const cf_sample *prev, cf_sample *out)
{
    cf_sample_reset(out, cur->fields);
    int spliced = 0;
    for (size_t i = 0; i < cur->nthreads; i++) {
        const cf_thread *t = &cur->threads[i], *p;
        if (copy_thread(cur, prev, i, out, &p))
            return CF_E_NOMEM;
        bool splice = p && !t->error && !p->error && t->count >= 2 && p->count >= 2 &&
                      stacks_differ(cur, t, prev, p);
        if (splice && cf_sample_add_frame(out, &cur->frames[t->first]))
            return CF_E_NOMEM;
        const cf_sample *src = splice ? prev : cur;
        const cf_thread *st = splice ? p : t;
        for (size_t k = splice ? 1 : 0; k < st->count; k++)
            if (cf_sample_add_frame(out, &src->frames[st->first + k]))
                return CF_E_NOMEM;
        spliced += splice;
    }
    return spliced;
}

/* ------------------------------------------------------------------ */
/* frame-cache-by-address */

/* Index in prev's thread p of the frame at addr, or -1. */
static long frame_with_addr(const cf_sample *prev, const cf_thread *p, uint64_t addr)
{
    for (size_t j = 0; j < p->count; j++)
        if (prev->frames[p->first + j].frame_addr == addr)
            return (long)j;
    return -1;
}

int cf_live_cache_by_address(const cf_sample *cur, const cf_sample *prev, cf_sample *out)
{
    cf_sample_reset(out, cur->fields);
    int changed = 0;
    for (size_t i = 0; i < cur->nthreads; i++) {
        const cf_thread *t = &cur->threads[i], *p;
        if (copy_thread(cur, prev, i, out, &p))
            return CF_E_NOMEM;
        size_t keep = t->count; /* frames of cur kept; the rest comes from prev[from..] */
        long from = -1;
        for (size_t k = 1; p && !t->error && !p->error && k < t->count && from < 0; k++) {
            uint64_t a = cur->frames[t->first + k].frame_addr;
            if (a && (from = frame_with_addr(prev, p, a)) >= 0)
                keep = k;
        }
        for (size_t k = 0; k < keep; k++)
            if (cf_sample_add_frame(out, &cur->frames[t->first + k]))
                return CF_E_NOMEM;
        if (from < 0)
            continue;
        for (size_t j = (size_t)from; j < p->count; j++)
            if (cf_sample_add_frame(out, &prev->frames[p->first + j]))
                return CF_E_NOMEM;
        const cf_thread *o = &out->threads[out->nthreads - 1];
        changed += stacks_differ(out, o, cur, t);
    }
    return changed;
}
