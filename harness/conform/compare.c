/* compare.c — thread matching, frame alignment (common prefix and
 * suffix, then a longest-common-subsequence alignment of the rest) and
 * readable mismatch messages. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "conform.h"
#include "util.h"

#define EXTRA_THREAD_FRAMES_SHOWN 3u  /* innermost frames named for an unexpected thread */

typedef struct cmp_ctx {
    json_object *out;
    unsigned fields;       /* what the sample reports (enum cf_field) */
    size_t count;          /* mismatches found (including unlisted ones) */
    size_t shown;          /* frame mismatches listed for the current thread */
    uint64_t thread;
    bool main;
    cf_strbuf msg;
} cmp_ctx;

static const char *kind_name(int kind)
{
    return kind == CF_KIND_GENERATOR ? "generator" : kind == CF_KIND_PYTHON ? "python" : "?";
}

static bool has(unsigned fields, unsigned bit)
{
    return (fields & bit) != 0;
}

static bool str_eq(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

/* Equal on every reported field that names the code. */
static bool same_code(unsigned m, const cf_frame *a, const cf_frame *b)
{
    return (!has(m, CF_FIELD_FUNCTION) || str_eq(a->function, b->function)) &&
           (!has(m, CF_FIELD_NAME) || str_eq(a->name, b->name)) &&
           (!has(m, CF_FIELD_FILE) || str_eq(a->file, b->file)) && (!has(m, CF_FIELD_KIND) || a->kind == b->kind);
}

static bool frame_equal(unsigned m, const cf_frame *a, const cf_frame *b)
{
    return same_code(m, a, b) && (!has(m, CF_FIELD_LINE) || a->line == b->line) &&
           (!has(m, CF_FIELD_END_LINE) || a->end_line == b->end_line) &&
           (!has(m, CF_FIELD_COLUMN) || a->column == b->column) &&
           (!has(m, CF_FIELD_END_COLUMN) || a->end_column == b->end_column);
}

static void pos(cf_strbuf *sb, int32_t v)
{
    if (v == CF_POS_NONE)
        cf_sb_puts(sb, "?");
    else
        cf_sb_printf(sb, "%" PRId32, v);
}

int cf_frame_describe(const cf_frame *f, unsigned m, cf_strbuf *sb)
{
    const char *fn = has(m, CF_FIELD_FUNCTION) ? f->function : has(m, CF_FIELD_NAME) ? f->name : NULL;
    cf_sb_put_clipped(sb, fn ? fn : "?", CF_NAME_SHOWN);
    if (has(m, CF_FIELD_KIND) && f->kind != CF_KIND_PYTHON)
        cf_sb_printf(sb, " [%s]", kind_name(f->kind));
    cf_sb_puts(sb, " (");
    cf_sb_put_clipped(sb, has(m, CF_FIELD_FILE) && f->file ? f->file : "?", CF_NAME_SHOWN);
    if (!has(m, CF_FIELD_LINE))
        return cf_sb_puts(sb, ")");
    cf_sb_puts(sb, ":");
    pos(sb, f->line);
    bool cols = has(m, CF_FIELD_COLUMN) || has(m, CF_FIELD_END_COLUMN);
    int32_t col = has(m, CF_FIELD_COLUMN) ? f->column : CF_POS_NONE;
    int32_t ecol = has(m, CF_FIELD_END_COLUMN) ? f->end_column : CF_POS_NONE;
    int32_t eline = has(m, CF_FIELD_END_LINE) ? f->end_line : f->line;
    if (!cols && eline == f->line)
        return cf_sb_puts(sb, ")");
    if (eline == CF_POS_NONE && col == CF_POS_NONE && ecol == CF_POS_NONE)
        return cf_sb_puts(sb, ")");
    cf_sb_puts(sb, ":");
    pos(sb, col);
    cf_sb_puts(sb, "-");
    if (eline != f->line) {
        pos(sb, eline);
        cf_sb_puts(sb, ":");
    }
    pos(sb, ecol);
    return cf_sb_puts(sb, ")");
}

json_object *cf_frame_to_json(const cf_frame *f, unsigned m)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    const struct { unsigned bit; const char *key, *val; } strs[] = {
        {CF_FIELD_FUNCTION, "function", f->function},
        {CF_FIELD_NAME, "name", f->name},
        {CF_FIELD_FILE, "file", f->file},
    };
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        if (has(m, strs[i].bit) &&
            cf_json_add(o, strs[i].key, json_object_new_string(strs[i].val ? strs[i].val : "")))
            goto fail;
    const struct { unsigned bit; const char *key; int32_t val; } ints[] = {
        {CF_FIELD_LINE, "line", f->line},
        {CF_FIELD_END_LINE, "end_line", f->end_line},
        {CF_FIELD_COLUMN, "column", f->column},
        {CF_FIELD_END_COLUMN, "end_column", f->end_column},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        if (!has(m, ints[i].bit))
            continue;
        if (ints[i].val == CF_POS_NONE) {
            if (json_object_object_add(o, ints[i].key, NULL) != 0)
                goto fail;
        } else if (cf_json_add(o, ints[i].key, json_object_new_int(ints[i].val))) {
            goto fail;
        }
    }
    if (has(m, CF_FIELD_KIND) && cf_json_add(o, "kind", json_object_new_string(kind_name(f->kind))))
        goto fail;
    return o;
fail:
    json_object_put(o);
    return NULL;
}

