/* verify.c — the read-back check that makes a sample of a running thread
 * consistent.
 *
 * A walk reads a thread's state, its data-stack chunks and the frames that
 * live outside them at different instants while the thread runs on.  Such
 * a copy can follow a top-frame pointer the thread has already left, walk
 * into slots a newer call chain has reused at the same depth (one stack
 * made of two chains: the "ABA" case), read a generator frame at another
 * instant than its caller, or take a thread state that is being freed.
 *
 * After the walk, everything that decided the stack is read back in one
 * batched read — the link that put the thread state on its interpreter's
 * list, the thread state's ids, top frame and data-stack pointers, the live
 * parts of its chunks, every other frame that was followed, and the
 * interpreter's code-object generation (3.14+) — and the walk is accepted
 * only when all of it is unchanged (but the top frame's instruction, which
 * moves while the thread runs): then the suspended frames were the
 * thread's stack at the read-back as well as at the copy.  Otherwise
 * the thread is reported torn (FP_E_INCOMPLETE), which the walker retries
 * from fresh reads within its budget. */
#include <stdint.h>
#include <string.h>

#include "frame.h"
#include "grow.h"
#include "read.h"
#include "reader_vm.h"
#include "session.h"
#include "verify.h"

#define VERIFY_BUF_INITIAL 65536u
#define NO_READ SIZE_MAX   /* verify_at: a range this read-back does not read */

/* Two read-backs are there for a copy torn by a thread switching call
 * chains at the same depth and read back torn the same way (live
 * scenario many_threads, 3.11 and 3.12, with one read-back: x2 under
 * leaf_y).  Where a caller keeps its stack depth and the function it
 * called (every supported version: 3.11-3.13 a stacktop, 3.14+ a stack
 * pointer), that mixture is refused by structure (emit.c:
 * callee_was_called, and on 3.11-3.13 the depth checks), so one read-back
 * comes first and the second only for a walk with a link the callee check
 * could not compare (a generator's frame, a call through C, the __init__
 * shim, a 3.14+ debug build's caller with a NULL stack pointer). */
unsigned fpi_verify_reads_first(const fpi_layout *l)
{
    bool depth = l->fr_stacktop != FPI_OFF_NONE || l->fr_stackpointer != FPI_OFF_NONE;
    bool checked = depth && l->fr_funcobj != FPI_OFF_NONE && l->fr_localsplus != FPI_OFF_NONE;
    return checked ? FPI_VERIFY_READS_CHECKED : FPI_VERIFY_READS;
}

/* Does the frame read back at fr still hold every field of f that the walk
 * used?  The top frame runs on: its instruction and its stack depth
 * (3.11-3.13: -1 while it runs, a depth when it stops at a call or its
 * return; 3.14+: saved at every escaping call; the walk checks the copy's)
 * are not compared.  A suspended frame's depth stays as its call left it
 * until it resumes (3.13: 0 once it returned); a suspended 3.14+ frame
 * whose stack pointer named no slot of its own (FPI_DEPTH_UNKNOWN) is never
 * taken as unchanged, since two such pointers may differ.  (Field by field
 * from the bytes, for the reason given in fpi_seen_fields.) */
static bool frame_unchanged(const fpi_layout *l, const fpi_seen_frame *f, const uint8_t *fr, bool outside, bool top)
{
    return fpi_load_u64(fr, l->fr_previous) == f->previous && fpi_load_u64(fr, l->fr_executable) == f->executable &&
           (top || fpi_load_u64(fr, l->fr_instr_ptr) == f->instr) && fpi_load_u8(fr, l->fr_owner) == f->owner &&
           (top || (f->stacktop != FPI_DEPTH_UNKNOWN && fpi_frame_depth(l, f->addr, fr) == f->stacktop)) &&
           (l->fr_tlbc_index == FPI_OFF_NONE || fpi_load_u32(fr, l->fr_tlbc_index) == f->tlbc_index) &&
           (l->fr_is_entry == FPI_OFF_NONE || fpi_load_u8(fr, l->fr_is_entry) == f->is_entry) &&
           fpi_gen_state(l, fr, outside) == f->gen_state;
}

