/* synth_plan.c — changes to a synthetic image as a running thread would
 * make them (see synth.h): the writes that pop and push frames, advance
 * an instruction, suspend and resume generators, and start and end
 * threads, planned as lists of word writes that a test applies one at a
 * time (synth_apply), so that a reader can be shown any instant between
 * two of them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synth_image.h"

static const built_code *find_built(const synth_image *im, const synth_code *c)
{
    for (size_t i = 0; i < im->ncodes; i++)
        if (im->codes[i].src == c)
            return &im->codes[i];
    return NULL;
}

static int add_write(synth_write *out, size_t cap, size_t *n, uint64_t addr, uint64_t value, unsigned size,
                     bool new_state)
{
    if (*n == cap)
        return -1;
    out[(*n)++] = (synth_write){addr, value, size, new_state};
    return 0;
}

/* 3.11-3.13: the frame at fa gets stacktop `value`.  3.14+: a frame that
 * stops (SYNTH_NLOCALSPLUS) saves its stack pointer; a release build
 * leaves it as it was while the frame runs.  Nothing elsewhere. */
static int stacktop_write(const fpi_layout *l, synth_write *out, size_t cap, size_t *n, uint64_t fa, uint32_t value)
{
    if (l->fr_stackpointer != FPI_OFF_NONE && value == SYNTH_NLOCALSPLUS)
        return add_write(out, cap, n, fa + (uint64_t)l->fr_stackpointer, synth_stopped_stack_pointer(l, fa), 8, false);
    return l->fr_stacktop == FPI_OFF_NONE ? 0 : add_write(out, cap, n, fa + (uint64_t)l->fr_stacktop, value, 4, false);
}