/* Starts the message with "thread N (main)". */
static void msg_start(cmp_ctx *c)
{
    cf_sb_clear(&c->msg);
    cf_sb_printf(&c->msg, "thread %" PRIu64 "%s", c->thread, c->main ? " (main)" : "");
}

/* Appends one mismatch object; extra's members are copied into it. */
static int emit(cmp_ctx *c, const char *type, long index, long actual_index, const cf_frame *exp,
                const cf_frame *act, json_object *extra)
{
    int rc = CF_E_NOMEM;
    json_object *m = json_object_new_object();
    if (!m || c->msg.failed)
        goto out;
    if (cf_json_add(m, "type", json_object_new_string(type)) ||
        cf_json_add(m, "thread", json_object_new_uint64(c->thread)) ||
        cf_json_add(m, "message", json_object_new_string(cf_sb_str(&c->msg))))
        goto out;
    if (index >= 0 && cf_json_add(m, "index", json_object_new_int64(index)))
        goto out;
    if (actual_index >= 0 && cf_json_add(m, "actual_index", json_object_new_int64(actual_index)))
        goto out;
    if (exp && cf_json_add(m, "expected", cf_frame_to_json(exp, c->fields)))
        goto out;
    if (act && cf_json_add(m, "actual", cf_frame_to_json(act, c->fields)))
        goto out;
    if (extra) {
        json_object_object_foreach(extra, k, v) {
            if (cf_json_add(m, k, json_object_get(v)))
                goto out;
        }
    }
    rc = cf_json_push(c->out, m);
    m = NULL;
out:
    json_object_put(m);
    return rc;
}

/* Counts a frame-level mismatch; false when the per-thread listing limit
 * is reached (the mismatch is counted but not listed). */
static bool frame_slot(cmp_ctx *c)
{
    c->count++;
    if (c->shown >= CF_MAX_MISMATCHES_PER_THREAD)
        return false;
    c->shown++;
    return true;
}

