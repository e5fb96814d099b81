/* fuzz_mojo.c — the decoder of austin's MOJO sample stream
 * (harness/adapters/mojo.c), whose bytes come from a foreign tool.
 *
 * Oracle: a documented code only (CF_OK, CF_E_FORMAT, CF_E_LIMIT,
 * CF_E_NOMEM), a message with every failure; what was decoded — all of it,
 * or the part before the offending event — is well formed (every stack's
 * frames inside the frame array, kinds known, strings present, broken
 * frames counted within the stack); the first sampling pass is no longer
 * than the stream; and decoding the same bytes again gives the same result.
 * Seeds: real `austin --binary` captures (tests/data/mojo/).
 */
#include <string.h>

#include "conform.h"
#include "fuzz_common.h"
#include "mojo.h"

#define ERR_LEN 256

static void check_stream(const mojo_stream *s)
{
    for (size_t i = 0; i < s->nstacks; i++) {
        const mojo_stack *st = &s->stacks[i];
        FUZZ_CHECK(st->first <= s->nframes && st->count <= s->nframes - st->first,
                   "stack %zu: frames %zu+%zu of %zu", i, st->first, st->count, s->nframes);
        FUZZ_CHECK(st->broken <= st->count, "stack %zu: %zu broken of %zu", i, st->broken, st->count);
    }
    for (size_t i = 0; i < s->nframes; i++) {
        const mojo_frame *f = &s->frames[i];
        FUZZ_CHECK(f->kind == MOJO_FRAME_PYTHON || f->kind == MOJO_FRAME_BROKEN || f->kind == MOJO_FRAME_KERNEL,
                   "frame %zu: kind %d", i, f->kind);
        FUZZ_CHECK(f->file && f->scope, "frame %zu: a missing string", i);
    }
    for (size_t i = 0; i < s->nmeta; i++)
        FUZZ_CHECK(s->meta[i].label && s->meta[i].value, "metadata %zu: a missing string", i);
}

static void check_same(const mojo_stream *a, const mojo_stream *b)
{
    FUZZ_CHECK(a->version == b->version && a->nstacks == b->nstacks && a->nframes == b->nframes &&
                   a->nmeta == b->nmeta,
               "two decodes differ: %zu/%zu stacks, %zu/%zu frames", a->nstacks, b->nstacks, a->nframes, b->nframes);
    for (size_t i = 0; i < a->nstacks; i++) {
        const mojo_stack *x = &a->stacks[i], *y = &b->stacks[i];
        FUZZ_CHECK(x->pid == y->pid && x->iid == y->iid && x->tid == y->tid && x->first == y->first &&
                       x->count == y->count && x->broken == y->broken && x->time == y->time &&
                       x->memory == y->memory && x->idle == y->idle && x->gc == y->gc,
                   "two decodes differ at stack %zu", i);
    }
    for (size_t i = 0; i < a->nframes; i++) {
        const mojo_frame *x = &a->frames[i], *y = &b->frames[i];
        FUZZ_CHECK(x->kind == y->kind && x->key == y->key && strcmp(x->file, y->file) == 0 &&
                       strcmp(x->scope, y->scope) == 0 && x->line == y->line && x->line_end == y->line_end &&
                       x->column == y->column && x->column_end == y->column_end,
                   "two decodes differ at frame %zu", i);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mojo_stream a, b;
    char err[ERR_LEN] = "", err2[ERR_LEN] = "";
    mojo_stream_init(&a);
    mojo_stream_init(&b);
    int rc = mojo_decode(data, size, &a, err, sizeof err);
    FUZZ_CHECK(rc == CF_OK || rc == CF_E_FORMAT || rc == CF_E_LIMIT || rc == CF_E_NOMEM, "code %d", rc);
    FUZZ_CHECK(rc == CF_OK || err[0], "error %d without a message", rc);
    check_stream(&a);
    if (rc == CF_OK) {
        size_t n = 0;
        FUZZ_CHECK(mojo_first_pass(&a, &n) == CF_OK || n == 0, "first pass failed");
        FUZZ_CHECK(n <= a.nstacks, "first pass of %zu stacks in %zu", n, a.nstacks);
        (void)mojo_meta_get(&a, "mode");
    }
    if (rc != CF_E_NOMEM) {
        int rc2 = mojo_decode(data, size, &b, err2, sizeof err2);
        FUZZ_CHECK(rc2 == rc && strcmp(err, err2) == 0, "two decodes: %d (%s) then %d (%s)", rc, err, rc2, err2);
        check_same(&a, &b);
    }
    mojo_stream_free(&a);
    mojo_stream_free(&b);
    return 0;
}