int synth_plan_move(synth_image *im, size_t t, size_t npop, const synth_frame *push, size_t npush,
                    synth_write *out, size_t cap, size_t *nout)
{
    const fpi_layout *l = &im->l;
    if (t >= im->nthreads)
        return synth_fail(im, "no such thread");
    thread_book *b = &im->books[t];
    if (b->exited)
        return synth_fail(im, "the thread has exited");
    if (npop >= b->n && (npop > 0 || npush > 0))
        return synth_fail(im, "a move keeps at least the outermost frame");
    for (size_t j = 0; j < npush; j++) {
        if (!find_built(im, push[j].code))
            return synth_fail(im, "a pushed frame's code object was not built");
        if (push[j].generator || push[j].entry_below || push[j].tlbc_index < 0 ||
            push[j].tlbc_index >= SYNTH_MAX_TLBC || (push[j].tlbc_index && !find_built(im, push[j].code)->tlbc_copies[push[j].tlbc_index]))
            return synth_fail(im, "pushed frames are plain calls with a built bytecode copy");
    }
    size_t start = *nout, keep = b->n - npop;
    /* Every frame that calls one pushed is at a call, not a SEND or
     * FOR_ITER. */
    for (size_t j = 1; j <= npush; j++) {
        const live_frame *below_caller = &b->frames[keep - 1];
        bool resume = j == npush ? synth_at_resume(im, below_caller->bc, below_caller->unit)
                                 : synth_at_resume(im, find_built(im, push[j].code), push[j].unit);
        if (resume)
            return synth_fail(im, "a frame at SEND or FOR_ITER calls a function");
    }
    /* Return: the returning frame stops (its stacktop), the thread's top
     * becomes the caller, the returned frames are cleared (3.13: stacktop
     * 0), the data stack shrinks, and the caller runs on (stacktop -1). */
    uint64_t pos = b->first_slot;
    for (size_t k = 0; k < keep; k++)
        if (!b->frames[k].generator)
            pos = b->frames[k].addr + ((((uint64_t)l->fr_size + FRAME_SLACK + 7) & ~7ull));
    uint64_t below = b->frames[keep - 1].addr;
    if (npop && (stacktop_write(l, out, cap, nout, b->frames[b->n - 1].addr, SYNTH_NLOCALSPLUS) ||
                 add_write(out, cap, nout, b->top_word, below, 8, true)))
        goto full;
    for (size_t k = keep; npop && l->minor == SYNTH_CLEARS_STACKTOP_MINOR && k < b->n; k++)
        if (!b->frames[k].generator && stacktop_write(l, out, cap, nout, b->frames[k].addr, 0))
            goto full;
    if (npop && (add_write(out, cap, nout, b->ts_datastack_top_word, pos, 8, false) ||
                 stacktop_write(l, out, cap, nout, below, SYNTH_STACKTOP_RUNNING)))
        goto full;
    /* A call: the caller stops at it (its stacktop) before the callee is set up. */
    if (npush && stacktop_write(l, out, cap, nout, below, SYNTH_NLOCALSPLUS))
        goto full;
    /* Calls, outermost first: the frame's fields, the data stack's top,
     * then the thread's top (the instant the callee is on the stack). */
    live_frame placed[SYNTH_MAX_MOVE_FRAMES];
    if (npush > SYNTH_MAX_MOVE_FRAMES)
        return synth_fail(im, "too many frames pushed in one move");
    for (size_t j = npush; j-- > 0;) {
        const synth_frame *f = &push[j];
        const built_code *bc = find_built(im, f->code);
        uint64_t fa = synth_frame_slot(im, &pos, b->chunk_end);
        if (!fa)
            return synth_fail(im, "data stack chunk full");
        uint64_t exec = bc->addr | (l->executable_tag_mask & 1u);
        if (add_write(out, cap, nout, fa + (uint64_t)l->fr_executable, exec, 8, false) ||
            add_write(out, cap, nout, fa + (uint64_t)l->fr_previous, below, 8, false) ||
            add_write(out, cap, nout, fa + (uint64_t)l->fr_instr_ptr,
                      bc->tlbc_copies[f->tlbc_index] + (uint64_t)f->unit * 2, 8, false) ||
            add_write(out, cap, nout, fa + (uint64_t)l->fr_owner, (uint8_t)l->owner_thread, 1, false) ||
            (l->fr_tlbc_index != FPI_OFF_NONE &&
             add_write(out, cap, nout, fa + (uint64_t)l->fr_tlbc_index, (uint32_t)f->tlbc_index, 4, false)) ||
            (l->fr_is_entry != FPI_OFF_NONE && add_write(out, cap, nout, fa + (uint64_t)l->fr_is_entry, 0, 1, false)) ||
            stacktop_write(l, out, cap, nout, fa, j == 0 ? SYNTH_STACKTOP_RUNNING : SYNTH_NLOCALSPLUS) ||
            add_write(out, cap, nout, b->ts_datastack_top_word, pos, 8, false) ||
            add_write(out, cap, nout, b->top_word, fa, 8, true))
            goto full;
        placed[npush - 1 - j] = (live_frame){fa, bc, f->tlbc_index, false, f->unit};
        below = fa;
    }
    b->n = keep;
    for (size_t j = 0; j < npush; j++)
        if (synth_book_frame(b, placed[j].addr, placed[j].bc, placed[j].tlbc, false, placed[j].unit))
            return synth_fail(im, "out of memory");
    return FP_OK;
full:
    *nout = start;
    return synth_fail(im, "too many writes for the plan's buffer");
}

int synth_plan_advance(synth_image *im, size_t t, int unit, synth_write *out, size_t cap, size_t *nout)
{
    if (t >= im->nthreads || im->books[t].n == 0)
        return synth_fail(im, "no frame to advance");
    live_frame *top = &im->books[t].frames[im->books[t].n - 1];
    if (add_write(out, cap, nout, top->addr + (uint64_t)im->l.fr_instr_ptr,
                  top->bc->tlbc_copies[top->tlbc] + (uint64_t)unit * 2, 8, true))
        return synth_fail(im, "too many writes for the plan's buffer");
    top->unit = unit;
    return FP_OK;
}

