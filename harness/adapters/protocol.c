/* protocol.c — parses an unwinder-command protocol document into a
 * cf_sample: lexical checks json-c does not make, the lone-surrogate
 * rewrite shared with the ground-truth channel, then every interpreter,
 * thread and frame with strict types, and the rule that a key is on every
 * thread (frame) of the document or on none (see protocol.h). */
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "channel.h"
#include "conform.h"
#include "protocol.h"
#include "strbuf.h"

typedef struct key_def {
    const char *key;
    unsigned field;
} key_def;

static const key_def FRAME_KEYS[] = {
    {"function", CF_FIELD_FUNCTION}, {"name", CF_FIELD_NAME},       {"file", CF_FIELD_FILE},
    {"line", CF_FIELD_LINE},         {"end_line", CF_FIELD_END_LINE}, {"column", CF_FIELD_COLUMN},
    {"end_column", CF_FIELD_END_COLUMN}, {"kind", CF_FIELD_KIND},
};
#define NFRAME_KEYS (sizeof FRAME_KEYS / sizeof FRAME_KEYS[0])

/* "exception" is looked up inside "status". */
static const key_def THREAD_KEYS[] = {
    {"native_id", CF_FIELD_NATIVE_ID}, {"thread_id", CF_FIELD_THREAD_ID},
    {"main", CF_FIELD_MAIN},           {"status.exception", CF_FIELD_EXCEPTION},
};
#define NTHREAD_KEYS (sizeof THREAD_KEYS / sizeof THREAD_KEYS[0])

typedef struct parse_ctx {
    cf_sample *out;
    char *err;
    size_t errlen;
    unsigned thread_keys, frame_keys;  /* keys of the first thread / frame */
    bool have_thread, have_frame;
    char first_thread[CF_PROTOCOL_PATH_LEN];
    char first_frame[CF_PROTOCOL_PATH_LEN];
} parse_ctx;

__attribute__((format(printf, 3, 4))) static int fail(parse_ctx *c, const char *path, const char *fmt, ...)
{
    int n = snprintf(c->err, c->errlen, "%s: ", path);
    if (n >= 0 && (size_t)n < c->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return CF_E_FORMAT;
}

/* Writes a JSON path (out has CF_PROTOCOL_PATH_LEN bytes; the longest
 * path, every index 20 digits long, fits). */
__attribute__((format(printf, 2, 3))) static void path_printf(char *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, CF_PROTOCOL_PATH_LEN, fmt, ap);
    va_end(ap);
}

/* "a string", "an integer", ... for messages. */
static const char *type_desc(json_object *v)
{
    switch (json_object_get_type(v)) {
    case json_type_null: return "null";
    case json_type_boolean: return "a boolean";
    case json_type_double: return "a number with a fraction or an exponent";
    case json_type_int: return "an integer";
    case json_type_object: return "an object";
    case json_type_array: return "an array";
    case json_type_string: return "a string";
    }
    return "an unknown value";
}

/* Checks JSON's lexical rules that json-c's tokener relaxes even when
 * strict: single-quoted strings and raw control characters in strings. */
static int lexical_check(const char *s, size_t len, parse_ctx *c)
{
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (in_string) {
            if (ch == '\\')
                i++;
            else if (ch == '"')
                in_string = false;
            else if (ch < 0x20)
                return fail(c, "$", "not JSON: raw control character 0x%02x inside a string at byte %zu "
                                    "(JSON writes it as a \\u escape)", ch, i);
        } else if (ch == '"') {
            in_string = true;
        } else if (ch == '\'') {
            return fail(c, "$", "not JSON: single quote at byte %zu (JSON strings take double quotes; "
                                "was this printed with repr() instead of a JSON encoder?)", i);
        }
    }
    return CF_OK;
}

/* A string value: UTF-8 (lone surrogates in their 3-byte encoding
 * allowed), no NUL, interned into the sample. */
