/* synth.c — builds synthetic CPython address spaces from descriptions (see
 * synth.h) using each layout's real offsets, and reads them back through the
 * fp_reader interface. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "debug_offsets.h"
#include "synth.h"
#include "call_sites.h"
#include "call_sites_table.h"
#include "synth_image.h"
#include "versions.h"

/* Backs len bytes at the next free address and keeps `span` bytes of
 * address space for them (span >= len): nothing else is placed there. */
static uint64_t alloc_span(synth_image *im, size_t len, size_t span)
{
    if (im->nr == MAX_REGIONS)
        return 0;
    if (im->nr == im->cap) {
        size_t ncap = im->cap ? im->cap * 2 : 64;
        region *nr = realloc(im->r, ncap * sizeof *nr);
        if (!nr)
            return 0;
        im->r = nr;
        im->cap = ncap;
    }
    uint8_t *b = calloc(1, len ? len : 1);
    if (!b)
        return 0;
    uint64_t addr = im->next;
    im->r[im->nr++] = (region){addr, len, b};
    im->next = (addr + (span > len ? span : len) + REGION_GAP + REGION_ALIGN - 1) & ~(REGION_ALIGN - 1);
    return addr;
}

static uint64_t alloc(synth_image *im, size_t len)
{
    return alloc_span(im, len, len);
}

uint64_t synth_alloc(synth_image *im, size_t len)
{
    return alloc(im, len);
}

uint8_t *synth_bytes(synth_image *im, uint64_t addr, size_t len)
{
    size_t lo = 0, hi = im->nr;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const region *g = &im->r[mid];
        if (addr < g->addr)
            hi = mid;
        else if (addr >= g->addr + g->len)
            lo = mid + 1;
        else
            return len <= g->addr + g->len - addr ? g->bytes + (addr - g->addr) : NULL;
    }
    return NULL;
}

/* 3.14+: the stack pointer of the frame at fa stopped with an empty value
 * stack (SYNTH_NLOCALSPLUS slots above localsplus). */
uint64_t synth_stopped_stack_pointer(const fpi_layout *l, uint64_t fa)
{
    return fa + (uint64_t)l->fr_localsplus + 8u * SYNTH_NLOCALSPLUS;
}

void synth_put64(synth_image *im, uint64_t addr, uint64_t v)
{
    uint8_t *p = synth_bytes(im, addr, 8);
    if (p)
        memcpy(p, &v, 8);
}

void synth_put32(synth_image *im, uint64_t addr, uint32_t v)
{
    uint8_t *p = synth_bytes(im, addr, 4);
    if (p)
        memcpy(p, &v, 4);
}

void synth_put8(synth_image *im, uint64_t addr, uint8_t v)
{
    uint8_t *p = synth_bytes(im, addr, 1);
    if (p)
        *p = v;
}

int synth_fail(synth_image *im, const char *msg)
{
    if (im->err)
        snprintf(im->err, im->errlen, "synth: %s", msg);
    return FP_E_INVALID_ARG;
}

static int setup_layout(synth_image *im, const char *id, const uint8_t *table, size_t table_len)
{
    /* Free-threaded 3.14+ keeps `interned` in a whole byte (for atomic
     * access), moving kind/compact/ascii up by six bits. */
    bool ft314 = strcmp(id, "3.14t") == 0 || strcmp(id, "3.15t") == 0;
    im->kind_shift = ft314 ? 8 : 2;
    im->compact_bit = ft314 ? 11 : 5;
    im->ascii_bit = ft314 ? 12 : 6;
    if (strcmp(id, "3.11") == 0 || strcmp(id, "3.12") == 0) {
        im->l = *(strcmp(id, "3.11") == 0 ? fpi_layout_builtin_311() : fpi_layout_builtin_312());
        im->hexversion = strcmp(id, "3.11") == 0 ? 0x030b07f0u : 0x030c01f0u;
        return FP_OK;
    }
    if (!table)
        return synth_fail(im, "3.13+ layouts need their debug-offsets table");
    fpi_errbuf eb = {{0}};
    int rc = fpi_debug_offsets_parse(table, table_len, &im->l, &eb);
    if (rc)
        return synth_fail(im, eb.msg);
    im->hexversion = im->l.hexversion;
    bool want_ft = strchr(id, 't') != NULL;
    if (want_ft != im->l.free_threaded)
        return synth_fail(im, "the table's free-threaded flag does not match the layout id");
    return FP_OK;
}

