/* manifest.c — loads and validates interpreters.json:
 * {"interpreters":[{"id","version","free_threaded","debug","root","argv",
 * optional "jit", "env" and "modules"}]}. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "manifest.h"
#include "conform.h"
#include "util.h"

int cf_parse_version(const char *s, int *major, int *minor)
{
    char *end;
    if (!s || *s < '0' || *s > '9')
        return CF_E_FORMAT;
    errno = 0;
    long a = strtol(s, &end, 10);
    if (errno || *end != '.' || a > 99 || end[1] < '0' || end[1] > '9')
        return CF_E_FORMAT;
    long b = strtol(end + 1, &end, 10);
    if (errno || b > 999)
        return CF_E_FORMAT;
    *major = (int)a;
    *minor = (int)b;
    return CF_OK;
}

bool cf_interp_untested(const cf_interp *in)
{
    return in->major > (int)FP_FACT_PY_MAJOR || (in->major == (int)FP_FACT_PY_MAJOR && in->minor > (int)FP_FACT_PY_MINOR_MAX);
}

bool cf_interp_chrooted(const cf_interp *in)
{
    return strcmp(in->root, "/") != 0;
}

static void interp_free(cf_interp *in)
{
    free(in->id);
    free(in->version);
    free(in->root);
    free(in->modules);
    if (in->argv) {
        for (size_t i = 0; i < in->argc; i++)
            free(in->argv[i]);
        free(in->argv);
    }
    if (in->env) {
        for (size_t i = 0; i < in->envc; i++)
            free(in->env[i]);
        free(in->env);
    }
    memset(in, 0, sizeof *in);
}

void cf_manifest_free(cf_manifest *m)
{
    for (size_t i = 0; i < m->count; i++)
        interp_free(&m->items[i]);
    free(m->items);
    m->items = NULL;
    m->count = 0;
}

long cf_manifest_find(const cf_manifest *m, const char *id)
{
    for (size_t i = 0; i < m->count; i++)
        if (strcmp(m->items[i].id, id) == 0)
            return (long)i;
    return -1;
}

static int dup_str(const char *s, char **out)
{
    *out = strdup(s);
    return *out ? CF_OK : CF_E_NOMEM;
}

/* "env": an object whose every value is a string; its names are non-empty
 * and hold no '=' (each becomes one NAME=VALUE string, in the object's
 * order).  Absent means an empty list. */
static int parse_env(json_object *e, const char *id, cf_interp *in, char *err, size_t errlen)
{
    json_object *env = NULL;
    size_t n = 0;
    if (json_object_object_get_ex(e, "env", &env)) {
        if (!json_object_is_type(env, json_type_object)) {
            snprintf(err, errlen, "interpreter %s: \"env\" must be an object", id);
            return CF_E_FORMAT;
        }
        n = (size_t)json_object_object_length(env);
    }
    in->env = calloc(n + 1, sizeof *in->env);
    if (!in->env)
        goto nomem;
    if (n == 0)
        return CF_OK;
    json_object_object_foreach(env, name, value)
    {
        if (!*name || strchr(name, '=')) {
            snprintf(err, errlen, "interpreter %s: \"env\" name \"%s\" is empty or holds '='", id, name);
            return CF_E_FORMAT;
        }
        if (!json_object_is_type(value, json_type_string)) {
            snprintf(err, errlen, "interpreter %s: \"env\" value of %s must be a string", id, name);
            return CF_E_FORMAT;
        }
        const char *v = json_object_get_string(value);
        size_t len = strlen(name) + 1 + strlen(v) + 1;
        char *kv = malloc(len);
        if (!kv)
            goto nomem;
        snprintf(kv, len, "%s=%s", name, v);
        in->env[in->envc++] = kv;
    }
    return CF_OK;
nomem:
    snprintf(err, errlen, "out of memory");
    return CF_E_NOMEM;
}