static int get_string(parse_ctx *c, json_object *v, const char *path, const char **out)
{
    if (!json_object_is_type(v, json_type_string))
        return fail(c, path, "expected a string, got %s", type_desc(v));
    const char *s = json_object_get_string(v);
    size_t n = (size_t)json_object_get_string_len(v);
    if (strlen(s) != n)
        return fail(c, path, "the string holds a NUL character (\\u0000) at offset %zu", strlen(s));
    for (size_t i = 0; i < n;) {
        size_t k = cf_utf8_seq_len((const unsigned char *)s + i, n - i, true);
        if (k == 0)
            return fail(c, path, "the string is not valid UTF-8 (byte 0x%02x at offset %zu)",
                        (unsigned char)s[i], i);
        i += k;
    }
    *out = cf_sample_intern(c->out, s, n);
    if (!*out) {
        snprintf(c->err, c->errlen, "out of memory");
        return CF_E_NOMEM;
    }
    return CF_OK;
}

/* An unsigned 64-bit integer (json-c saturates larger numbers, so the
 * largest value is taken for an overflow and refused). */
static int get_u64(parse_ctx *c, json_object *v, const char *path, uint64_t *out)
{
    if (!json_object_is_type(v, json_type_int))
        return fail(c, path, "expected a non-negative integer, got %s", type_desc(v));
    if (json_object_get_int64(v) < 0)
        return fail(c, path, "expected a non-negative integer, got %" PRId64, json_object_get_int64(v));
    uint64_t u = json_object_get_uint64(v);
    if (u == UINT64_MAX)
        return fail(c, path, "integer out of range (largest accepted: %" PRIu64 ")", UINT64_MAX - 1);
    *out = u;
    return CF_OK;
}

/* A position: an integer in 0 .. INT32_MAX, or null (CF_POS_NONE). */
static int get_position(parse_ctx *c, json_object *v, const char *path, int32_t *out)
{
    if (json_object_is_type(v, json_type_null)) {
        *out = CF_POS_NONE;
        return CF_OK;
    }
    if (!json_object_is_type(v, json_type_int))
        return fail(c, path, "expected an integer or null, got %s", type_desc(v));
    int64_t x = json_object_get_int64(v);
    if (x < 0 || x > INT32_MAX)
        return fail(c, path, "position %" PRId64 " out of range (0 .. %d, or null for None)", x, INT32_MAX);
    *out = (int32_t)x;
    return CF_OK;
}

static int get_bool(parse_ctx *c, json_object *v, const char *path, bool *out)
{
    if (!json_object_is_type(v, json_type_boolean))
        return fail(c, path, "expected true or false, got %s", type_desc(v));
    *out = json_object_get_boolean(v);
    return CF_OK;
}

/* Checks that obj has the same keys as the first object of its kind. */
static int same_keys(parse_ctx *c, const key_def *keys, size_t nkeys, unsigned have, bool *seen,
                     unsigned *first_keys, char *first_path, const char *path, const char *what)
{
    if (!*seen) {
        *seen = true;
        *first_keys = have;
        snprintf(first_path, CF_PROTOCOL_PATH_LEN, "%s", path);
        return CF_OK;
    }
    for (size_t i = 0; i < nkeys; i++) {
        unsigned f = keys[i].field;
        if ((have & f) == (*first_keys & f))
            continue;
        if (have & f)
            return fail(c, path, "has a \"%s\" key but %s has none (a key is on every %s of the document or on "
                                 "none)", keys[i].key, first_path, what);
        return fail(c, path, "has no \"%s\" key but %s has one (a key is on every %s of the document or on none)",
                    keys[i].key, first_path, what);
    }
    return CF_OK;
}