/* The fields of a thread state that decide its stack, and the link to the
 * next thread state (a list cut short would lose threads).  The data-stack
 * top is not among them: it moves with every frame pushed above the top
 * frame before it becomes current; live_below_top() checks it instead.
 * Returns what changed, or NULL. */
static const char *thread_state_change(const fpi_layout *l, const uint8_t *a, const uint8_t *b)
{
    const struct {
        int32_t off;
        const char *what;
    } fields[] = {
        {l->ts_next, "its thread state's next link changed"},
        {l->ts_native_thread_id, "its thread state's native id changed"},
        {l->ts_thread_id, "its thread state's thread id changed"},
        {l->ts_datastack_chunk, "its data-stack chunk changed"},
        {l->ts_current_frame != FPI_OFF_NONE ? l->ts_current_frame : l->ts_cframe,
         l->ts_current_frame != FPI_OFF_NONE ? "its top frame changed" : "its _PyCFrame changed"},
        {l->ts_base_frame, "its base frame changed"},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (fields[i].off != FPI_OFF_NONE && fpi_load_u64(a, fields[i].off) != fpi_load_u64(b, fields[i].off))
            return fields[i].what;
    return NULL;
}

/* Does every followed frame in the newest chunk lie below the data-stack
 * top read back (the thread may have pushed frames above its top frame,
 * or popped some it had pushed; a frame at or above the top is dead)?
 * A stopped thread's top frame exactly at the top is the frame it is
 * popping (chain.c, frame_bytes). */
static bool live_below_top(const fp_session *s, const fpi_verify_want *w, const fpi_walk_used *u, uint64_t chunk,
                           uint64_t top)
{
    if (u->nchunks == 0 || u->chunks[0].remote != chunk)
        return true; /* the newest chunk held no frame: nothing walked in it */
    const fpi_chunk_copy *c = &u->chunks[0];
    for (size_t i = 0; i < u->nseen; i++) {
        uint64_t a = u->seen[i].addr;
        if (w->stopped && a == w->top && a == top)
            continue;
        if (a >= c->remote && a < c->remote + c->alloc && (top < a || top - a < (uint64_t)s->layout.fr_localsplus))
            return false;
    }
    return true;
}

/* Plans one more range of the read-back at offset `off` of its buffer,
 * placed once the buffer has its final size (it may move). */
static int add_iov(fp_session *s, uint64_t addr, size_t off, size_t len)
{
    if (!fpi_read_set_add_at(&s->readback, addr, off, len))
        return fpi_err(&s->err, FP_E_NOMEM, "out of memory: the read-back of a walk (%zu reads)", s->readback.n + 1);
    return FP_OK;
}

/* Where the chain-ordered reads of a walk's chunks have got to, from the
 * top down: chunk k (0 the newest) is read below `hi`, every newer chunk
 * down to its lowest followed frame (fpi_chunk_copy.lowest; its end when
 * it holds none).  The bytes below that frame (the chunk's header) decide
 * no frame and are not compared, so the read-back leaves them out: a
 * thread entered from C has its entry frame between the header and its
 * first frame, and reading the header cost a remote range of its own in
 * each read-back. */
typedef struct chain_cursor {
    int32_t k;
    uint64_t hi;
} chain_cursor;

/* Adds the reads of the chunk bytes from the cursor down to address `a` of
 * chunk k (newest first, each piece from its top down; plan() reverses
 * them), into the walk's chunks at `base` in the buffer. */
static int chunks_down_to(fp_session *s, const fpi_walk_used *u, size_t base, chain_cursor *cur, int32_t k, uint64_t a)
{
    for (;;) {
        const fpi_chunk_copy *c = &u->chunks[cur->k];
        uint64_t lo = cur->k == k ? a : c->lowest;
        if (lo < cur->hi) {
            int rc = add_iov(s, lo, base + c->local + (size_t)(lo - c->remote), (size_t)(cur->hi - lo));
            if (rc)
                return rc;
            cur->hi = lo;
        }
        if (cur->k >= k || cur->k + 1 >= (int32_t)u->nchunks)
            return FP_OK;
        cur->k++;
        cur->hi = u->chunks[cur->k].remote + u->chunks[cur->k].size;
    }
}

/* The word that names the thread's top frame (3.11, 3.12: in the _PyCFrame
 * the walk started from; 3.13+: in the thread state), or 0 when the layout
 * has none. */
static uint64_t top_word(const fpi_layout *l, const fpi_verify_want *w)
{
    if (w->cframe_addr)
        return w->cframe_addr + (uint64_t)l->cframe_current_frame;
    if (l->ts_current_frame != FPI_OFF_NONE)
        return w->ts + (uint64_t)l->ts_current_frame;
    return 0;
}

/* Where one walk's read-back lies in the read-back buffer. */
typedef struct fpi_verify_at {
    size_t top_before, top_instr, chunks, frames, gen, link, ts, cframe;
} verify_at;

/* Where the code-object generation (3.14+) is read in a read-back. */
typedef struct gen_read {
    uint64_t addr;            /* 0: not planned yet */
    size_t at;
} gen_read;

/* Appends the reads of one walk's read-back to s->readback (*used bytes so
 * far): the chunks and the other frames first, then the link,
 * the thread state and the cframe.  The code-object generation is read once
 * for all the walks: right after the link of the walk whose link is the
 * interpreter's list head, a few hundred bytes before it in the same
 * structure, so that a reader joins the two into one remote range
 * (reader_vm.c; read on its own, it cost a range in each read-back); else
 * after every walk (plan_generation).  The copy read
 * the thread state before the chunks; reading it back after them makes a
 * thread that moved between the two reads show in one of them (a
 * seqlock's order), where the same order twice could meet the same mixed
 * state twice in a target that runs in step with the sampler. */
static int plan(fp_session *s, const fpi_verify_want *w, const fpi_walk_used *u, size_t *used, verify_at *at,
                gen_read *gen)
{
    const fpi_layout *l = &s->layout;
    size_t fsize = (size_t)l->fr_size, pre = fpi_outside_prefix(l);
    int rc;
    /* The last read-back starts with the top frame's instruction, the one
     * the walk reports (verify.h, top_instr): read just after the word
     * that names the thread's top frame has named this frame again, and
     * before this read-back finds its chain and the thread state
     * unchanged, so frame, instruction and chain held together at some
     * instant between.  Read with the frame's other fields (last in its
     * chunk), it could come from another frame set up in the slot since,
     * under a chain that read had already passed.  Read without the word
     * before it, it could be a popped frame's, left in its slot while the
     * thread pushed frames below it again with the very bytes the copy had
     * read (the copy itself read them after that push): the stack of no
     * instant (fuzz_live_consistency, corpora/regressions). */
    at->top_before = at->top_instr = NO_READ;
    if (w->last && u->nseen) {
        uint64_t cur = top_word(l, w);
        if (cur) {
            at->top_before = *used;
            if ((rc = add_iov(s, cur, *used, FPI_PTR_SIZE)))
                return rc;
            *used += FPI_PTR_SIZE;
        }
        at->top_instr = *used;
        if ((rc = add_iov(s, u->seen[0].addr + (uint64_t)l->fr_instr_ptr, *used, FPI_PTR_SIZE)))
            return rc;
        *used += FPI_PTR_SIZE;
    }
    /* The chunks lie in the buffer newest first, each at its offset in the
     * walk's own copy (fpi_chunk_copy.local), and the frames outside them
     * after them, in chain order; all are read in the chain's order from
     * its bottom: every caller just before its callee.  A frame outside the
     * data stack (a generator's, a coroutine's) is read between the part of
     * the chunks below it and the part above it.  Read after the chunks, a
     * coroutine at its next call was read with the callee of its last one
     * still running in the slot above (live scenario generator_pingpong, 3.13:
     * coro_b at its call of Tick() under work_b; the coroutine moves on in
     * the few instructions between the two reads).  Chunks are read oldest
     * first for the same reason: a caller at the top of an older chunk just
     * before its callee at the bottom of the newer one. */
    at->chunks = *used;
    size_t total = 0;
    for (size_t i = 0; i < u->nchunks; i++)
        total += (size_t)u->chunks[i].size;
    *used += total;
    at->frames = *used;
    size_t first = s->readback.n;
    chain_cursor cur = {0, u->nchunks ? u->chunks[0].remote + u->chunks[0].size : 0};
    int32_t above_chunk = FPI_OUTSIDE_CHUNKS; /* the last frame met in a chunk, above the next */
    uint64_t above = 0;
    for (size_t i = 0; i < u->nseen; i++) { /* top down, then reversed */
        const fpi_seen_frame *f = &u->seen[i];
        if (f->chunk != FPI_OUTSIDE_CHUNKS) {
            above_chunk = f->chunk;
            above = f->addr;
            continue;
        }
        if (above_chunk != FPI_OUTSIDE_CHUNKS && (rc = chunks_down_to(s, u, at->chunks, &cur, above_chunk, above)))
            return rc;
        if ((rc = add_iov(s, f->addr - pre, *used, pre + fsize)))
            return rc;
        *used += pre + fsize;
    }
    if (u->nchunks && (rc = chunks_down_to(s, u, at->chunks, &cur, (int32_t)(u->nchunks - 1),
                                          u->chunks[u->nchunks - 1].lowest)))
        return rc;
    for (size_t a = first, b = s->readback.n; b-- > a + 1; a++) { /* bottom up */
        fp_iov t = s->readback.iov[a];
        s->readback.iov[a] = s->readback.iov[b];
        s->readback.iov[b] = t;
    }
    at->link = *used;
    if ((rc = add_iov(s, w->link_addr, *used, FPI_PTR_SIZE)))
        return rc;
    *used += FPI_PTR_SIZE;
    if (w->generation_addr && !gen->addr && w->generation_addr >= w->link_addr + FPI_PTR_SIZE &&
        w->generation_addr - (w->link_addr + FPI_PTR_SIZE) <= FPI_VM_MERGE_GAP) {
        if ((rc = add_iov(s, w->generation_addr, *used, FPI_PTR_SIZE)))
            return rc;
        *gen = (gen_read){w->generation_addr, *used};
        *used += FPI_PTR_SIZE;
    }
    at->ts = *used;
    if ((rc = add_iov(s, w->ts, *used, s->ts_read_len)))
        return rc;
    *used += s->ts_read_len;
    at->cframe = *used;
    if (w->cframe_addr) {
        if ((rc = add_iov(s, w->cframe_addr + (uint64_t)l->cframe_current_frame, *used, FPI_PTR_SIZE)))
            return rc;
        *used += FPI_PTR_SIZE;
    }
    return FP_OK;
}

/* The interpreter's code-object generation (3.14+), read once in the
 * read-back of all the walks: a counter that only grows, unchanged there
 * since the copy read it, it was unchanged all along between, where every
 * walk's frames held as copied (one read per walk was a remote range per
 * thread, twice per sample).  Unless plan() placed it beside a link, it
 * is read after every walk.  Walks of another interpreter (never batched
 * together) get a read of their own. */
static int plan_generation(fp_session *s, const fpi_verify_want *ws, size_t count, size_t *used, verify_at *at,
                           const gen_read *gen)
{
    uint64_t last = gen->addr;
    size_t last_at = gen->at;
    for (size_t i = 0; i < count; i++) {
        if (!ws[i].generation_addr)
            continue;
        if (ws[i].generation_addr != last) {
            int rc = add_iov(s, ws[i].generation_addr, *used, FPI_PTR_SIZE);
            if (rc)
                return rc;
            last = ws[i].generation_addr;
            last_at = *used;
            *used += FPI_PTR_SIZE;
        }
        at[i].gen = last_at;
    }
    return FP_OK;
}

/* Reads the planned ranges of s->readback (buf: offsets) into
 * s->verify_buf (used bytes), or finds them read with the sample's first
 * read, laid out alike (readback_ahead.c), or, for a thread walked
 * `alone`, with its retry's one read (retry_read.c); *out is where they
 * are. */
static int read_planned(fp_session *s, size_t used, uint64_t native_id, bool alone, const uint8_t **out)
{
    fpi_read_set *rs = &s->readback;
    const fp_iov *iov = rs->iov;
    size_t n = rs->n;
    uint64_t calls = s->reads.calls;
    bool clean = fpi_rb_ahead_clean(&s->rb_ahead, calls);
    const uint8_t *ahead = fpi_rb_ahead_take(&s->rb_ahead, iov, n, used, calls);
    /* A retry's read-backs were read with its one read (retry_read.c). */
    if (!ahead && alone)
        ahead = fpi_rb_ahead_take(&s->rb_retry, iov, n, used, calls);
    if (ahead) {
        fpi_rb_ahead_note(&s->rb_ahead, iov, n, used, NULL, clean);
        if (alone)
            fpi_rb_ahead_note(&s->rb_retry, iov, n, used, NULL, true);
        *out = ahead;
        return FP_OK;
    }
    uint8_t *nb = fpi_grow(s->verify_buf, &s->verify_cap, used ? used : 1, 1, VERIFY_BUF_INITIAL);
    if (!nb)
        return fpi_err(&s->err, FP_E_NOMEM, "out of memory: %zu bytes for the read-back of a walk", used);
    s->verify_buf = nb;
    fpi_read_set_place(rs, 0, nb);
    int rc = fpi_read_all(s, rs);
    fpi_rb_ahead_read_done(&s->rb_ahead, calls, s->reads.calls);
    if (alone)
        fpi_rb_ahead_read_done(&s->rb_retry, calls, s->reads.calls);
    if (rc == FP_OK) {
        fpi_rb_ahead_note(&s->rb_ahead, iov, n, used, nb, clean);
        if (alone)
            fpi_rb_ahead_note(&s->rb_retry, iov, n, used, nb, true);
    } else {
        fpi_rb_ahead_failed(&s->rb_ahead);
    }
    *out = nb;
    if (rc == FP_E_PROCESS_GONE || rc == FP_E_PERMISSION || rc == FP_E_NOMEM)
        return fpi_err_code(&s->err, rc, "cannot read back the walk of thread %llu", (unsigned long long)native_id);
    if (rc)
        return fpi_err(&s->err, FP_E_INCOMPLETE, "torn: thread %llu: its walk could not be read back (%s)",
                       (unsigned long long)native_id, fp_error_describe(rc));
    return FP_OK;
}

/* What changed between the walk and its read-back at `at` in nb, or NULL. */
static const char *check(fp_session *s, fpi_verify_want *w, const fpi_walk_used *u, const uint8_t *nb,
                         const verify_at *at)
{
    const fpi_layout *l = &s->layout;
    size_t fsize = (size_t)l->fr_size, pre = fpi_outside_prefix(l);
    w->generation_seen = w->generation;
    const char *what = NULL;
    /* The one tear a retry through the same link cannot mend. */
    w->link_moved = fpi_load_u64(nb, (int32_t)at->link) != w->ts;
    if (w->link_moved)
        what = "the thread state left its interpreter's list";
    else if ((what = thread_state_change(l, w->tsbuf, nb + at->ts)) != NULL)
        ;
    else if (!live_below_top(s, w, u, fpi_load_u64(nb + at->ts, l->ts_datastack_chunk),
                             fpi_load_u64(nb + at->ts, l->ts_datastack_top)))
        what = "its data stack shrank below a frame it followed";
    else if (w->cframe_addr && fpi_load_u64(nb, (int32_t)at->cframe) != w->top)
        what = "its top frame changed";
    else if (at->top_before != NO_READ && fpi_load_u64(nb, (int32_t)at->top_before) != w->top)
        what = "its top frame was not the top when its instruction was read";
    else if (w->generation_addr && (w->generation_seen = fpi_load_u64(nb, (int32_t)at->gen)) != w->generation)
        what = "a code object was freed";
    size_t other = at->frames;
    for (size_t i = 0; !what && i < u->nseen; i++) {
        const fpi_seen_frame *f = &u->seen[i];
        bool outside = f->chunk == FPI_OUTSIDE_CHUNKS;
        const uint8_t *fr;
        if (!outside) {
            const fpi_chunk_copy *c = &u->chunks[f->chunk];
            fr = nb + at->chunks + c->local + (size_t)(f->addr - c->remote);
        } else {
            fr = nb + other + pre;
            other += pre + fsize;
        }
        /* The top frame runs on: its instruction moves, and the one the
         * copy holds is where it was.  Every other frame is suspended in a
         * call and must not have moved at all. */
        if (i == 0 && w->last)
            w->top_instr = fpi_load_u64(nb, (int32_t)at->top_instr);
        if (!frame_unchanged(l, f, fr, outside, i == 0))
            what = "a frame it followed changed";
    }
    return what;
}

/* The frames outside the data stack as this read-back saw them: where the
 * next walk may start (frame_cache.c). */
static void note_outside_frames(fp_session *s, const fpi_walk_used *u, const uint8_t *nb, const verify_at *at)
{
    size_t fsize = (size_t)s->layout.fr_size, pre = fpi_outside_prefix(&s->layout);
    if (!s->opts.cache_frames || !s->opts.cache_code)
        return;
    for (size_t i = 0, off = at->frames; i < u->nseen; i++) {
        if (u->seen[i].chunk != FPI_OUTSIDE_CHUNKS)
            continue;
        fpi_frame_cache_note(&s->fc, u->seen[i].addr - pre, nb + off, pre + fsize);
        off += pre + fsize;
    }
}

static int torn(fp_session *s, const fpi_verify_want *w, const char *what)
{
    return fpi_err(&s->err, FP_E_INCOMPLETE, "torn: thread %llu changed while it was read (%s)",
                   (unsigned long long)w->native_id, what);
}

int fpi_verify_batch(fp_session *s, fpi_verify_want *ws, const fpi_walk_used *us, size_t count, size_t *failed)
{
    size_t used = 0;
    fpi_read_set_clear(&s->readback);
    verify_at *at = fpi_grow(s->verify_at, &s->verify_at_cap, count ? count : 1, sizeof *at, count ? count : 1);
    if (!at)
        return fpi_err(&s->err, FP_E_NOMEM, "out of memory: the read-back of %zu walks", count);
    s->verify_at = at;
    int rc = FP_OK;
    gen_read gen = {0, 0};
    for (size_t i = 0; !rc && i < count; i++)
        rc = plan(s, &ws[i], &us[i], &used, &at[i], &gen);
    if (!rc)
        rc = plan_generation(s, ws, count, &used, at, &gen);
    /* With the last read-back, the headers of the cached code objects the
     * frames name (before 3.14, which has no code-object generation):
     * confirmed for the walks it proves in the same read, not in one of
     * their own. */
    if (count && ws[0].last)
        s->confirm_epoch++; /* what an earlier window confirmed is not trusted in this one */
    size_t hlen = 0, code_at = used, ncode = !rc && count && ws[0].last ? fpi_code_confirm_queue(s, us, count, &hlen) : 0;
    for (size_t i = 0; !rc && i < ncode; i++)
        if (!(rc = add_iov(s, fpi_code_confirm_addr(s, i), used, hlen)))
            used += hlen;
    const uint8_t *nb = NULL;
    if (!rc)
        rc = read_planned(s, used, count ? ws[0].native_id : 0, count && ws[0].alone, &nb);
    size_t unconfirmed = fpi_code_confirm_finish(s, ncode, rc ? NULL : nb + code_at);
    if (rc) {
        *failed = SIZE_MAX; /* no walk found changed: the read-back itself failed */
        return rc;
    }
    if (count && ws[0].code_strict && unconfirmed) {
        fpi_rb_ahead_failed(&s->rb_ahead);
        *failed = 0;
        return torn(s, &ws[0], "a code object its frames name was replaced at its address");
    }
    for (size_t i = 0; i < count; i++) {
        const char *what = check(s, &ws[i], &us[i], nb, &at[i]);
        if (what) {
            fpi_rb_ahead_failed(&s->rb_ahead);
            *failed = i;
            return torn(s, &ws[i], what);
        }
    }
    for (size_t i = 0; i < count; i++)
        if (ws[i].last)
            note_outside_frames(s, &us[i], nb, &at[i]);
    return FP_OK;
}

int fpi_verify_after_frames(fp_session *s, fpi_verify_want *ws, const fpi_walk_used *us, size_t count,
                            bool code_strict)
{
    /* A code object read after the walk's read-back may have been freed
     * and replaced at its address in between, its frame gone: one more
     * read-back, its confirmation strict, proves the frames still there
     * (and so their code objects alive) after those reads.  Without
     * code_strict: the read-back a walk with an unchecked link still owes. */
    for (size_t i = 0; i < count; i++) {
        ws[i].last = true;
        ws[i].code_strict = code_strict;
    }
    size_t failed;
    int rc = fpi_verify_batch(s, ws, us, count, &failed);
    for (size_t i = 0; i < count; i++)
        ws[i].code_strict = false;
    return rc;
}
