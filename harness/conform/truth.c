/* truth.c — decodes checkpoint messages (THREAD and FRAME objects
 * of the protocol) into cf_truth. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "truth.h"
#include "conform.h"
#include "util.h"

static json_object *get(json_object *o, const char *key)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, key, &v))
        return NULL;
    return v;
}

static bool has(json_object *o, const char *key)
{
    return json_object_object_get_ex(o, key, NULL);
}

static int get_u64(json_object *o, const char *key, uint64_t *out)
{
    json_object *v = get(o, key);
    if (!v || !json_object_is_type(v, json_type_int))
        return CF_E_FORMAT;
    if (json_object_get_int64(v) < 0)
        return CF_E_FORMAT;
    *out = json_object_get_uint64(v);
    return CF_OK;
}

/* A position: an int or null (CF_POS_NONE). */
static int get_pos(json_object *o, const char *key, int32_t *out)
{
    if (!has(o, key))
        return CF_E_FORMAT;
    return cf_json_int32(get(o, key), CF_POS_NONE, out);
}

static int parse_frame(json_object *f, cf_frame *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->function = cf_json_str(f, "function", NULL);
    out->name = cf_json_str(f, "name", NULL);
    out->file = cf_json_str(f, "file", NULL);
    const char *kind = cf_json_str(f, "kind", NULL);
    if (!out->function || !out->name || !out->file || !kind) {
        snprintf(err, errlen, "frame lacks function, name, file or kind");
        return CF_E_FORMAT;
    }
    if (strcmp(kind, "python") == 0)
        out->kind = CF_KIND_PYTHON;
    else if (strcmp(kind, "generator") == 0)
        out->kind = CF_KIND_GENERATOR;
    else {
        snprintf(err, errlen, "frame kind \"%s\" is neither python nor generator", kind);
        return CF_E_FORMAT;
    }
    if (get_pos(f, "line", &out->line) || get_pos(f, "end_line", &out->end_line) ||
        get_pos(f, "column", &out->column) || get_pos(f, "end_column", &out->end_column)) {
        snprintf(err, errlen, "frame %s: line, end_line, column and end_column must be integers or null",
                 out->function);
        return CF_E_FORMAT;
    }
    return CF_OK;
}

static int parse_thread(json_object *t, cf_truth_thread *out, char *err, size_t errlen)
{
    json_object *frames = cf_json_array(t, "frames");
    json_object *m = get(t, "main"), *e = get(t, "exception");
    if (get_u64(t, "native_id", &out->native_id) || get_u64(t, "thread_id", &out->thread_id) || !frames ||
        !m || !json_object_is_type(m, json_type_boolean) || !e || !json_object_is_type(e, json_type_boolean)) {
        snprintf(err, errlen, "thread lacks native_id, thread_id, main, exception or frames");
        return CF_E_FORMAT;
    }
    out->main = json_object_get_boolean(m);
    out->exception = json_object_get_boolean(e);
    size_t n = json_object_array_length(frames);
    out->frames = calloc(n ? n : 1, sizeof *out->frames);
    if (!out->frames) {
        snprintf(err, errlen, "out of memory");
        return CF_E_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        json_object *f = json_object_array_get_idx(frames, i);
        if (!json_object_is_type(f, json_type_object)) {
            snprintf(err, errlen, "thread %llu: frame %zu is not an object", (unsigned long long)out->native_id, i);
            return CF_E_FORMAT;
        }
        char why[CF_REASON_LEN / 2];
        int rc = parse_frame(f, &out->frames[i], why, sizeof why);
        if (rc) {
            snprintf(err, errlen, "thread %llu: frame %zu: %s", (unsigned long long)out->native_id, i, why);
            return rc;
        }
        out->nframes = i + 1;
    }
    return CF_OK;
}

int cf_truth_parse(json_object *msg, cf_truth *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->name = cf_json_str(msg, "name", NULL);
    out->seq = cf_json_int(msg, "seq", -1);
    json_object *threads = cf_json_array(msg, "threads");
    json_object *all = cf_json_array(msg, "all_threads");
    int rc = CF_E_FORMAT;
    if (!out->name || !threads || !all) {
        snprintf(err, errlen, "checkpoint lacks name, threads or all_threads");
        goto fail;
    }
    size_t nt = json_object_array_length(threads), na = json_object_array_length(all);
    out->threads = calloc(nt ? nt : 1, sizeof *out->threads);
    out->all_ids = calloc(na ? na : 1, sizeof *out->all_ids);
    if (!out->threads || !out->all_ids) {
        rc = CF_E_NOMEM;
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < nt; i++) {
        json_object *t = json_object_array_get_idx(threads, i);
        char why[CF_REASON_LEN];
        out->nthreads = i + 1;
        if (!json_object_is_type(t, json_type_object)) {
            snprintf(err, errlen, "checkpoint %s: thread %zu is not an object", out->name, i);
            goto fail;
        }
        rc = parse_thread(t, &out->threads[i], why, sizeof why);
        if (rc) {
            snprintf(err, errlen, "checkpoint %s: %s", out->name, why);
            goto fail;
        }
        rc = CF_E_FORMAT;
    }
    for (size_t i = 0; i < na; i++) {
        json_object *t = json_object_array_get_idx(all, i);
        if (!json_object_is_type(t, json_type_object) || get_u64(t, "native_id", &out->all_ids[i])) {
            snprintf(err, errlen, "checkpoint %s: all_threads[%zu] lacks native_id", out->name, i);
            goto fail;
        }
        out->nall = i + 1;
    }
    return CF_OK;
fail:
    cf_truth_free(out);
    return rc;
}

void cf_truth_free(cf_truth *t)
{
    for (size_t i = 0; i < t->nthreads; i++)
        free(t->threads[i].frames);
    free(t->threads);
    free(t->all_ids);
    memset(t, 0, sizeof *t);
}

const cf_truth_thread *cf_truth_find(const cf_truth *t, uint64_t native_id)
{
    for (size_t i = 0; i < t->nthreads; i++)
        if (t->threads[i].native_id == native_id)
            return &t->threads[i];
    return NULL;
}
