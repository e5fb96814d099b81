/* live_faults.c — the self-test faults of live mode (live_faults.h): each
 * rewrites a good sample into what a known kind of unwinder bug returns,
 * so that a run shows the judge catches it. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "conform.h"
#include "live_faults.h"

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
