/* fuzz_mojo.c — the decoder of austin's MOJO sample stream
 * (harness/adapters/mojo.c), whose bytes come from a foreign tool, with
 * mojo_first_pass() and mojo_meta_get() over what it decoded.
 *
 * Input: the bytes of a stream.
 * Oracle:
 *  - a documented code only (CF_OK, CF_E_FORMAT, CF_E_LIMIT, CF_E_NOMEM),
 *    a message with every failure;
 *  - what was decoded (all of it, or the part before the offending event,
 *    as mojo.h documents) is well formed: the stacks tile the frame array
 *    in stream order, every frame's kind is known and its strings present
 *    (file "" unless a Python frame, scope "" for a broken one), a stack's
 *    broken count is its FRAME_INVALID frames, metadata strings present;
 *  - mojo_first_pass returns CF_OK or CF_E_NOMEM and, on CF_OK, the number
 *    of leading stacks before the first repeated (pid, iid, tid), computed
 *    here by sorting; mojo_meta_get gives each label's last value;
 *  - decoding the same bytes again gives the same code, message and result;
 *  - a stream that decodes: each of PREFIX_CUTS strict prefixes decodes, or
 *    fails with CF_E_FORMAT as truncated (mojo.h: a stream cut short is an
 *    error), and what it decoded is the head of the whole stream's result.
 * Seeds: real `austin --binary` captures (tests/data/mojo/, and
 * fuzz/seeds/make_seeds runs austin on a short workload in its modes).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"
#include "fuzz_common.h"
#include "mojo.h"

#define ERR_LEN 256
/* Strict prefixes decoded per accepted stream (each one pass over it). */
#define PREFIX_CUTS 4u
/* Metadata labels looked up with mojo_meta_get per input (each a pass). */
#define MAX_META_CHECKS 32u
/* A failing prefix of length >= this is past the magic: "truncated". */
#define MAGIC_LEN (sizeof MOJO_MAGIC - 1)

static bool same_frame(const mojo_frame *x, const mojo_frame *y)
{
    return x->kind == y->kind && x->key == y->key && strcmp(x->file, y->file) == 0 &&
           strcmp(x->scope, y->scope) == 0 && x->line == y->line && x->line_end == y->line_end &&
           x->column == y->column && x->column_end == y->column_end;
}

static bool same_metrics(const mojo_stack *x, const mojo_stack *y)
{
    return x->broken == y->broken && x->has_time == y->has_time && x->has_memory == y->has_memory &&
           x->time == y->time && x->memory == y->memory && x->idle == y->idle && x->gc == y->gc;
}

static bool same_head(const mojo_stack *x, const mojo_stack *y)
{
    return x->pid == y->pid && x->iid == y->iid && x->tid == y->tid && x->first == y->first;
}

static void check_stream(const mojo_stream *s)
{
    size_t next = 0;
    for (size_t i = 0; i < s->nstacks; i++) {
        const mojo_stack *st = &s->stacks[i];
        FUZZ_CHECK(st->first == next, "stack %zu starts at frame %zu, the previous ended at %zu", i, st->first,
                   next);
        FUZZ_CHECK(st->count <= s->nframes - st->first, "stack %zu: frames %zu+%zu of %zu", i, st->first,
                   st->count, s->nframes);
        size_t broken = 0;
        for (size_t k = st->first; k < st->first + st->count; k++)
            broken += s->frames[k].kind == MOJO_FRAME_BROKEN;
        FUZZ_CHECK(st->broken == broken, "stack %zu: broken %zu, FRAME_INVALID frames %zu", i, st->broken,
                   broken);
        next = st->first + st->count;
    }
    FUZZ_CHECK(next == s->nframes, "%zu frames, the stacks hold %zu", s->nframes, next);
    for (size_t i = 0; i < s->nframes; i++) {
        const mojo_frame *f = &s->frames[i];
        FUZZ_CHECK(f->kind == MOJO_FRAME_PYTHON || f->kind == MOJO_FRAME_BROKEN || f->kind == MOJO_FRAME_KERNEL,
                   "frame %zu: kind %d", i, f->kind);
        FUZZ_CHECK(f->file && f->scope, "frame %zu: a missing string", i);
        FUZZ_CHECK(f->kind == MOJO_FRAME_PYTHON || f->file[0] == 0, "frame %zu: kind %d with file '%s'", i,
                   f->kind, f->file);
        FUZZ_CHECK(f->kind != MOJO_FRAME_BROKEN || f->scope[0] == 0, "frame %zu: broken with scope '%s'", i,
                   f->scope);
    }
    for (size_t i = 0; i < s->nmeta; i++)
        FUZZ_CHECK(s->meta[i].label && s->meta[i].value, "metadata %zu: a missing string", i);
}

