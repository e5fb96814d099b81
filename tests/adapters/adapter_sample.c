/* adapter_sample.c — drives one adapter configuration by hand: attaches to
 * a running target, takes one sample and prints it as JSON in the shape of
 * `frameproof dump --json` (only the fields the sample reports), or the
 * adapter's error.  Used by test_austin.py at a parked checkpoint.
 *
 * Usage: adapter_sample UNWINDER MANIFEST INTERP_ID PID TIMEOUT
 * Exit status: 0 with the sample on stdout; 2 when the configuration does
 * not apply (reason on stdout); 3 when attach or sample failed (error on
 * stdout, "attach: " or "sample: " first); 1 on a usage or setup error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "adapter.h"
#include "conform.h"
#include "manifest.h"
#include "registry.h"
#include "sample.h"

#define MAX_DEFS 8u

static json_object *position(int32_t v)
{
    return v == CF_POS_NONE ? NULL : json_object_new_int(v);
}

static void put(json_object *o, const cf_sample *s, unsigned field, const char *key, json_object *v)
{
    if (s->fields & field)
        json_object_object_add(o, key, v);
    else
        json_object_put(v);
}

static json_object *sample_json(const cf_sample *s)
{
    json_object *threads = json_object_new_array();
    for (size_t i = 0; i < s->nthreads; i++) {
        const cf_thread *t = &s->threads[i];
        json_object *jt = json_object_new_object();
        json_object_object_add(jt, "interp_id", json_object_new_int64(t->interp_id));
        put(jt, s, CF_FIELD_NATIVE_ID, "native_id", json_object_new_uint64(t->native_id));
        put(jt, s, CF_FIELD_THREAD_ID, "thread_id", json_object_new_uint64(t->thread_id));
        put(jt, s, CF_FIELD_MAIN, "main", json_object_new_boolean(t->main));
        if (t->error)
            json_object_object_add(jt, "error", json_object_new_string(t->error));
        json_object *frames = json_object_new_array();
        for (size_t k = 0; k < t->count; k++) {
            const cf_frame *f = &s->frames[t->first + k];
            json_object *jf = json_object_new_object();
            put(jf, s, CF_FIELD_FUNCTION, "function", json_object_new_string(f->function));
            put(jf, s, CF_FIELD_NAME, "name", json_object_new_string(f->name));
            put(jf, s, CF_FIELD_FILE, "file", json_object_new_string(f->file));
            if (s->fields & CF_FIELD_LINE)
                json_object_object_add(jf, "line", position(f->line));
            if (s->fields & CF_FIELD_END_LINE)
                json_object_object_add(jf, "end_line", position(f->end_line));
            if (s->fields & CF_FIELD_COLUMN)
                json_object_object_add(jf, "column", position(f->column));
            if (s->fields & CF_FIELD_END_COLUMN)
                json_object_object_add(jf, "end_column", position(f->end_column));
            json_object_array_add(frames, jf);
        }
        json_object_object_add(jt, "frames", frames);
        json_object_array_add(threads, jt);
    }
    json_object *fields = json_object_new_array();
    for (unsigned b = 0; b < CF_FIELD_COUNT; b++)
        if (s->fields & (1u << b))
            json_object_array_add(fields, json_object_new_string(cf_field_name(1u << b)));
    json_object *root = json_object_new_object();
    json_object_object_add(root, "fields", fields);
    json_object_object_add(root, "threads", threads);
    return root;
}

int main(int argc, char **argv)
{
    char err[CF_ERRMSG_LEN], why[CF_ERRMSG_LEN];
    if (argc != 6) {
        fprintf(stderr, "usage: adapter_sample UNWINDER MANIFEST INTERP_ID PID TIMEOUT\n");
        return 1;
    }
    cf_manifest m;
    if (cf_manifest_load(argv[2], &m, err, sizeof err) != CF_OK) {
        fprintf(stderr, "adapter_sample: %s\n", err);
        return 1;
    }
    long idx = cf_manifest_find(&m, argv[3]);
    if (idx < 0) {
        fprintf(stderr, "adapter_sample: no interpreter %s in the manifest\n", argv[3]);
        cf_manifest_free(&m);
        return 1;
    }
    cf_adapter_opts opts = {0};
    cf_adapter_def defs[MAX_DEFS];
    size_t n = 0;
    if (strcmp(argv[1], "austin") == 0)
        n = cf_austin_defs(defs, MAX_DEFS, &opts);
    if (n == 0) {
        fprintf(stderr, "adapter_sample: unknown unwinder %s\n", argv[1]);
        cf_manifest_free(&m);
        return 1;
    }
    const cf_adapter_def *d = &defs[0];
    const cf_interp *in = &m.items[idx];
    cf_target t = {.pid = atoi(argv[4]), .interp = in, .timeout = atof(argv[5])};
    int status = 0;
    const char *reason = d->applies ? d->applies(d, in, why, sizeof why) : NULL;
    if (reason) {
        printf("%s\n", reason);
        cf_manifest_free(&m);
        return 2;
    }
    void *state = NULL;
    int rc = d->attach(d, &t, &state, err, sizeof err);
    if (rc != CF_OK) {
        printf("attach: %s (%s)\n", err, cf_strerror(rc));
        cf_manifest_free(&m);
        return 3;
    }
    cf_sample s;
    cf_sample_init(&s);
    cf_sample_reset(&s, d->fields);
    rc = d->sample(state, &s, err, sizeof err);
    if (rc == CF_OK) {
        json_object *j = sample_json(&s);
        printf("%s\n", json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN));
        json_object_put(j);
    } else {
        printf("sample: %s (%s)\n", err, cf_strerror(rc));
        status = 3;
    }
    d->detach(state);
    cf_sample_free(&s);
    cf_manifest_free(&m);
    return status;
}