static int parse_entry(json_object *e, size_t idx, cf_interp *in, char *err, size_t errlen)
{
    const char *id = cf_json_str(e, "id", NULL);
    const char *version = cf_json_str(e, "version", NULL);
    const char *root = cf_json_str(e, "root", "/");
    json_object *argv = cf_json_array(e, "argv");
    if (!id || !*id) {
        snprintf(err, errlen, "entry %zu: missing \"id\"", idx);
        return CF_E_FORMAT;
    }
    if (!version || cf_parse_version(version, &in->major, &in->minor)) {
        snprintf(err, errlen, "interpreter %s: missing or invalid \"version\"", id);
        return CF_E_FORMAT;
    }
    if (root[0] != '/') {
        snprintf(err, errlen, "interpreter %s: \"root\" must be an absolute path", id);
        return CF_E_FORMAT;
    }
    size_t argc = argv ? json_object_array_length(argv) : 0;
    if (argc == 0) {
        snprintf(err, errlen, "interpreter %s: \"argv\" must be a non-empty array", id);
        return CF_E_FORMAT;
    }
    in->free_threaded = cf_json_bool(e, "free_threaded", false);
    in->debug = cf_json_bool(e, "debug", false);
    in->jit = cf_json_bool(e, "jit", false);
    if (dup_str(id, &in->id) || dup_str(version, &in->version) || dup_str(root, &in->root))
        goto nomem;
    in->argv = calloc(argc + 1, sizeof *in->argv);
    if (!in->argv)
        goto nomem;
    for (size_t i = 0; i < argc; i++) {
        json_object *a = json_object_array_get_idx(argv, i);
        if (!json_object_is_type(a, json_type_string)) {
            snprintf(err, errlen, "interpreter %s: \"argv\" must hold strings", id);
            return CF_E_FORMAT;
        }
        if (dup_str(json_object_get_string(a), &in->argv[i]))
            goto nomem;
        in->argc = i + 1;
    }
    char what[CF_REASON_LEN];
    snprintf(what, sizeof what, "interpreter %s", id);
    int rc = cf_json_names(e, "modules", what, &in->modules, err, errlen);
    return rc ? rc : parse_env(e, id, in, err, errlen);
nomem:
    snprintf(err, errlen, "out of memory");
    return CF_E_NOMEM;
}

int cf_manifest_default_path(char *out, size_t len)
{
    const char *home = getenv("FRAMEPROOF_HOME");
    if (!home || !*home)
        home = CF_DEFAULT_HOME;
    return cf_path_join(out, len, home, CF_MANIFEST_NAME);
}

int cf_manifest_add(cf_manifest *m, json_object *e, char *err, size_t errlen)
{
    if (!json_object_is_type(e, json_type_object)) {
        snprintf(err, errlen, "entry %zu is not an object", m->count);
        return CF_E_FORMAT;
    }
    cf_interp *items = realloc(m->items, (m->count + 1) * sizeof *items);
    if (!items) {
        snprintf(err, errlen, "out of memory");
        return CF_E_NOMEM;
    }
    m->items = items;
    cf_interp *in = &m->items[m->count++];
    memset(in, 0, sizeof *in);
    int rc = parse_entry(e, m->count - 1, in, err, errlen);
    for (size_t k = 0; rc == CF_OK && k + 1 < m->count; k++) {
        if (strcmp(m->items[k].id, in->id) == 0) {
            snprintf(err, errlen, "duplicate interpreter id \"%s\"", in->id);
            rc = CF_E_FORMAT;
        }
    }
    if (rc) {
        interp_free(in);
        m->count--;
    }
    return rc;
}

int cf_manifest_load(const char *path, cf_manifest *out, char *err, size_t errlen)
{
    json_object *root = NULL;
    memset(out, 0, sizeof *out);
    int rc = cf_json_read_file(path, &root, err, errlen);
    if (rc)
        return rc;
    json_object *list = cf_json_array(root, "interpreters");
    if (!list) {
        snprintf(err, errlen, "%s: no \"interpreters\" array", path);
        rc = CF_E_FORMAT;
        goto out;
    }
    for (size_t i = 0; i < json_object_array_length(list) && rc == CF_OK; i++) {
        char why[CF_REASON_LEN] = "";
        rc = cf_manifest_add(out, json_object_array_get_idx(list, i), why, sizeof why);
        if (rc)
            snprintf(err, errlen, "%s: %s", path, why);
    }
out:
    json_object_put(root);
    if (rc)
        cf_manifest_free(out);
    return rc;
}