static void check_same(const mojo_stream *a, const mojo_stream *b)
{
    FUZZ_CHECK(a->version == b->version && a->nstacks == b->nstacks && a->nframes == b->nframes &&
                   a->nmeta == b->nmeta,
               "two decodes differ: %zu/%zu stacks, %zu/%zu frames", a->nstacks, b->nstacks, a->nframes, b->nframes);
    for (size_t i = 0; i < a->nstacks; i++)
        FUZZ_CHECK(same_head(&a->stacks[i], &b->stacks[i]) && a->stacks[i].count == b->stacks[i].count &&
                       same_metrics(&a->stacks[i], &b->stacks[i]),
                   "two decodes differ at stack %zu", i);
    for (size_t i = 0; i < a->nframes; i++)
        FUZZ_CHECK(same_frame(&a->frames[i], &b->frames[i]), "two decodes differ at frame %zu", i);
    for (size_t i = 0; i < a->nmeta; i++)
        FUZZ_CHECK(strcmp(a->meta[i].label, b->meta[i].label) == 0 && strcmp(a->meta[i].value, b->meta[i].value) == 0,
                   "two decodes differ at metadata %zu", i);
}

/* ---- mojo_first_pass against a sort --------------------------------------- */

typedef struct thread_at {
    uint64_t pid, iid, tid;
    size_t index;
} thread_at;