void synth_apply(synth_image *im, const synth_write *w)
{
    switch (w->size) {
    case 1:
        synth_put8(im, w->addr, (uint8_t)w->value);
        break;
    case 4:
        synth_put32(im, w->addr, (uint32_t)w->value);
        break;
    default:
        synth_put64(im, w->addr, w->value);
        break;
    }
}

int synth_plan_yield(synth_image *im, size_t t, synth_write *out, size_t cap, size_t *nout)
{
    const fpi_layout *l = &im->l;
    if (l->gen_state_before_frame != FPI_OFF_NONE)
        return synth_fail(im, "3.11 resumes generators in their own evaluation: not modelled");
    if (t >= im->nthreads || im->books[t].n < 2 || !im->books[t].frames[im->books[t].n - 1].generator)
        return synth_fail(im, "the top frame is not a generator's, or is the outermost");
    thread_book *b = &im->books[t];
    const live_frame *g = &b->frames[b->n - 1];
    if (im->nsuspended == im->suspended_cap) {
        size_t ncap = im->suspended_cap ? im->suspended_cap * 2 : 8;
        live_frame *ns = realloc(im->suspended, ncap * sizeof *ns);
        if (!ns)
            return synth_fail(im, "out of memory");
        im->suspended = ns;
        im->suspended_cap = ncap;
    }
    size_t start = *nout;
    /* YIELD_VALUE: the frame stops, the caller becomes the top, the frame
     * is unlinked, and the caller runs on. */
    if (stacktop_write(l, out, cap, nout, g->addr, SYNTH_NLOCALSPLUS) ||
        add_write(out, cap, nout, b->top_word, b->frames[b->n - 2].addr, 8, true) ||
        add_write(out, cap, nout, g->addr + (uint64_t)l->fr_previous, 0, 8, false) ||
        stacktop_write(l, out, cap, nout, b->frames[b->n - 2].addr, SYNTH_STACKTOP_RUNNING)) {
        *nout = start;
        return synth_fail(im, "too many writes for the plan's buffer");
    }
    im->suspended[im->nsuspended++] = *g;
    b->n--;
    return FP_OK;
}

size_t synth_suspended_count(const synth_image *im)
{
    return im->nsuspended;
}

int synth_plan_resume(synth_image *im, size_t t, size_t which, synth_write *out, size_t cap, size_t *nout)
{
    const fpi_layout *l = &im->l;
    if (t >= im->nthreads || im->books[t].n == 0 || which >= im->nsuspended)
        return synth_fail(im, "no such thread or suspended generator");
    thread_book *b = &im->books[t];
    live_frame g = im->suspended[which];
    size_t start = *nout;
    if (!synth_at_resume(im, b->frames[b->n - 1].bc, b->frames[b->n - 1].unit))
        return synth_fail(im, "the top frame is not at SEND or FOR_ITER");
    /* SEND / FOR_ITER into a generator: the caller stops at it, the frame
     * is linked under the top, becomes the top and runs. */
    if (stacktop_write(l, out, cap, nout, b->frames[b->n - 1].addr, SYNTH_NLOCALSPLUS) ||
        add_write(out, cap, nout, g.addr + (uint64_t)l->fr_previous, b->frames[b->n - 1].addr, 8, false) ||
        add_write(out, cap, nout, b->top_word, g.addr, 8, true) ||
        stacktop_write(l, out, cap, nout, g.addr, SYNTH_STACKTOP_RUNNING)) {
        *nout = start;
        return synth_fail(im, "too many writes for the plan's buffer");
    }
    if (synth_book_frame(b, g.addr, g.bc, g.tlbc, true, g.unit)) {
        *nout = start;
        return synth_fail(im, "out of memory");
    }
    im->suspended[which] = im->suspended[--im->nsuspended];
    return FP_OK;
}

/* The word that links thread list position p (the interpreter's head for
 * the first). */
static uint64_t list_link(const synth_image *im, size_t p)
{
    return p == 0 ? im->interp + (uint64_t)im->l.interp_threads_head
                  : im->ts_addrs[im->list[p - 1]] + (uint64_t)im->l.ts_next;
}

/* The words of a thread state the walker reads (next, ids, data stack,
 * top), each set to `word`. */