static int frame_differs(cmp_ctx *c, size_t i, size_t j, const cf_frame *e, const cf_frame *a)
{
    if (!frame_slot(c))
        return CF_OK;
    int rc = CF_E_NOMEM;
    json_object *extra = json_object_new_object();
    json_object *fields = json_object_new_array();
    if (!extra || !fields) {
        json_object_put(fields);
        goto out;
    }
    if (cf_json_add(extra, "fields", fields))
        goto out;
    msg_start(c);
    cf_sb_printf(&c->msg, ": frame %zu: expected ", i);
    cf_frame_describe(e, c->fields, &c->msg);
    cf_sb_puts(&c->msg, " got ");
    cf_frame_describe(a, c->fields, &c->msg);
    if (i != j)
        cf_sb_printf(&c->msg, " (sampled frame %zu)", j);
    cf_sb_puts(&c->msg, " (differs:");
    const struct { unsigned bit; const char *name; const char *e, *a; } strs[] = {
        {CF_FIELD_FUNCTION, "function", e->function, a->function},
        {CF_FIELD_NAME, "name", e->name, a->name},
        {CF_FIELD_FILE, "file", e->file, a->file},
    };
    for (size_t k = 0; k < sizeof strs / sizeof strs[0]; k++) {
        if (!has(c->fields, strs[k].bit) || str_eq(strs[k].e, strs[k].a))
            continue;
        if (cf_json_push(fields, json_object_new_string(strs[k].name)))
            goto out;
        const char *se = strs[k].e ? strs[k].e : "", *sa = strs[k].a ? strs[k].a : "";
        size_t le = strlen(se), la = strlen(sa);
        if (le > CF_NAME_SHOWN || la > CF_NAME_SHOWN) {
            size_t at = 0;
            while (se[at] && se[at] == sa[at])
                at++;
            cf_sb_printf(&c->msg, " %s (from byte %zu; lengths %zu vs %zu)", strs[k].name, at, le, la);
        } else {
            cf_sb_printf(&c->msg, " %s \"%s\" vs \"%s\"", strs[k].name, se, sa);
        }
    }
    const struct { unsigned bit; const char *name; int32_t e, a; } ints[] = {
        {CF_FIELD_LINE, "line", e->line, a->line},
        {CF_FIELD_END_LINE, "end_line", e->end_line, a->end_line},
        {CF_FIELD_COLUMN, "column", e->column, a->column},
        {CF_FIELD_END_COLUMN, "end_column", e->end_column, a->end_column},
    };
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++) {
        if (!has(c->fields, ints[k].bit) || ints[k].e == ints[k].a)
            continue;
        if (cf_json_push(fields, json_object_new_string(ints[k].name)))
            goto out;
        cf_sb_printf(&c->msg, " %s ", ints[k].name);
        pos(&c->msg, ints[k].e);
        cf_sb_puts(&c->msg, " vs ");
        pos(&c->msg, ints[k].a);
    }
    if (has(c->fields, CF_FIELD_KIND) && e->kind != a->kind) {
        if (cf_json_push(fields, json_object_new_string("kind")))
            goto out;
        cf_sb_printf(&c->msg, " kind %s vs %s", kind_name(e->kind), kind_name(a->kind));
    }
    cf_sb_puts(&c->msg, ")");
    rc = emit(c, "frame_differs", (long)i, (long)j, e, a, extra);
out:
    json_object_put(extra);
    return rc;
}

static int frame_missing(cmp_ctx *c, size_t i, const cf_frame *e)
{
    if (!frame_slot(c))
        return CF_OK;
    msg_start(c);
    cf_sb_printf(&c->msg, ": missing frame %zu: ", i);
    cf_frame_describe(e, c->fields, &c->msg);
    return emit(c, "frame_missing", (long)i, -1, e, NULL, NULL);
}

static int frame_extra(cmp_ctx *c, size_t j, const cf_frame *a)
{
    if (!frame_slot(c))
        return CF_OK;
    msg_start(c);
    cf_sb_printf(&c->msg, ": extra frame %zu: ", j);
    cf_frame_describe(a, c->fields, &c->msg);
    return emit(c, "frame_extra", -1, (long)j, NULL, a, NULL);
}

static int pair(cmp_ctx *c, const cf_frame *E, const cf_frame *A, size_t i, size_t j)
{
    if (frame_equal(c->fields, &E[i], &A[j]))
        return CF_OK;
    return frame_differs(c, i, j, &E[i], &A[j]);
}

/* Aligns E[p..p+en) with A[p..p+am) by a longest common subsequence of
 * same-code frames; unmatched frames are reported missing or extra. */