static int parse_frame(parse_ctx *c, json_object *fo, const char *path)
{
    if (!json_object_is_type(fo, json_type_object))
        return fail(c, path, "expected a frame object, got %s", type_desc(fo));
    json_object *vals[NFRAME_KEYS];
    unsigned have = 0;
    for (size_t i = 0; i < NFRAME_KEYS; i++)
        if (json_object_object_get_ex(fo, FRAME_KEYS[i].key, &vals[i]))
            have |= FRAME_KEYS[i].field;
    int rc = same_keys(c, FRAME_KEYS, NFRAME_KEYS, have, &c->have_frame, &c->frame_keys, c->first_frame, path,
                       "frame");
    if (rc)
        return rc;
    cf_frame f = {.function = "", .name = "", .file = "", .line = CF_POS_NONE, .end_line = CF_POS_NONE,
                  .column = CF_POS_NONE, .end_column = CF_POS_NONE, .kind = CF_KIND_PYTHON};
    const char **strs[] = {&f.function, &f.name, &f.file};
    int32_t *pos[] = {&f.line, &f.end_line, &f.column, &f.end_column};
    char vpath[CF_PROTOCOL_PATH_LEN];
    for (size_t i = 0; i < NFRAME_KEYS; i++) {
        if (!(have & FRAME_KEYS[i].field))
            continue;
        path_printf(vpath, "%s.%s", path, FRAME_KEYS[i].key);
        if (i < 3) {
            rc = get_string(c, vals[i], vpath, strs[i]);
        } else if (i < 7) {
            rc = get_position(c, vals[i], vpath, pos[i - 3]);
        } else {
            const char *kind = NULL;
            rc = get_string(c, vals[i], vpath, &kind);
            if (rc == CF_OK && strcmp(kind, "python") == 0) {
                f.kind = CF_KIND_PYTHON;
            } else if (rc == CF_OK && strcmp(kind, "generator") == 0) {
                f.kind = CF_KIND_GENERATOR;
            } else if (rc == CF_OK) {
                cf_strbuf sb;
                cf_sb_init(&sb);
                cf_sb_put_clipped(&sb, kind, CF_NAME_SHOWN);
                rc = fail(c, vpath, "expected \"python\" or \"generator\", got \"%s\"", cf_sb_str(&sb));
                cf_sb_free(&sb);
            }
        }
        if (rc)
            return rc;
    }
    if (cf_sample_add_frame(c->out, &f) != CF_OK) {
        snprintf(c->err, c->errlen, "out of memory");
        return CF_E_NOMEM;
    }
    return CF_OK;
}

static int parse_thread(parse_ctx *c, json_object *to, int64_t interp_id, const char *path)
{
    if (!json_object_is_type(to, json_type_object))
        return fail(c, path, "expected a thread object, got %s", type_desc(to));
    char vpath[CF_PROTOCOL_PATH_LEN];
    json_object *vals[NTHREAD_KEYS] = {NULL};
    unsigned have = 0;
    json_object *status = NULL;
    if (json_object_object_get_ex(to, "status", &status)) {
        path_printf(vpath, "%s.status", path);
        if (!json_object_is_type(status, json_type_object))
            return fail(c, vpath, "expected an object, got %s", type_desc(status));
    }
    for (size_t i = 0; i < NTHREAD_KEYS; i++) {
        bool in_status = THREAD_KEYS[i].field == CF_FIELD_EXCEPTION;
        json_object *holder = in_status ? status : to;
        const char *key = in_status ? "exception" : THREAD_KEYS[i].key;
        if (holder && json_object_object_get_ex(holder, key, &vals[i]))
            have |= THREAD_KEYS[i].field;
    }
    int rc = same_keys(c, THREAD_KEYS, NTHREAD_KEYS, have, &c->have_thread, &c->thread_keys, c->first_thread,
                       path, "thread");
    if (rc)
        return rc;
    cf_thread t = {.interp_id = interp_id, .exception = CF_UNKNOWN};
    for (size_t i = 0; i < NTHREAD_KEYS && rc == CF_OK; i++) {
        if (!(have & THREAD_KEYS[i].field))
            continue;
        path_printf(vpath, "%s.%s", path, THREAD_KEYS[i].key);
        switch (THREAD_KEYS[i].field) {
        case CF_FIELD_NATIVE_ID:
            rc = get_u64(c, vals[i], vpath, &t.native_id);
            break;
        case CF_FIELD_THREAD_ID:
            rc = get_u64(c, vals[i], vpath, &t.thread_id);
            break;
        case CF_FIELD_MAIN:
            rc = get_bool(c, vals[i], vpath, &t.main);
            break;
        default: /* status.exception: true, false or null (not known) */
            if (json_object_is_type(vals[i], json_type_boolean))
                t.exception = json_object_get_boolean(vals[i]) ? CF_YES : CF_NO;
            else if (!json_object_is_type(vals[i], json_type_null))
                rc = fail(c, vpath, "expected true, false or null, got %s", type_desc(vals[i]));
        }
    }
    if (rc)
        return rc;
    json_object *error = NULL, *frames = NULL;
    bool has_frames = json_object_object_get_ex(to, "frames", &frames);
    if (json_object_object_get_ex(to, "error", &error)) {
        path_printf(vpath, "%s.error", path);
        if ((rc = get_string(c, error, vpath, &t.error)) != CF_OK)
            return rc;
    }
    path_printf(vpath, "%s.frames", path);
    if (has_frames && !json_object_is_type(frames, json_type_array))
        return fail(c, vpath, "expected an array of frames, got %s", type_desc(frames));
    if (t.error && has_frames && json_object_array_length(frames) > 0)
        return fail(c, vpath, "a thread with an \"error\" has no frames (its stack is never shortened or "
                              "guessed), got %zu", json_object_array_length(frames));
    if (!t.error && !has_frames)
        return fail(c, path, "no \"frames\" key (a thread has a \"frames\" array unless it has an \"error\")");
    if (cf_sample_add_thread(c->out, &t, NULL) != CF_OK) {
        snprintf(c->err, c->errlen, "out of memory");
        return CF_E_NOMEM;
    }
    size_t n = has_frames ? json_object_array_length(frames) : 0;
    for (size_t i = 0; i < n; i++) {
        char fpath[CF_PROTOCOL_PATH_LEN];
        path_printf(fpath, "%s.frames[%zu]", path, i);
        if ((rc = parse_frame(c, json_object_array_get_idx(frames, i), fpath)) != CF_OK)
            return rc;
    }
    return CF_OK;
}