static int fill_state_words(const synth_image *im, uint64_t ts, uint64_t word, synth_write *out, size_t cap,
                            size_t *nout)
{
    const fpi_layout *l = &im->l;
    int32_t words[] = {l->ts_next, l->ts_native_thread_id, l->ts_thread_id, l->ts_datastack_top,
                       l->ts_current_frame != FPI_OFF_NONE ? l->ts_current_frame : l->ts_cframe};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (add_write(out, cap, nout, ts + (uint64_t)words[i], word, 8, false))
            return -1;
    return 0;
}

int synth_plan_thread_exit(synth_image *im, size_t t, synth_write *out, size_t cap, size_t *nout)
{
    size_t p = 0;
    while (p < im->nlist && im->list[p] != t)
        p++;
    if (t >= im->nthreads || p == im->nlist)
        return synth_fail(im, "no such thread in the list");
    uint64_t ts = im->ts_addrs[t];
    if (im->books[t].main)
        return synth_fail(im, "the main thread does not exit while others run");
    uint64_t after = p + 1 < im->nlist ? im->ts_addrs[im->list[p + 1]] : 0;
    /* Unlinked (tstate_delete_common), then freed: the debug allocator's
     * dead bytes where the walker looks. */
    size_t start = *nout;
    if (add_write(out, cap, nout, list_link(im, p), after, 8, true) ||
        fill_state_words(im, ts, SYNTH_FREED_WORD, out, cap, nout))
        goto full;
    memmove(im->list + p, im->list + p + 1, (im->nlist - p - 1) * sizeof *im->list);
    im->nlist--;
    im->books[t].exited = true;
    im->books[t].n = 0;
    return FP_OK;
full:
    *nout = start;
    return synth_fail(im, "too many writes for the plan's buffer");
}

int synth_plan_thread_start(synth_image *im, size_t t, uint64_t native_id, uint64_t thread_id, synth_write *out,
                            size_t cap, size_t *nout)
{
    const fpi_layout *l = &im->l;
    if (t >= im->nthreads || !im->books[t].exited)
        return synth_fail(im, "only an exited thread's state is reused");
    thread_book *b = &im->books[t];
    uint64_t ts = im->ts_addrs[t];
    uint64_t head = im->nlist ? im->ts_addrs[im->list[0]] : 0;
    size_t start = *nout;
    /* The new thread state: allocated zeroed (alloc_threadstate's calloc,
     * on every build), set up with no frame yet, then linked at the head
     * (new_threadstate: init, then add_threadstate).  A stale link into it
     * meets an empty next link while it is set up. */
    uint64_t top_word = ts + (uint64_t)l->ts_current_frame;
    if (fill_state_words(im, ts, 0, out, cap, nout) ||
        add_write(out, cap, nout, ts + (uint64_t)l->ts_native_thread_id, native_id, 8, false) ||
        add_write(out, cap, nout, ts + (uint64_t)l->ts_thread_id, thread_id, 8, false) ||
        add_write(out, cap, nout, ts + (uint64_t)l->ts_datastack_top, b->first_slot, 8, false))
        goto full;
    if (l->ts_current_frame == FPI_OFF_NONE) {
        uint64_t root = ts + (uint64_t)l->ts_root_cframe;
        top_word = root + (uint64_t)l->cframe_current_frame;
        if (add_write(out, cap, nout, ts + (uint64_t)l->ts_cframe, root, 8, false))
            goto full;
    }
    if (add_write(out, cap, nout, top_word, b->empty_top, 8, false) ||
        add_write(out, cap, nout, ts + (uint64_t)l->ts_next, head, 8, false) ||
        add_write(out, cap, nout, list_link(im, 0), ts, 8, true))
        goto full;
    memmove(im->list + 1, im->list, im->nlist * sizeof *im->list);
    im->list[0] = t;
    im->nlist++;
    b->top_word = top_word;
    b->exited = false;
    return FP_OK;
full:
    *nout = start;
    return synth_fail(im, "too many writes for the plan's buffer");
}