static int align_lcs(cmp_ctx *c, const cf_frame *E, const cf_frame *A, size_t p, size_t en, size_t am)
{
    size_t w = am + 1;
    uint32_t *L = calloc((en + 1) * w, sizeof *L);
    if (!L)
        return CF_E_NOMEM;
    for (size_t i = en; i-- > 0;) {
        for (size_t j = am; j-- > 0;) {
            uint32_t down = L[(i + 1) * w + j], right = L[i * w + j + 1];
            uint32_t best = down > right ? down : right;
            if (same_code(c->fields, &E[p + i], &A[p + j]) && L[(i + 1) * w + j + 1] + 1 > best)
                best = L[(i + 1) * w + j + 1] + 1;
            L[i * w + j] = best;
        }
    }
    int rc = CF_OK;
    size_t i = 0, j = 0;
    while (rc == CF_OK && (i < en || j < am)) {
        if (i < en && j < am && same_code(c->fields, &E[p + i], &A[p + j]) &&
            L[i * w + j] == L[(i + 1) * w + j + 1] + 1) {
            rc = pair(c, E, A, p + i, p + j);
            i++;
            j++;
        } else if (j == am || (i < en && L[(i + 1) * w + j] >= L[i * w + j + 1])) {
            rc = frame_missing(c, p + i, &E[p + i]);
            i++;
        } else {
            rc = frame_extra(c, p + j, &A[p + j]);
            j++;
        }
    }
    free(L);
    return rc;
}

static int diff_frames(cmp_ctx *c, const cf_frame *E, size_t n, const cf_frame *A, size_t m)
{
    size_t p = 0;
    while (p < n && p < m && frame_equal(c->fields, &E[p], &A[p]))
        p++;
    size_t s = 0;
    while (s < n - p && s < m - p && frame_equal(c->fields, &E[n - 1 - s], &A[m - 1 - s]))
        s++;
    size_t en = n - p - s, am = m - p - s;
    int rc = CF_OK;
    if (en == am) {
        for (size_t k = 0; k < en && rc == CF_OK; k++)
            rc = pair(c, E, A, p + k, p + k);
        return rc;
    }
    if (en + 1 <= CF_DIFF_MAX_CELLS / (am + 1))
        return align_lcs(c, E, A, p, en, am);
    size_t both = en < am ? en : am;
    for (size_t k = 0; k < both && rc == CF_OK; k++)
        rc = pair(c, E, A, p + k, p + k);
    for (size_t k = both; k < en && rc == CF_OK; k++)
        rc = frame_missing(c, p + k, &E[p + k]);
    for (size_t k = both; k < am && rc == CF_OK; k++)
        rc = frame_extra(c, p + k, &A[p + k]);
    return rc;
}

static const char *yes_no(bool b)
{
    return b ? "yes" : "no";
}

static int thread_field(cmp_ctx *c, const char *field, const char *exp, const char *act)
{
    c->count++;
    msg_start(c);
    cf_sb_printf(&c->msg, ": %s expected %s got %s", field, exp, act);
    int rc = CF_E_NOMEM;
    json_object *extra = json_object_new_object();
    if (extra && !cf_json_add(extra, "field", json_object_new_string(field)) &&
        !cf_json_add(extra, "expected_value", json_object_new_string(exp)) &&
        !cf_json_add(extra, "actual_value", json_object_new_string(act)))
        rc = emit(c, "thread_field", -1, -1, NULL, NULL, extra);
    json_object_put(extra);
    return rc;
}

/* The id threads are matched on: the native id when the sample reports
 * it, else threading.get_ident(). */
static uint64_t match_id(unsigned m, const cf_truth_thread *tt)
{
    return has(m, CF_FIELD_NATIVE_ID) ? tt->native_id : tt->thread_id;
}