uint64_t synth_frame_slot(synth_image *im, uint64_t *chunk_pos, uint64_t chunk_end)
{
    uint64_t a = *chunk_pos;
    uint64_t step = ((uint64_t)im->l.fr_size + FRAME_SLACK + 7) & ~7ull;
    if (a + step > chunk_end)
        return 0;
    *chunk_pos = a + step;
    return a;
}

/* The opcode every built code unit holds: one at which a caller can be
 * suspended under a function's frame.  And (3.12+) the one a caller under
 * a generator's frame is put at instead, SEND or FOR_ITER; on 3.12 one with
 * as many inline cache units, so that the instruction map decodes the code
 * the same way whichever of the two a unit holds. */
static void choose_ops(synth_image *im)
{
    const struct fpi_call_site_set *set = fpi_call_sites_for(FPI_PY_MAJOR, im->l.minor);
    im->fill_op = im->resume_op = -1;
    for (int op = 0; set && op < 256 && im->fill_op < 0; op++) {
        uint64_t bit = 1ull << (op % 64);
        if ((set->ops[op / 64] & bit) && !(set->gen_ops[op / 64] & bit) && !(set->gen_callee_ops[op / 64] & bit))
            im->fill_op = op;
    }
    for (int op = 0; im->fill_op >= 0 && op < 256 && im->resume_op < 0; op++) {
        uint64_t bit = 1ull << (op % 64);
        if ((set->ops[op / 64] & bit) && (set->gen_callee_ops[op / 64] & bit) &&
            (im->l.minor >= SYNTH_AT_INSTRUCTION_MINOR || set->caches[op] == set->caches[im->fill_op]))
            im->resume_op = op;
    }
}

/* The unit holding the instruction a frame at `unit` is suspended in:
 * the unit itself (3.13+), or the start of the instruction whose inline
 * cache units follow it (3.11, 3.12: a caller may name its last one). */
static uint64_t instruction_unit(const synth_image *im, int unit)
{
    if (im->l.minor >= SYNTH_AT_INSTRUCTION_MINOR || im->fill_op < 0)
        return (uint64_t)unit;
    const struct fpi_call_site_set *set = fpi_call_sites_for(FPI_PY_MAJOR, im->l.minor);
    uint64_t len = 1u + set->caches[im->fill_op];
    return (uint64_t)unit - (uint64_t)unit % len;
}

bool synth_at_resume(synth_image *im, const built_code *bc, int unit)
{
    return im->resume_op >= 0 && *synth_bytes(im, bc->tlbc_copies[0] + 2u * instruction_unit(im, unit), 1) ==
                                     (uint8_t)im->resume_op;
}

/* 3.12+: a frame under a directly linked generator's frame resumed it, so
 * it is at SEND or FOR_ITER; one under a function's frame called it, so
 * it is not.  Puts every frame of the first kind at one and fails on a
 * description whose frames of the second kind share such an instruction
 * (3.11 resumes every generator from C code: no frame is of the first
 * kind there). */
static int place_resumes(synth_image *im, const synth_desc *d, const built_code *codes, size_t ncodes)
{
    for (int pass = 0; pass < 2; pass++)
        for (size_t t = 0; t < d->nthreads; t++)
            for (size_t k = 1; k < d->threads[t].nframes; k++) {
                const synth_frame *f = &d->threads[t].frames[k], *callee = f - 1;
                const built_code *bc = NULL;
                for (size_t c = 0; c < ncodes && !bc; c++)
                    bc = codes[c].src == f->code ? &codes[c] : NULL;
                if (callee->entry_below || !bc || im->resume_op < 0)
                    continue;
                if (pass == 0 && callee->generator)
                    synth_put8(im, bc->tlbc_copies[0] + 2u * instruction_unit(im, f->unit), (uint8_t)im->resume_op);
                if (pass == 1 && !callee->generator && synth_at_resume(im, bc, f->unit))
                    return synth_fail(im, "a frame under a function's frame shares the SEND of one under a generator's");
            }
    return FP_OK;
}