static int cmp_thread_at(const void *pa, const void *pb)
{
    const thread_at *a = pa, *b = pb;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    if (a->iid != b->iid)
        return a->iid < b->iid ? -1 : 1;
    if (a->tid != b->tid)
        return a->tid < b->tid ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* The index of the first stack whose thread an earlier stack had, or
 * nstacks; false if out of memory.  Sorted by thread, then index: every
 * entry equal to the one before it is a repeat. */
static bool ref_first_pass(const mojo_stream *s, size_t *n)
{
    *n = s->nstacks;
    if (s->nstacks == 0)
        return true;
    thread_at *t = malloc(s->nstacks * sizeof *t);
    if (!t)
        return false;
    for (size_t i = 0; i < s->nstacks; i++)
        t[i] = (thread_at){s->stacks[i].pid, s->stacks[i].iid, s->stacks[i].tid, i};
    qsort(t, s->nstacks, sizeof *t, cmp_thread_at);
    for (size_t i = 1; i < s->nstacks; i++)
        if (t[i].pid == t[i - 1].pid && t[i].iid == t[i - 1].iid && t[i].tid == t[i - 1].tid && t[i].index < *n)
            *n = t[i].index;
    free(t);
    return true;
}

static void check_first_pass(const mojo_stream *s)
{
    size_t n = 0, want;
    int rc = mojo_first_pass(s, &n);
    FUZZ_CHECK(rc == CF_OK || rc == CF_E_NOMEM, "mojo_first_pass returned %d", rc);
    FUZZ_CHECK(n <= s->nstacks, "first pass of %zu stacks in %zu", n, s->nstacks);
    if (rc == CF_OK && ref_first_pass(s, &want))
        FUZZ_CHECK(n == want, "first pass of %zu stacks, the first repeated thread is stack %zu", n, want);
}

static void check_meta(const mojo_stream *s)
{
    for (size_t i = 0; i < s->nmeta && i < MAX_META_CHECKS; i++) {
        const char *want = NULL;
        for (size_t k = 0; k < s->nmeta; k++)
            if (strcmp(s->meta[k].label, s->meta[i].label) == 0)
                want = s->meta[k].value;
        FUZZ_CHECK(mojo_meta_get(s, s->meta[i].label) == want, "metadata '%s': not its last value",
                   s->meta[i].label);
    }
}

/* ---- prefixes of an accepted stream ---------------------------------------- */

static void check_prefix(const uint8_t *data, size_t cut, const mojo_stream *whole)
{
    mojo_stream p;
    char err[ERR_LEN] = "";
    mojo_stream_init(&p);
    /* an exact-size copy, so ASan sees a read past the cut */
    uint8_t *copy = malloc(cut ? cut : 1);
    if (!copy)
        return;
    memcpy(copy, data, cut);
    int rc = mojo_decode(copy, cut, &p, err, sizeof err);
    free(copy);
    FUZZ_CHECK(rc == CF_OK || rc == CF_E_FORMAT || rc == CF_E_NOMEM, "prefix of %zu: code %d (%s)", cut, rc, err);
    if (rc == CF_E_FORMAT)
        FUZZ_CHECK(strstr(err, cut < MAGIC_LEN ? "not a MOJO stream" : "truncated") != NULL,
                   "prefix of %zu: not reported as cut short: %s", cut, err);
    FUZZ_CHECK(rc == CF_OK || err[0], "prefix of %zu: error %d without a message", cut, rc);
    check_stream(&p);
    FUZZ_CHECK(p.nstacks <= whole->nstacks && p.nframes <= whole->nframes && p.nmeta <= whole->nmeta,
               "prefix of %zu: %zu stacks, %zu frames, %zu metadata; the whole: %zu, %zu, %zu", cut, p.nstacks,
               p.nframes, p.nmeta, whole->nstacks, whole->nframes, whole->nmeta);
    for (size_t i = 0; i < p.nframes; i++)
        FUZZ_CHECK(same_frame(&p.frames[i], &whole->frames[i]), "prefix of %zu: frame %zu differs", cut, i);
    for (size_t i = 0; i < p.nmeta; i++)
        FUZZ_CHECK(strcmp(p.meta[i].label, whole->meta[i].label) == 0 &&
                       strcmp(p.meta[i].value, whole->meta[i].value) == 0,
                   "prefix of %zu: metadata %zu differs", cut, i);
    for (size_t i = 0; i < p.nstacks; i++) {
        const mojo_stack *x = &p.stacks[i], *y = &whole->stacks[i];
        FUZZ_CHECK(same_head(x, y) && x->count <= y->count, "prefix of %zu: stack %zu differs", cut, i);
        /* every stack but the last was closed by the next STACK */
        if (i + 1 < p.nstacks)
            FUZZ_CHECK(x->count == y->count && same_metrics(x, y), "prefix of %zu: closed stack %zu differs", cut,
                       i);
    }
    mojo_stream_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mojo_stream a, b;
    char err[ERR_LEN] = "", err2[ERR_LEN] = "";
    mojo_stream_init(&a);
    mojo_stream_init(&b);
    int rc = mojo_decode(data, size, &a, err, sizeof err);
    FUZZ_CHECK(rc == CF_OK || rc == CF_E_FORMAT || rc == CF_E_LIMIT || rc == CF_E_NOMEM, "code %d", rc);
    FUZZ_CHECK_MESSAGE(rc, err);
    check_stream(&a);
    check_first_pass(&a);
    check_meta(&a);
    if (rc != CF_E_NOMEM) {
        int rc2 = mojo_decode(data, size, &b, err2, sizeof err2);
        FUZZ_CHECK(rc2 == rc && strcmp(err, err2) == 0, "two decodes: %d (%s) then %d (%s)", rc, err, rc2, err2);
        check_same(&a, &b);
    }
    mojo_stream_free(&b);
    if (rc == CF_OK && size > 0) {
        /* the last byte, then cuts spread over the stream */
        check_prefix(data, size - 1, &a);
        for (size_t k = 1; k < PREFIX_CUTS; k++)
            check_prefix(data, size * k / PREFIX_CUTS, &a);
    }
    mojo_stream_free(&a);
    return 0;
}