/* *all_threads: the top-level "all_threads" (enum cf_tristate). */
static int parse_document(parse_ctx *c, json_object *root, int *all_threads)
{
    if (!json_object_is_type(root, json_type_object))
        return fail(c, "$", "expected a JSON object, got %s", type_desc(root));
    json_object *v = NULL;
    *all_threads = CF_UNKNOWN;
    if (json_object_object_get_ex(root, "all_threads", &v)) {
        bool b = false;
        int rc = get_bool(c, v, "$.all_threads", &b);
        if (rc)
            return rc;
        *all_threads = b ? CF_YES : CF_NO;
    }
    json_object *interps = NULL;
    if (!json_object_object_get_ex(root, "interpreters", &interps))
        return fail(c, "$", "no \"interpreters\" key");
    if (!json_object_is_type(interps, json_type_array))
        return fail(c, "$.interpreters", "expected an array, got %s", type_desc(interps));
    for (size_t i = 0; i < json_object_array_length(interps); i++) {
        json_object *io = json_object_array_get_idx(interps, i);
        char path[CF_PROTOCOL_PATH_LEN], vpath[CF_PROTOCOL_PATH_LEN];
        path_printf(path, "$.interpreters[%zu]", i);
        if (!json_object_is_type(io, json_type_object))
            return fail(c, path, "expected an interpreter object, got %s", type_desc(io));
        int64_t id = (int64_t)i;
        if (json_object_object_get_ex(io, "id", &v)) {
            path_printf(vpath, "%s.id", path);
            if (!json_object_is_type(v, json_type_int))
                return fail(c, vpath, "expected an integer, got %s", type_desc(v));
            id = json_object_get_int64(v);
        }
        json_object *threads = NULL;
        if (!json_object_object_get_ex(io, "threads", &threads))
            return fail(c, path, "no \"threads\" key");
        path_printf(vpath, "%s.threads", path);
        if (!json_object_is_type(threads, json_type_array))
            return fail(c, vpath, "expected an array, got %s", type_desc(threads));
        for (size_t k = 0; k < json_object_array_length(threads); k++) {
            char tpath[CF_PROTOCOL_PATH_LEN];
            path_printf(tpath, "%s.threads[%zu]", path, k);
            int rc = parse_thread(c, json_object_array_get_idx(threads, k), id, tpath);
            if (rc)
                return rc;
        }
    }
    return CF_OK;
}