int synth_book_frame(thread_book *b, uint64_t addr, const built_code *bc, int tlbc, bool generator, int unit)
{
    if (b->n == b->cap) {
        size_t ncap = b->cap ? b->cap * 2 : 16;
        live_frame *nf = realloc(b->frames, ncap * sizeof *nf);
        if (!nf)
            return -1;
        b->frames = nf;
        b->cap = ncap;
    }
    b->frames[b->n++] = (live_frame){addr, bc, tlbc, generator, unit};
    return 0;
}

static int build_thread(synth_image *im, uint64_t interp, uint64_t prev_ts, const synth_thread *t, size_t ti,
                        built_code *codes, size_t ncodes, uint64_t *ts_out)
{
    thread_book *book = &im->books[ti];
    const fpi_layout *l = &im->l;
    if (t->nframes > MAX_FRAMES_PER_THREAD)
        return synth_fail(im, "too many frames");
    uint64_t ts = alloc(im, (size_t)l->ts_size + TS_EXTRA_BYTES);
    /* The chunk is CHUNK_BYTES long and all of it readable, like CPython's
     * (a frame anywhere in it belongs to the data stack; a sample reads
     * ahead past the top the last one saw). */
    uint64_t chunk = alloc(im, CHUNK_BYTES);
    if (!ts || !chunk)
        return synth_fail(im, "out of memory");
    (void)prev_ts;
    synth_put64(im, ts + (uint64_t)l->ts_interp, interp);
    synth_put64(im, ts + (uint64_t)l->ts_thread_id, t->thread_id);
    synth_put64(im, ts + (uint64_t)l->ts_native_thread_id, t->native_id);
    synth_put64(im, ts + (uint64_t)l->ts_datastack_chunk, chunk);
    synth_put64(im, ts + (uint64_t)l->ts_exc_info, ts + (uint64_t)l->ts_exc_state);
    synth_put64(im, ts + (uint64_t)l->ts_exc_state + (uint64_t)l->err_exc_value, im->none);
    synth_put64(im, chunk + (uint64_t)l->chunk_size, CHUNK_BYTES);
    uint64_t pos = chunk + CHUNK_HEADER + 8, end = chunk + CHUNK_BYTES;
    book->first_slot = pos;
    book->ts_datastack_top_word = ts + (uint64_t)l->ts_datastack_top;
    book->chunk_end = end;

    /* Frames are pushed outermost first, like a real data stack. */
    uint64_t *addrs = calloc(t->nframes ? t->nframes : 1, sizeof *addrs);
    if (!addrs)
        return synth_fail(im, "out of memory");
    im->frame_addrs[ti] = addrs;
    uint64_t below = 0; /* the caller of the frame being placed */
    uint64_t base = 0;
    if (l->ts_base_frame != FPI_OFF_NONE) {
        base = alloc(im, (size_t)l->fr_size);
        if (!base)
            return synth_fail(im, "out of memory");
        synth_put8(im, base + (uint64_t)l->fr_owner, (uint8_t)l->owner_interpreter);
        synth_put64(im, ts + (uint64_t)l->ts_base_frame, base);
        below = base;
    } else if (l->fr_is_entry == FPI_OFF_NONE && l->owner_cstack >= 0 && t->nframes > 0) {
        /* Before 3.15 a thread's chain ends at the evaluation loop's entry
         * frame (3.12+), on the C stack. */
        uint64_t entry = alloc(im, (size_t)l->fr_size);
        if (!entry)
            return synth_fail(im, "out of memory");
        synth_put8(im, entry + (uint64_t)l->fr_owner, (uint8_t)l->owner_cstack);
        below = entry;
    }
    book->bottom = below;
    for (size_t k = t->nframes; k-- > 0;) {
        const synth_frame *f = &t->frames[k];
        const built_code *bc = NULL;
        for (size_t c = 0; c < ncodes; c++)
            if (codes[c].src == f->code)
                bc = &codes[c];
        if (!bc)
            return synth_fail(im, "frame refers to an unknown code object");
        if (f->entry_below && (l->owner_cstack >= 0 || l->owner_interpreter >= 0)) {
            uint64_t entry = alloc(im, (size_t)l->fr_size); /* on the C stack, outside the chunks */
            if (!entry)
                return synth_fail(im, "out of memory");
            int owner = l->owner_interpreter >= 0 ? l->owner_interpreter : l->owner_cstack;
            synth_put8(im, entry + (uint64_t)l->fr_owner, (uint8_t)owner);
            synth_put64(im, entry + (uint64_t)l->fr_previous, below);
            below = entry;
        }
        uint64_t fa;
        if (f->generator) {
            uint64_t gen = alloc(im, (size_t)l->fr_size + FRAME_SLACK + GEN_HEADER_BYTES);
            fa = gen ? gen + GEN_HEADER_BYTES : 0; /* embedded in a generator object */
        } else {
            fa = synth_frame_slot(im, &pos, end);
        }
        if (!fa)
            return synth_fail(im, "data stack chunk full or out of memory");
        addrs[k] = fa;
        int tlbc = f->tlbc_index;
        if (tlbc < 0 || tlbc >= SYNTH_MAX_TLBC || (tlbc && !bc->tlbc_copies[tlbc]))
            return synth_fail(im, "bad tlbc index");
        uint64_t exec = bc->addr | (l->executable_tag_mask & 1u); /* a tagged reference where tags exist */
        synth_put64(im, fa + (uint64_t)l->fr_executable, exec);
        synth_put64(im, fa + (uint64_t)l->fr_previous, below);
        synth_put64(im, fa + (uint64_t)l->fr_instr_ptr, bc->tlbc_copies[tlbc] + (uint64_t)f->unit * 2);
        synth_put8(im, fa + (uint64_t)l->fr_owner, (uint8_t)(f->generator ? l->owner_generator : l->owner_thread));
        if (l->fr_tlbc_index != FPI_OFF_NONE)
            synth_put32(im, fa + (uint64_t)l->fr_tlbc_index, (uint32_t)tlbc);
        if (l->fr_stacktop != FPI_OFF_NONE)
            synth_put32(im, fa + (uint64_t)l->fr_stacktop, k == 0 ? SYNTH_STACKTOP_RUNNING : SYNTH_NLOCALSPLUS);
        if (l->fr_stackpointer != FPI_OFF_NONE) /* 3.14+: as a release build leaves it, also the top's */
            synth_put64(im, fa + (uint64_t)l->fr_stackpointer, synth_stopped_stack_pointer(l, fa));
        /* 3.11: the outermost frame of a thread was entered from C code,
         * and so was one whose caller is C code (entry_below), and every
         * generator's (3.11 resumes them from C code). */
        if (l->fr_is_entry != FPI_OFF_NONE && (k == t->nframes - 1 || f->entry_below || f->generator))
            synth_put8(im, fa + (uint64_t)l->fr_is_entry, 1);
        if (synth_book_frame(book, fa, bc, tlbc, f->generator, f->unit))
            return synth_fail(im, "out of memory");
        below = fa;
    }
    uint64_t top = below;
    if (base && t->nframes == 0)
        top = base;
    book->empty_top = base;
    book->main = t->main;
    synth_put64(im, ts + (uint64_t)l->ts_datastack_top, pos);
    if (l->ts_current_frame != FPI_OFF_NONE) {
        synth_put64(im, ts + (uint64_t)l->ts_current_frame, top);
        book->top_word = ts + (uint64_t)l->ts_current_frame;
    } else {
        /* A thread running no evaluation is on its own root _PyCFrame;
         * one running Python code on an evaluation's. */
        uint64_t cf = top == 0 ? ts + (uint64_t)l->ts_root_cframe : alloc(im, CFRAME_BYTES);
        if (!cf)
            return synth_fail(im, "out of memory");
        synth_put64(im, cf + (uint64_t)l->cframe_current_frame, top);
        synth_put64(im, ts + (uint64_t)l->ts_cframe, cf);
        book->top_word = cf + (uint64_t)l->cframe_current_frame;
    }
    *ts_out = ts;
    return FP_OK;
}

