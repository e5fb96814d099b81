/* view.c — copies a sample into a cf_view and injects self-test
 * faults (see conform_view.h). */
#include <stdlib.h>
#include <string.h>

#include "conform.h"
#include "view.h"

void cf_view_init(cf_view *v)
{
    memset(v, 0, sizeof *v);
}

void cf_view_free(cf_view *v)
{
    free(v->threads);
    free(v->frames);
    cf_view_init(v);
}

static int reserve(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return CF_OK;
    size_t n = *cap ? *cap : 16;
    while (n < need)
        n *= 2;
    if (n > SIZE_MAX / elem)
        return CF_E_NOMEM;
    void *q = realloc(*p, n * elem);
    if (!q)
        return CF_E_NOMEM;
    *p = q;
    *cap = n;
    return CF_OK;
}

int cf_view_build(cf_view *v, const fp_sample *sm)
{
    size_t nt = fp_sample_thread_count(sm), nf = fp_sample_frame_count(sm);
    if (reserve((void **)&v->threads, &v->cap_threads, nt, sizeof *v->threads) ||
        reserve((void **)&v->frames, &v->cap_frames, nf, sizeof *v->frames))
        return CF_E_NOMEM;
    for (size_t i = 0; i < nf; i++)
        v->frames[i] = *fp_sample_frame(sm, i);
    for (size_t i = 0; i < nt; i++) {
        const fp_thread *th = fp_sample_thread(sm, i);
        cf_view_thread *t = &v->threads[i];
        t->native_id = th->native_id;
        t->thread_id = th->thread_id;
        t->interp_id = th->interp_id;
        t->main = th->main;
        t->exception = th->exception;
        t->error = th->error;
        t->first = th->first_frame;
        t->count = th->frame_count;
    }
    v->nthreads = nt;
    v->nframes = nf;
    return CF_OK;
}

const cf_view_thread *cf_view_find(const cf_view *v, uint64_t native_id)
{
    const cf_view_thread *best = NULL;
    for (size_t i = 0; i < v->nthreads; i++) {
        const cf_view_thread *t = &v->threads[i];
        if (t->native_id == native_id && (!best || t->interp_id < best->interp_id))
            best = t;
    }
    return best;
}

void cf_view_inject(cf_view *v, int fault, uint64_t native_id)
{
    const cf_view_thread *found = cf_view_find(v, native_id);
    if (!found || found->count == 0)
        return;
    cf_view_thread *t = &v->threads[found - v->threads];
    if (fault == CF_FAULT_DROP_FRAME) {
        t->first++;
        t->count--;
    } else if (fault == CF_FAULT_SHIFT_LINE && v->frames[t->first].line != FP_POS_NONE) {
        v->frames[t->first].line++;
    }
}
