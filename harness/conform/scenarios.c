/* scenarios.c — loads targets/scenarios/index.json:
 * {"scenarios":[{"name","file","min_version","max_version","builds",
 *   "timeout","fast","description", optional "modules"}]}; also
 * targets/live/index.json, whose entries add "declaration". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "scenarios.h"
#include "conform.h"
#include "util.h"

static void scenario_free(cf_scenario *s)
{
    free(s->name);
    free(s->file);
    free(s->description);
    free(s->declaration);
    free(s->modules);
    memset(s, 0, sizeof *s);
}

void cf_index_free(cf_index *ix)
{
    for (size_t i = 0; i < ix->count; i++)
        scenario_free(&ix->items[i]);
    free(ix->items);
    ix->items = NULL;
    ix->count = 0;
}

long cf_index_find(const cf_index *ix, const char *name)
{
    for (size_t i = 0; i < ix->count; i++)
        if (strcmp(ix->items[i].name, name) == 0)
            return (long)i;
    return -1;
}

/* A scenario file must stay inside targets/scenarios. */
static bool safe_relative(const char *f)
{
    if (!*f || f[0] == '/')
        return false;
    for (const char *p = f; *p;) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if ((n == 2 && p[0] == '.' && p[1] == '.') || n == 0)
            return false;
        p += n + (slash ? 1 : 0);
    }
    return true;
}

static int parse_entry(json_object *e, cf_scenario *s, char *err, size_t errlen)
{
    const char *name = cf_json_str(e, "name", NULL);
    const char *file = cf_json_str(e, "file", NULL);
    const char *minv = cf_json_str(e, "min_version", "3.11");
    const char *maxv = cf_json_str(e, "max_version", NULL);
    const char *builds = cf_json_str(e, "builds", "any");
    if (!name || !*name) {
        snprintf(err, errlen, "a scenario has no \"name\"");
        return CF_E_FORMAT;
    }
    if (!file || !safe_relative(file)) {
        snprintf(err, errlen, "scenario %s: missing or unsafe \"file\"", name);
        return CF_E_FORMAT;
    }
    if (cf_parse_version(minv, &s->min_major, &s->min_minor)) {
        snprintf(err, errlen, "scenario %s: invalid \"min_version\"", name);
        return CF_E_FORMAT;
    }
    if (maxv) {
        if (cf_parse_version(maxv, &s->max_major, &s->max_minor)) {
            snprintf(err, errlen, "scenario %s: invalid \"max_version\"", name);
            return CF_E_FORMAT;
        }
        s->has_max = true;
    }
    if (strcmp(builds, "any") == 0)
        s->builds = CF_BUILDS_ANY;
    else if (strcmp(builds, "gil") == 0)
        s->builds = CF_BUILDS_GIL;
    else if (strcmp(builds, "ft") == 0)
        s->builds = CF_BUILDS_FT;
    else {
        snprintf(err, errlen, "scenario %s: \"builds\" must be any, gil or ft", name);
        return CF_E_FORMAT;
    }
    s->timeout = cf_json_double(e, "timeout", CF_DEFAULT_SCENARIO_TIMEOUT);
    if (!(s->timeout > 0)) {
        snprintf(err, errlen, "scenario %s: \"timeout\" must be positive", name);
        return CF_E_FORMAT;
    }
    s->fast = cf_json_bool(e, "fast", false);
    char what[CF_REASON_LEN];
    snprintf(what, sizeof what, "scenario %s", name);
    int rc = cf_json_names(e, "modules", what, &s->modules, err, errlen);
    if (rc)
        return rc;
    const char *decl = cf_json_str(e, "declaration", NULL);
    if (decl && !safe_relative(decl)) {
        snprintf(err, errlen, "scenario %s: unsafe \"declaration\"", name);
        return CF_E_FORMAT;
    }
    if (decl && !(s->declaration = strdup(decl))) {
        snprintf(err, errlen, "out of memory");
        return CF_E_NOMEM;
    }
    s->name = strdup(name);
    s->file = strdup(file);
    s->description = strdup(cf_json_str(e, "description", ""));
    if (!s->name || !s->file || !s->description) {
        snprintf(err, errlen, "out of memory");
        return CF_E_NOMEM;
    }
    return CF_OK;
}

int cf_index_load(const char *path, cf_index *out, char *err, size_t errlen)
{
    json_object *root = NULL;
    memset(out, 0, sizeof *out);
    int rc = cf_json_read_file(path, &root, err, errlen);
    if (rc)
        return rc;
    json_object *list = cf_json_array(root, "scenarios");
    if (!list) {
        snprintf(err, errlen, "%s: no \"scenarios\" array", path);
        rc = CF_E_FORMAT;
        goto out;
    }
    size_t n = json_object_array_length(list);
    out->items = calloc(n ? n : 1, sizeof *out->items);
    if (!out->items) {
        snprintf(err, errlen, "out of memory");
        rc = CF_E_NOMEM;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(list, i);
        char why[CF_REASON_LEN] = "";
        out->count = i + 1;
        if (!json_object_is_type(e, json_type_object)) {
            snprintf(err, errlen, "%s: entry %zu is not an object", path, i);
            rc = CF_E_FORMAT;
            goto out;
        }
        rc = parse_entry(e, &out->items[i], why, sizeof why);
        if (rc) {
            snprintf(err, errlen, "%s: %s", path, why);
            goto out;
        }
        if (cf_index_find(out, out->items[i].name) != (long)i) {
            snprintf(err, errlen, "%s: duplicate scenario \"%s\"", path, out->items[i].name);
            rc = CF_E_FORMAT;
            goto out;
        }
    }
out:
    json_object_put(root);
    if (rc)
        cf_index_free(out);
    return rc;
}

static int version_cmp(int a_major, int a_minor, int b_major, int b_minor)
{
    if (a_major != b_major)
        return a_major < b_major ? -1 : 1;
    if (a_minor != b_minor)
        return a_minor < b_minor ? -1 : 1;
    return 0;
}

const char *cf_scenario_skip_reason(const cf_scenario *s, const cf_interp *in, char *buf, size_t len)
{
    if (version_cmp(in->major, in->minor, s->min_major, s->min_minor) < 0) {
        snprintf(buf, len, "needs Python >= %d.%d", s->min_major, s->min_minor);
        return buf;
    }
    if (s->has_max && version_cmp(in->major, in->minor, s->max_major, s->max_minor) > 0) {
        snprintf(buf, len, "needs Python <= %d.%d", s->max_major, s->max_minor);
        return buf;
    }
    if (s->builds == CF_BUILDS_GIL && in->free_threaded) {
        snprintf(buf, len, "GIL builds only");
        return buf;
    }
    if (s->builds == CF_BUILDS_FT && !in->free_threaded) {
        snprintf(buf, len, "free-threaded builds only");
        return buf;
    }
    const char *cursor = s->modules;
    size_t n;
    for (const char *p; (p = cf_names_next(&cursor, &n));) {
        if (!in->modules) {
            snprintf(buf, len, "needs module %.*s, and the manifest does not say whether %s has it "
                     "(targets/provision --check-only writes it)", (int)n, p, in->id ? in->id : "the interpreter");
            return buf;
        }
        char name[CF_REASON_LEN];
        snprintf(name, sizeof name, "%.*s", (int)n, p);
        if (!cf_names_have(in->modules, name)) {
            snprintf(buf, len, "needs module %s, not installed for this interpreter", name);
            return buf;
        }
    }
    return NULL;
}