int synth_build(const char *layout_id, const uint8_t *table, size_t table_len, const synth_desc *d,
                synth_image **out, char *err, size_t errlen)
{
    synth_image *im = calloc(1, sizeof *im);
    if (!im)
        return FP_E_NOMEM;
    im->err = err;
    im->errlen = errlen;
    im->next = BASE_ADDR;
    built_code *codes = NULL;
    int rc = setup_layout(im, layout_id, table, table_len);
    if (rc)
        goto out;
    choose_ops(im);
    const fpi_layout *l = &im->l;
    im->frame_addrs = calloc(d->nthreads ? d->nthreads : 1, sizeof *im->frame_addrs);
    im->ts_addrs = calloc(d->nthreads ? d->nthreads : 1, sizeof *im->ts_addrs);
    im->books = calloc(d->nthreads ? d->nthreads : 1, sizeof *im->books);
    im->list = calloc(d->nthreads ? d->nthreads : 1, sizeof *im->list);
    im->nthreads = d->nthreads;
    if (!im->frame_addrs || !im->ts_addrs || !im->books || !im->list) {
        rc = FP_E_NOMEM;
        goto out;
    }
    /* The runtime: the debug table first (3.13+), then the interpreter list. */
    size_t rt_len = (size_t)l->rt_interpreters_head + 64 + FPI_DEBUG_OFFSETS_READ;
    im->runtime = alloc(im, rt_len);
    im->type_code = synth_type_object(im, "code");
    im->type_str = synth_type_object(im, "str");
    im->type_bytes = synth_type_object(im, "bytes");
    im->type_none = synth_type_object(im, "NoneType");
    im->none = alloc(im, (size_t)l->ob_type + 8u);
    if (im->none)
        synth_put64(im, im->none + (uint64_t)l->ob_type, im->type_none);
    /* Only the interpreter fields the walker reads need backing memory (the
     * full PyInterpreterState is ~250 KB, which would dominate fuzzing). */
    int32_t interp_fields[] = {l->interp_next, l->interp_id, l->interp_threads_head, l->interp_threads_main,
                               l->interp_ceval_gil, l->interp_code_generation, l->interp_tlbc_generation};
    int32_t interp_hi = 0;
    for (size_t i = 0; i < sizeof interp_fields / sizeof interp_fields[0]; i++)
        if (interp_fields[i] > interp_hi)
            interp_hi = interp_fields[i];
    uint64_t interp = alloc(im, (size_t)interp_hi + 8);
    uint64_t gil = alloc(im, GIL_BYTES);
    if (!im->runtime || !im->type_code || !im->type_str || !im->type_bytes || !interp || !gil) {
        rc = synth_fail(im, "out of memory");
        goto out;
    }
    if (table)
        memcpy(synth_bytes(im, im->runtime, FPI_DEBUG_OFFSETS_READ), table,
               table_len < FPI_DEBUG_OFFSETS_READ ? table_len : FPI_DEBUG_OFFSETS_READ);
    synth_put64(im, im->runtime + (uint64_t)l->rt_interpreters_head, interp);
    if (l->interp_ceval_gil != FPI_OFF_NONE)
        synth_put64(im, interp + (uint64_t)l->interp_ceval_gil, gil);

    /* Code objects, once each. */
    size_t total = 0;
    for (size_t t = 0; t < d->nthreads; t++)
        total += d->threads[t].nframes;
    total += d->ncodes;
    codes = calloc(total ? total : 1, sizeof *codes);
    size_t ncodes = 0;
    if (!codes) {
        rc = FP_E_NOMEM;
        goto out;
    }
    for (size_t t = 0; t < d->nthreads; t++) {
        for (size_t k = 0; k < d->threads[t].nframes; k++) {
            const synth_frame *f = &d->threads[t].frames[k];
            bool known = false;
            for (size_t c = 0; c < ncodes; c++)
                known |= codes[c].src == f->code;
            if (known)
                continue;
            if (synth_code_object(im, f->code, true, &codes[ncodes]) != 0) {
                rc = synth_fail(im, "cannot build a code object (bad UTF-8 or out of memory)");
                goto out;
            }
            ncodes++;
        }
    }
    /* Then those no frame names yet (for synth_plan_move). */
    for (size_t k = 0; k < d->ncodes; k++) {
        bool known = false;
        for (size_t c = 0; c < ncodes; c++)
            known |= codes[c].src == &d->codes[k];
        if (known)
            continue;
        if (synth_code_object(im, &d->codes[k], true, &codes[ncodes]) != 0) {
            rc = synth_fail(im, "cannot build a code object (bad UTF-8 or out of memory)");
            goto out;
        }
        ncodes++;
    }
    if ((rc = place_resumes(im, d, codes, ncodes)))
        goto out;
    uint64_t prev = 0, first = 0;
    for (size_t t = 0; t < d->nthreads; t++) {
        uint64_t ts = 0;
        if ((rc = build_thread(im, interp, prev, &d->threads[t], t, codes, ncodes, &ts)))
            goto out;
        im->ts_addrs[t] = ts;
        if (prev)
            synth_put64(im, prev + (uint64_t)l->ts_next, ts);
        else
            first = ts;
        if (d->threads[t].main) {
            if (l->interp_threads_main != FPI_OFF_NONE)
                synth_put64(im, interp + (uint64_t)l->interp_threads_main, ts);
            if (l->rt_main_thread != FPI_OFF_NONE)
                synth_put64(im, im->runtime + (uint64_t)l->rt_main_thread, d->threads[t].thread_id);
        }
        prev = ts;
        im->list[im->nlist++] = t;
    }
    synth_put64(im, interp + (uint64_t)l->interp_threads_head, first);
    im->interp = interp;
    im->codes = codes;
    im->ncodes = ncodes;
    codes = NULL;
    *out = im;
    im = NULL;
out:
    free(codes);
    synth_free(im);
    return rc;
}