static int compare_thread(cmp_ctx *c, const cf_truth_thread *tt, const cf_sample *v)
{
    c->thread = tt->native_id;
    c->main = tt->main;
    c->shown = 0;
    const cf_thread *vt = cf_sample_find(v, match_id(c->fields, tt));
    if (!vt) {
        c->count++;
        msg_start(c);
        cf_sb_printf(&c->msg, " missing (parked at the checkpoint with %zu frames)", tt->nframes);
        return emit(c, "thread_missing", -1, -1, NULL, NULL, NULL);
    }
    int rc = CF_OK;
    char e[32], a[32];
    if (has(c->fields, CF_FIELD_THREAD_ID) && vt->thread_id != tt->thread_id) {
        snprintf(e, sizeof e, "0x%" PRIx64, tt->thread_id);
        snprintf(a, sizeof a, "0x%" PRIx64, vt->thread_id);
        rc = thread_field(c, "thread_id", e, a);
    }
    if (rc == CF_OK && has(c->fields, CF_FIELD_MAIN) && vt->main != tt->main)
        rc = thread_field(c, "main", yes_no(tt->main), yes_no(vt->main));
    if (rc == CF_OK && has(c->fields, CF_FIELD_EXCEPTION) && vt->exception != CF_UNKNOWN &&
        (vt->exception == CF_YES) != tt->exception)
        rc = thread_field(c, "exception", yes_no(tt->exception), yes_no(vt->exception == CF_YES));
    if (rc)
        return rc;
    if (vt->error) {
        c->count++;
        msg_start(c);
        cf_sb_puts(&c->msg, ": stack walk failed: ");
        cf_sb_put_clipped(&c->msg, vt->error, CF_REASON_LEN);
        return emit(c, "walk_error", -1, -1, NULL, NULL, NULL);
    }
    rc = diff_frames(c, tt->frames, tt->nframes, v->frames + vt->first, vt->count);
    if (rc == CF_OK && c->shown >= CF_MAX_MISMATCHES_PER_THREAD) {
        msg_start(c);
        cf_sb_printf(&c->msg, ": further frame differences not listed (expected %zu frames, got %zu)",
                     tt->nframes, vt->count);
        rc = emit(c, "truncated", -1, -1, NULL, NULL, NULL);
    }
    return rc;
}

static bool in_all(const cf_truth *t, uint64_t id)
{
    for (size_t i = 0; i < t->nall; i++)
        if (t->all_ids[i] == id)
            return true;
    return false;
}

int cf_compare(const cf_truth *truth, const cf_sample *sample, json_object *out, size_t *count)
{
    cmp_ctx c;
    memset(&c, 0, sizeof c);
    c.out = out;
    c.fields = sample->fields;
    cf_sb_init(&c.msg);
    int rc = CF_OK;
    for (size_t i = 0; i < truth->nthreads && rc == CF_OK; i++)
        rc = compare_thread(&c, &truth->threads[i], sample);
    /* all_threads lists native ids: an unwinder that reports every thread
     * with its native id must report exactly these and the parked ones. */
    bool whole = has(c.fields, CF_FIELD_ALL_THREADS) && has(c.fields, CF_FIELD_NATIVE_ID);
    for (size_t i = 0; whole && i < truth->nall && rc == CF_OK; i++) {
        uint64_t id = truth->all_ids[i];
        if (cf_truth_find(truth, id) || cf_sample_find(sample, id))
            continue;
        c.count++;
        c.thread = id;
        c.main = false;
        msg_start(&c);
        cf_sb_puts(&c.msg, " missing (listed in all_threads)");
        rc = emit(&c, "thread_missing", -1, -1, NULL, NULL, NULL);
    }
    for (size_t i = 0; whole && i < sample->nthreads && rc == CF_OK; i++) {
        const cf_thread *vt = &sample->threads[i];
        if (in_all(truth, vt->native_id) || cf_truth_find(truth, vt->native_id))
            continue;
        c.count++;
        c.thread = vt->native_id;
        c.main = vt->main;
        msg_start(&c);
        cf_sb_printf(&c.msg, " extra (not in all_threads; %zu frame%s", vt->count, vt->count == 1 ? "" : "s");
        for (size_t k = 0; k < vt->count && k < EXTRA_THREAD_FRAMES_SHOWN; k++) {
            cf_sb_puts(&c.msg, k ? " <- " : ": ");
            cf_frame_describe(&sample->frames[vt->first + k], c.fields, &c.msg);
        }
        cf_sb_puts(&c.msg, vt->count > EXTRA_THREAD_FRAMES_SHOWN ? " <- ...)" : ")");
        rc = emit(&c, "thread_extra", -1, -1, NULL, NULL, NULL);
    }
    *count = c.count;
    cf_sb_free(&c.msg);
    return rc;
}