/* The name of the first field of mask among keys, for messages. */
static const char *first_key(const key_def *keys, size_t n, unsigned mask)
{
    for (size_t i = 0; i < n; i++)
        if (mask & keys[i].field)
            return keys[i].key;
    return NULL;
}

/* Narrows out->fields to what the document reports (see protocol.h). */
static int settle_fields(parse_ctx *c, unsigned declared, int all_threads)
{
    unsigned present = 0;
    if (c->have_thread)
        present |= c->thread_keys;
    if (c->have_frame)
        present |= c->frame_keys;
    if (all_threads == CF_YES)
        present |= CF_FIELD_ALL_THREADS;
    if (c->have_thread && !(present & (CF_FIELD_NATIVE_ID | CF_FIELD_THREAD_ID)))
        return fail(c, c->first_thread, "threads carry neither \"native_id\" nor \"thread_id\": they cannot be "
                                        "matched with the target's threads");
    if (declared == 0) {
        c->out->fields &= present;
        return CF_OK;
    }
    const char *missing;
    if (c->have_thread &&
        (missing = first_key(THREAD_KEYS, NTHREAD_KEYS, declared & ~c->thread_keys & CF_PROTOCOL_THREAD_FIELDS)))
        return fail(c, c->first_thread, "no \"%s\" key, but the declared fields include it", missing);
    if (c->have_frame &&
        (missing = first_key(FRAME_KEYS, NFRAME_KEYS, declared & ~c->frame_keys & CF_PROTOCOL_FRAME_FIELDS)))
        return fail(c, c->first_frame, "no \"%s\" key, but the declared fields include it", missing);
    if ((declared & CF_FIELD_ALL_THREADS) && all_threads == CF_NO)
        return fail(c, "$.all_threads", "false, but the declared fields include all_threads");
    c->out->fields &= declared;
    return CF_OK;
}

int cf_protocol_parse(char *text, size_t len, unsigned declared, cf_sample *out, char *err, size_t errlen)
{
    parse_ctx c = {.out = out, .err = err, .errlen = errlen};
    if (len > INT_MAX) {
        snprintf(err, errlen, "$: the document is %zu bytes long (largest accepted: %d)", len, INT_MAX);
        return CF_E_LIMIT;
    }
    const char *nul = memchr(text, '\0', len);
    if (nul)
        return fail(&c, "$", "not JSON: NUL byte at byte %zu", (size_t)(nul - text));
    int rc = lexical_check(text, len, &c);
    if (rc)
        return rc;
    size_t n = cf_fix_lone_surrogates(text, len);
    json_tokener *tok = json_tokener_new();
    if (!tok) {
        snprintf(err, errlen, "out of memory");
        return CF_E_NOMEM;
    }
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS);
    json_object *root = json_tokener_parse_ex(tok, text, (int)n);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    while (end < n && strchr(" \t\r\n", text[end]))
        end++;
    if (!root || jerr != json_tokener_success || end < n) {
        cf_strbuf sb;
        cf_sb_init(&sb);
        size_t from = end > CF_PREVIEW_BYTES / 2 ? end - CF_PREVIEW_BYTES / 2 : 0;
        size_t to = n - end > CF_PREVIEW_BYTES / 2 ? end + CF_PREVIEW_BYTES / 2 : n;
        cf_sb_append_sanitized(&sb, text + from, to - from);
        const char *why = strspn(text, " \t\r\n") == n     ? "empty output"
                          : jerr == json_tokener_continue ? "the document ends early"
                          : jerr != json_tokener_success  ? json_tokener_error_desc(jerr)
                                                          : "text after the document";
        rc = fail(&c, "$", "not JSON: %s at byte %zu: %s\"%s\"%s", why, end, from ? "..." : "", cf_sb_str(&sb),
                  to < n ? "..." : "");
        cf_sb_free(&sb);
        json_object_put(root);
        return rc;
    }
    int all_threads = CF_UNKNOWN;
    rc = parse_document(&c, root, &all_threads);
    if (rc == CF_OK)
        rc = settle_fields(&c, declared, all_threads);
    json_object_put(root);
    return rc;
}
