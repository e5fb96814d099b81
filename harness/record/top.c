/* top.c — a profile's functions by self and total samples, and its
 * distinct stacks per thread (top.h).  Samples are first counted per
 * stack; each distinct stack is then unfolded once, so the cost follows
 * the distinct stacks, not the samples. */
#include <stdlib.h>
#include <string.h>

#include "top.h"

#define NO_MARK UINT32_MAX /* a stack or thread index no mark array holds yet */

/* A frame and the function it belongs to, sorted by function. */
typedef struct frame_ref {
    const char *function, *file;
    uint32_t frame;
} frame_ref;

static int by_function(const void *a, const void *b)
{
    const frame_ref *x = a, *y = b;
    int c = strcmp(x->function, y->function);
    if (c == 0)
        c = strcmp(x->file, y->file);
    return c ? c : (x->frame > y->frame) - (x->frame < y->frame);
}

static int by_rank(const void *a, const void *b)
{
    const fpr_top_entry *x = a, *y = b;
    if (x->self != y->self)
        return x->self < y->self ? 1 : -1;
    if (x->total != y->total)
        return x->total < y->total ? 1 : -1;
    int c = strcmp(x->function, y->function);
    return c ? c : strcmp(x->file, y->file);
}

/* Samples per innermost stack over all threads, and the distinct
 * (thread, stack) pairs; mark[] (one per stack) is left all NO_MARK. */
static uint64_t count_stacks(const fpr_profile *p, uint64_t *per_stack, uint32_t *mark)
{
    uint64_t pairs = 0;
    for (size_t i = 0; i < fpr_profile_thread_count(p); i++) {
        const fpr_thread *t = fpr_profile_thread(p, i);
        for (size_t k = 0; k < t->count; k++) {
            uint32_t s = t->points[k].stack;
            per_stack[s]++;
            if (mark[s] != (uint32_t)i) {
                mark[s] = (uint32_t)i;
                pairs++;
            }
        }
    }
    for (size_t s = 0; s < fpr_profile_stack_count(p); s++)
        mark[s] = NO_MARK;
    return pairs;
}

/* Numbers the functions of p's frames: func_of[frame] is its function,
 * *first (one per function, by_function order) the index into refs[] of
 * its first frame.  Returns the number of functions. */
static size_t number_functions(const fpr_profile *p, frame_ref *refs, uint32_t *func_of, uint32_t *first)
{
    size_t nframes = fpr_profile_frame_count(p), nfuncs = 0;
    for (uint32_t f = 0; f < nframes; f++) {
        const fpr_frame *fr = fpr_profile_frame(p, f);
        refs[f] = (frame_ref){.function = fr->function, .file = fr->file, .frame = f};
    }
    qsort(refs, nframes, sizeof *refs, by_function);
    for (size_t i = 0; i < nframes; i++) {
        if (i == 0 || strcmp(refs[i].function, refs[i - 1].function) || strcmp(refs[i].file, refs[i - 1].file))
            first[nfuncs++] = (uint32_t)i;
        func_of[refs[i].frame] = (uint32_t)(nfuncs - 1);
    }
    return nfuncs;
}

int fpr_top_compute(const fpr_profile *p, size_t n, fpr_top *out)
{
    *out = (fpr_top){.samples = fpr_profile_points(p)};
    size_t nstacks = fpr_profile_stack_count(p), nframes = fpr_profile_frame_count(p);
    uint64_t *per_stack = calloc(nstacks + 1, sizeof *per_stack);
    uint64_t *self_frame = calloc(nframes + 1, sizeof *self_frame);
    uint32_t *mark = malloc((nstacks > nframes ? nstacks : nframes) * sizeof *mark + sizeof *mark);
    uint32_t *func_of = malloc((nframes + 1) * sizeof *func_of);
    uint32_t *first = malloc((nframes + 1) * sizeof *first);
    frame_ref *refs = malloc((nframes + 1) * sizeof *refs);
    fpr_top_entry *all = calloc(nframes + 1, sizeof *all);
    int rc = FP_E_NOMEM;
    if (!per_stack || !self_frame || !mark || !func_of || !first || !refs || !all)
        goto done;
    memset(mark, 0xff, (nstacks > nframes ? nstacks : nframes) * sizeof *mark);
    out->stacks = count_stacks(p, per_stack, mark);
    size_t nfuncs = number_functions(p, refs, func_of, first);
    /* Totals: each sampled stack unfolded once, a function counted once
     * per stack however often it recurs in it (mark[] holds, per function,
     * the last stack that counted it). */
    for (uint32_t s = 0; s < nstacks; s++) {
        if (!per_stack[s])
            continue;
        const fpr_stack *st = fpr_profile_stack(p, s);
        self_frame[st->frame] += per_stack[s];
        for (uint32_t e = s; e != FPR_NO_STACK; e = fpr_profile_stack(p, e)->parent) {
            uint32_t fn = func_of[fpr_profile_stack(p, e)->frame];
            if (mark[fn] != s) {
                mark[fn] = s;
                all[fn].total += per_stack[s];
            }
        }
    }
    size_t kept = 0;
    for (size_t fn = 0; fn < nfuncs; fn++) {
        size_t end = fn + 1 < nfuncs ? first[fn + 1] : nframes;
        fpr_top_entry e = {.function = refs[first[fn]].function, .file = refs[first[fn]].file,
                           .line = FP_POS_NONE, .total = all[fn].total};
        uint64_t best = 0;
        for (size_t i = first[fn]; i < end; i++) { /* frames in the order first seen */
            uint64_t sf = self_frame[refs[i].frame];
            e.self += sf;
            if (sf > best) {
                best = sf;
                e.line = fpr_profile_frame(p, refs[i].frame)->line;
            }
        }
        if (e.total)
            all[kept++] = e; /* kept <= fn: nothing unread is overwritten */
    }
    qsort(all, kept, sizeof *all, by_rank);
    out->functions = kept;
    out->count = kept < n ? kept : n;
    out->top = all;
    all = NULL;
    rc = FP_OK;
done:
    free(per_stack);
    free(self_frame);
    free(mark);
    free(func_of);
    free(first);
    free(refs);
    free(all);
    return rc;
}

void fpr_top_free(fpr_top *t)
{
    free(t->top);
    *t = (fpr_top){0};
}