void synth_free(synth_image *im)
{
    if (!im)
        return;
    for (size_t i = 0; i < im->nr; i++)
        free(im->r[i].bytes);
    free(im->r);
    if (im->frame_addrs)
        for (size_t t = 0; t < im->nthreads; t++)
            free(im->frame_addrs[t]);
    free(im->frame_addrs);
    free(im->ts_addrs);
    if (im->books)
        for (size_t t = 0; t < im->nthreads; t++)
            free(im->books[t].frames);
    free(im->books);
    free(im->list);
    free(im->suspended);
    free(im->codes);
    free(im->task_addrs);
    free(im);
}

static int synth_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    uint8_t *p = synth_bytes(ctx, addr, len);
    if (!p)
        return FP_E_READ;
    memcpy(buf, p, len);
    return FP_OK;
}

static const fp_reader_ops synth_ops = {
    .name = "synthetic image",
    .read = synth_read,
    .readv = NULL,
    .close = NULL,
};

void synth_reader(synth_image *im, fp_reader *out)
{
    out->ops = &synth_ops;
    out->ctx = im;
}

void synth_target(const synth_image *im, fp_target_desc *out)
{
    memset(out, 0, sizeof *out);
    out->runtime_addr = im->runtime;
    out->hexversion = im->hexversion;
    out->free_threaded = im->l.free_threaded;
    out->asyncio_debug_addr = im->asyncio_table;
}

const fpi_layout *synth_layout(const synth_image *im)
{
    return &im->l;
}

uint64_t synth_switch_stack(synth_image *im, size_t t)
{
    const fpi_layout *l = &im->l;
    if (t >= im->nthreads || l->ts_base_frame == FPI_OFF_NONE || im->books[t].n == 0)
        return 0;
    thread_book *book = &im->books[t];
    uint64_t entry = alloc(im, (size_t)l->fr_size); /* the evaluation's entry frame, a C local */
    if (!entry)
        return 0;
    synth_put8(im, entry + (uint64_t)l->fr_owner, (uint8_t)l->owner_interpreter);
    synth_put64(im, book->frames[0].addr + (uint64_t)l->fr_previous, entry);
    book->bottom = entry;
    return entry;
}

uint64_t synth_frame_addr(const synth_image *im, size_t t, size_t f)
{
    return t < im->nthreads && im->frame_addrs[t] ? im->frame_addrs[t][f] : 0;
}

uint64_t synth_thread_state_addr(const synth_image *im, size_t t)
{
    return t < im->nthreads ? im->ts_addrs[t] : 0;
}
