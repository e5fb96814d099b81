/* chain.c — one thread's stack as the walk reads it: its data-stack chunks
 * copied (their live parts only), then its frame chain followed from the
 * top frame through that copy, frames outside the chunks (generators',
 * entry frames) read on their own or taken from the frame cache's proven
 * bytes.  Everything read is untrusted: loops are bounded, pointers are
 * checked, and a chain that cannot be followed whole is an error of the
 * thread, never a shorter stack.  Nothing here resolves a frame
 * (emit.c) or reads one back (verify.c). */
#include <stdlib.h>
#include <string.h>

#include "chain.h"
#include "frame.h"
#include "grow.h"
#include "read.h"
#include "stack_switch.h"

/* A root chunk (no previous) leaves its first slot unused: its first frame
 * follows. */
#define ROOT_CHUNK_SKIP FPI_PTR_SIZE
#define CHUNK_LIST_INITIAL 16u
#define FPI_PENDING_INITIAL 256u /* frames of one chain, first allocation */

/* Does [chunk, top) hold a chunk header and something more, without
 * wrapping around the address space or exceeding a chunk's size bound? */
bool fpi_live_span(uint64_t chunk, uint64_t top)
{
    return chunk && top > chunk && top - chunk > FPI_CHUNK_HEADER && top - chunk <= FPI_MAX_CHUNK_BYTES;
}

/* The bytes of the thread's older chunk `i` (0: the one below the newest)
 * if the sample's first read took them at `chunk`, else NULL. */
static const uint8_t *old_chunk_ahead(const fpi_thread_prefetch *pre, unsigned i, uint64_t chunk)
{
    if (!pre || i >= pre->spec_nold || pre->spec_old[i] != chunk || pre->spec_old_len[i] < FPI_CHUNK_HEADER)
        return NULL;
    return pre->chunk_bytes + pre->spec_old_buf[i];
}

/* Copies the live part of the thread's data-stack chunks into
 * ch->stack_buf: the newest chunk up to datastack_top, older ones up to the
 * top they saved when a newer chunk was pushed (the rest of a chunk holds
 * dead frames).  `pre` (may be NULL) is the live part of the newest chunk
 * already read for this sample. */
int fpi_copy_chunks(fp_session *s, fpi_chain *ch, uint64_t chunk, uint64_t top, const fpi_thread_prefetch *pre)
{
    const fpi_layout *l = &s->layout;
    ch->nchunks = 0;
    size_t used = 0;
    if (chunk && top && top < chunk)
        return fpi_err(&s->err, FP_E_CORRUPT, "data-stack top 0x%llx: below its chunk at 0x%llx",
                       (unsigned long long)top, (unsigned long long)chunk);
    for (unsigned n = 0; chunk && n < FPI_MAX_CHUNKS; n++) {
        /* The newest chunk is live only up to datastack_top: copy that part,
         * header included, in one read; older chunks are copied whole. */
        bool live_part = n == 0 && fpi_live_span(chunk, top);
        uint8_t hdr[FPI_CHUNK_HEADER];
        uint64_t want = 0, size = 0, prev = 0;
        const uint8_t *ahead = n > 0 ? old_chunk_ahead(pre, n - 1, chunk) : NULL; /* read with the first read */
        size_t ahead_len = ahead ? pre->spec_old_len[n - 1] : 0;
        if (!live_part) {
            int rc = FP_OK;
            if (ahead)
                memcpy(hdr, ahead, sizeof hdr);
            else
                rc = fpi_read(s, chunk, hdr, sizeof hdr);
            if (rc)
                return fpi_err_code(&s->err, rc, "cannot read data-stack chunk at 0x%llx", (unsigned long long)chunk);
            size = fpi_load_u64(hdr, l->chunk_size);
            if (size < FPI_CHUNK_HEADER || size > FPI_MAX_CHUNK_BYTES)
                return fpi_err(&s->err, FP_E_CORRUPT, "data-stack chunk at 0x%llx: size %llu",
                              (unsigned long long)chunk, (unsigned long long)size);
            if (size > UINT64_MAX - chunk)
                return fpi_err(&s->err, FP_E_CORRUPT,
                               "data-stack chunk at 0x%llx: its %llu bytes wrap around the address space",
                               (unsigned long long)chunk, (unsigned long long)size);
            /* The newest chunk without a live part (its top at the header)
             * holds no frame; an older one is live up to its saved top
             * (_PyStackChunk.top: slots in use when a newer chunk was
             * pushed). */
            uint64_t slots = n == 0 ? 0 : fpi_load_u64(hdr, l->chunk_top);
            if (slots > (size - FPI_CHUNK_HEADER) / FPI_PTR_SIZE)
                return fpi_err(&s->err, FP_E_CORRUPT, "data-stack chunk at 0x%llx: top %llu slots beyond its %llu bytes",
                               (unsigned long long)chunk, (unsigned long long)slots, (unsigned long long)size);
            want = FPI_CHUNK_HEADER + slots * FPI_PTR_SIZE;
        } else {
            want = top - chunk;
        }
        if (used + want > FPI_MAX_STACK_COPY)
            return fpi_err(&s->err, FP_E_LIMIT, "data stack: larger than %u bytes", FPI_MAX_STACK_COPY);
        /* The last frame's fr_size bytes may pass the live part's end
         * (frame_bytes): the buffer reaches that far. */
        uint8_t *nb = fpi_grow(ch->stack_buf, &ch->stack_cap, used + (size_t)want + (size_t)l->fr_size, 1,
                               FPI_STACK_COPY_INITIAL);
        fpi_chunk_copy *nc = fpi_grow(ch->chunks, &ch->chunks_cap, ch->nchunks + 1, sizeof *nc, CHUNK_LIST_INITIAL);
        if (nb)
            ch->stack_buf = nb;
        if (nc)
            ch->chunks = nc;
        if (!nb || !nc)
            return fpi_err(&s->err, FP_E_NOMEM, "out of memory: copying %zu bytes of data-stack chunks",
                           used + (size_t)want);
        int rc = FP_OK;
        if (live_part && pre && pre->chunklen == want && pre->chunk == chunk && pre->top == top)
            memcpy(ch->stack_buf + used, pre->chunk_bytes + pre->chunkbuf, (size_t)want);
        else if (ahead && want <= ahead_len)
            memcpy(ch->stack_buf + used, ahead, (size_t)want);
        else
            rc = fpi_read(s, chunk, ch->stack_buf + used, (size_t)want);
        if (rc)
            return fpi_err_code(&s->err, rc, "cannot copy data-stack chunk at 0x%llx (%llu bytes)",
                          (unsigned long long)chunk, (unsigned long long)want);
        if (live_part) {
            size = fpi_load_u64(ch->stack_buf + used, l->chunk_size);
            if (size < want || size > FPI_MAX_CHUNK_BYTES)
                return fpi_err(&s->err, FP_E_CORRUPT, "data-stack chunk at 0x%llx: size %llu below its top",
                              (unsigned long long)chunk, (unsigned long long)size);
        }
        prev = fpi_load_u64(ch->stack_buf + used, l->chunk_previous);
        ch->chunks[ch->nchunks++] = (fpi_chunk_copy){chunk, want, size, used, chunk + want};
        used += (size_t)want;
        chunk = prev;
    }
    if (chunk)
        return fpi_err(&s->err, FP_E_LIMIT, "data stack: more than %u chunks", FPI_MAX_CHUNKS);
    return FP_OK;
}

/* Returns a pointer to the frame at addr, of which the walk reads the
 * header (fr_localsplus bytes: layout_check.c): from the chunk copy when
 * the header lies inside one's live part, else fr_size bytes read directly
 * into ch->frame_buf.  A frame's locals and stack may end before fr_size (a
 * function with neither, 3.11: `while True: pass`, whose frame ends 8
 * bytes short of sizeof(_PyInterpreterFrame) at the data stack's top).  A
 * frame inside a chunk but beyond its live part is dead: the walk followed
 * a pointer the thread had already left behind.  One is not, in a stopped
 * thread: its top frame starting exactly at the data stack's top is the
 * frame it is popping.  RETURN_GENERATOR (3.11-3.15) pops the frame that
 * made the generator, which lowers the data stack's top to it, before it
 * makes the caller the current frame; stopped in between, the thread runs
 * that instruction of that frame, and the frame's bytes are intact (only
 * the thread itself writes there, and the generator holds the frame's code
 * object).  It is read where it lies, like a frame outside the data
 * stack, and read back as one; *popping says so, and emit.c refuses it at
 * any other instruction (3.11's RETURN_VALUE has the same instant, after
 * the frame was cleared: its code object may be freed).  Refused, it left
 * out every stop of a thread in that instruction, which a program that
 * makes many generators passes through often. */
static int frame_bytes(fp_session *s, fpi_chain *ch, uint64_t addr, bool is_top, bool spec_frames, bool stopped, size_t *chunk,
                       const uint8_t **out, bool *outside, bool *popping)
{
    size_t fsize = (size_t)s->layout.fr_size, pre = fpi_outside_prefix(&s->layout);
    size_t hdr = (size_t)s->layout.fr_localsplus;
    *outside = false;
    *popping = false;
    /* The search starts at *chunk, the chunk of the frame before: a chain's
     * frames lie in its chunks newest first (a scan from the first chunk
     * for every frame was quadratic in a deep stack's chunks). */
    for (size_t k = 0; k < ch->nchunks; k++) {
        size_t i = (*chunk + k) % ch->nchunks;
        const fpi_chunk_copy *c = &ch->chunks[i];
        if (addr >= c->remote + FPI_CHUNK_HEADER && addr < c->remote + c->size &&
            c->remote + c->size - addr >= hdr) {
            *out = ch->stack_buf + c->local + (addr - c->remote);
            *chunk = i;
            return FP_OK;
        }
        if (is_top && stopped && addr == c->remote + c->size) {
            *popping = true; /* the frame being popped (above) */
            break;
        }
        if (fpi_chunk_holds(c, addr))
            return fpi_err(&s->err, FP_E_INCOMPLETE,
                           "torn: frame 0x%llx lies beyond the live part of its data-stack chunk (0x%llx + %llu bytes)",
                           (unsigned long long)addr, (unsigned long long)c->remote, (unsigned long long)c->size);
    }
    /* A frame outside the data stack, below the top: the bytes the last
     * verified walk read back at its address, checked by this walk's
     * read-back like bytes read now (frame_cache.c). */
    *outside = true;
    if (addr < pre)
        return fpi_err(&s->err, FP_E_CORRUPT, "frame pointer 0x%llx: not a frame", (unsigned long long)addr);
    const uint8_t *proven = spec_frames && !is_top ? fpi_frame_cache_spec(&s->fc, addr - pre, pre + fsize) : NULL;
    if (proven) {
        s->fc.spec_hits++;
        *out = proven + pre;
        return FP_OK;
    }
    int rc = fpi_read(s, addr - pre, ch->frame_buf, pre + fsize);
    if (rc)
        return fpi_err_code(&s->err, rc, "cannot read frame at 0x%llx", (unsigned long long)addr);
    *out = ch->frame_buf + pre;
    return FP_OK;
}

/* Has the walk followed the frame at addr already? */
static bool followed(const fpi_chain *ch, uint64_t addr)
{
    for (size_t i = 0; i < ch->nseen; i++)
        if (ch->seen[i].addr == addr)
            return true;
    return false;
}

/* The next free entry of ch->pending, zeroed, for the caller to fill in
 * place and then count (++ch->npending), or NULL when out of memory.  In
 * place: a frame built in a local and copied in cost a deep stack's walk
 * more than the rest of the chain's work (the copy's wide loads wait on
 * the narrow stores that built it). */
static fpi_pending_frame *next_pending(fp_session *s, fpi_chain *ch)
{
    fpi_pending_frame *np = fpi_grow(ch->pending, &ch->pending_cap, ch->npending + 1, sizeof *np, FPI_PENDING_INITIAL);
    if (!np) {
        (void)fpi_err(&s->err, FP_E_NOMEM, "out of memory: recording %zu frames", ch->npending + 1);
        return NULL;
    }
    ch->pending = np;
    memset(&np[ch->npending], 0, sizeof np[ch->npending]);
    return &np[ch->npending];
}

static int push_seen(fp_session *s, fpi_chain *ch, uint64_t addr, const uint8_t *fr, int32_t chunk)
{
    const fpi_layout *l = &s->layout;
    fpi_seen_frame *ns = fpi_grow(ch->seen, &ch->seen_cap, ch->nseen + 1, sizeof *ns, FPI_PENDING_INITIAL);
    if (!ns)
        return fpi_err(&s->err, FP_E_NOMEM, "out of memory: recording frame %zu of a walk", ch->nseen + 1);
    ch->seen = ns;
    fpi_seen_fields(l, addr, fr, chunk, &ch->seen[ch->nseen++]);
    if (chunk != FPI_OUTSIDE_CHUNKS) /* top down: the last one met in a chunk is its lowest */
        ch->chunks[chunk].lowest = addr;
    return FP_OK;
}

/* The two stack slots at a suspended frame's saved depth, where a CALL
 * leaves the function it called (call_sites.c), into out (3.14+: stack
 * references, without their tag bits); false when they do not lie in this
 * walk's copy of the frame's chunk. */
static bool slots_at_depth(const fp_session *s, const fpi_chain *ch, size_t chunk, uint64_t addr, int32_t depth, uint64_t out[2])
{
    const fpi_layout *l = &s->layout;
    if (l->fr_localsplus == FPI_OFF_NONE || depth < 0 || chunk >= ch->nchunks)
        return false;
    const fpi_chunk_copy *c = &ch->chunks[chunk];
    uint64_t at = addr + (uint64_t)l->fr_localsplus + FPI_PTR_SIZE * (uint64_t)depth, end = c->remote + c->size;
    if (at < addr || at < c->remote || at > end || end - at < 2u * FPI_PTR_SIZE)
        return false;
    const uint8_t *p = ch->stack_buf + c->local + (at - c->remote);
    out[0] = fpi_load_u64(p, 0) & ~l->executable_tag_mask;
    out[1] = fpi_load_u64(p, FPI_PTR_SIZE) & ~l->executable_tag_mask;
    return true;
}

/* Does the data stack hold a frame below the lowest one the walk
 * followed?  The oldest chunk copied has no previous chunk (fpi_copy_chunks
 * stops there): the root, whose first frame lies ROOT_CHUNK_SKIP bytes
 * past its header.  False when the walk passed that frame, or when no
 * chunk holds a frame at all. */
static bool data_stack_below_walk(const fpi_chain *ch)
{
    if (ch->nchunks == 0)
        return false;
    const fpi_chunk_copy *root = &ch->chunks[ch->nchunks - 1];
    if (root->lowest == root->remote + FPI_CHUNK_HEADER + ROOT_CHUNK_SKIP)
        return false;
    for (size_t i = 0; i < ch->nchunks; i++) {
        uint64_t first = FPI_CHUNK_HEADER + (i == ch->nchunks - 1 ? ROOT_CHUNK_SKIP : 0u);
        if (ch->chunks[i].size > first)
            return true;
    }
    return false;
}

/* 3.15+: a chain is whole when it ends at the thread's base frame, or at
 * the bottom of a stack that a stack switcher started with no current
 * frame.  greenlet does that: a new greenlet runs with the thread state's
 * current frame and data stack cleared (its own, saved and restored on
 * every switch; the base frame is left alone), so the entry frame of its
 * first evaluation has no caller and its frames lie in a data stack of its
 * own.  CPython 3.15 itself never evaluates with no current frame (a
 * thread starts at its base frame).  Such a bottom is accepted only as
 * what it must be: the last frame followed was entered from C code
 * (interpreter-owned) and lies outside the data stack (an evaluation's
 * entry frame is a C local; the __init__ shim, also interpreter-owned,
 * lives in a chunk and always has a caller), the walk stopped there on a
 * NULL link, and no frame of the data stack lies below the chain (it
 * passed the root chunk's first frame, or the data stack is empty).  A
 * chain cut at a stale or half-written frame above the bottom leaves
 * frames of the data stack below it, and is refused; a chain greenlet has
 * rewritten for a switch ends at a Python frame, and is taken only on the
 * proof of stack_switch.c. */
static bool ends_at_switched_stack_bottom(const fpi_chain *ch, bool last_is_entry, bool last_outside)
{
    return last_is_entry && last_outside && !data_stack_below_walk(ch);
}

/* Phase 1: follow the chain from the thread's top frame, recording every
 * frame followed (for the read-back check) and every Python frame (entry
 * and shim frames are skipped). */
int fpi_collect_chain(fp_session *s, fpi_chain *ch, fp_thread *th, uint64_t top, uint64_t base_frame, bool spec_frames,
                      bool stopped)
{
    const fpi_layout *l = &s->layout;
    uint64_t addr = top, last = 0;
    uint32_t depth = 0;
    size_t chunk = 0; /* where frame_bytes looks first */
    bool above_is_python = false; /* the frame just followed can be a directly linked callee */
    bool last_is_entry = false;   /* the frame just followed was entered from C code */
    bool last_outside = false;    /* the frame just followed lies outside the data stack */
    const uint8_t *last_fr = NULL; /* its bytes, when the walk ended at a frame (not the base frame) */
    int last_owner = -1;
    /* Brent's cycle detection: a frame passed at step 2^k - 1, compared
     * with every later one until step 2^(k+1) - 1.  A chain read across
     * instants can loop (3.12: generator frames, read one by one outside
     * the data stack, each pointing back to a consumer that pointed on to
     * them); the loop is found within twice its length plus its lead, not
     * after max_depth frames and as many reads. */
    uint64_t cycle_mark = 0;
    uint64_t cycle_power = 1, cycle_steps = 0;
    ch->npending = 0;
    ch->nseen = 0;
    while (addr) {
        if (addr == cycle_mark)
            return fpi_err(&s->err, FP_E_CORRUPT, "frame chain of thread %llu: a cycle at 0x%llx",
                          (unsigned long long)th->native_id, (unsigned long long)addr);
        if (++cycle_steps == cycle_power) {
            cycle_mark = addr;
            cycle_power *= 2u;
            cycle_steps = 0;
        }
        if (depth >= s->opts.max_depth) {
            if (followed(ch, addr)) /* a loop longer than Brent's check could close in max_depth frames */
                return fpi_err(&s->err, FP_E_CORRUPT, "frame chain of thread %llu: a cycle at 0x%llx",
                              (unsigned long long)th->native_id, (unsigned long long)addr);
            return fpi_err(&s->err, FP_E_LIMIT, "thread %llu: deeper than %u frames",
                          (unsigned long long)th->native_id, s->opts.max_depth);
        }
        if (addr & (FPI_PTR_SIZE - 1))
            return fpi_err(&s->err, FP_E_CORRUPT, "frame pointer 0x%llx: unaligned", (unsigned long long)addr);
        if (addr == base_frame) { /* 3.15+: the sentinel at the bottom of every chain */
            last = addr;
            last_fr = NULL;
            break;
        }
        const uint8_t *fr = NULL;
        bool outside = false, popping = false;
        int rc = frame_bytes(s, ch, addr, depth == 0, spec_frames, stopped, &chunk, &fr, &outside, &popping);
        if (rc)
            return rc;
        if ((rc = push_seen(s, ch, addr, fr, outside ? FPI_OUTSIDE_CHUNKS : (int32_t)chunk)))
            return rc;
        /* 3.11: a generator's frame on a running chain is executing; one
         * that is suspended was read after it left the chain (its previous
         * link is gone, and the chain would end at it). */
        int16_t gstate = ch->seen[ch->nseen - 1].gen_state;
        if (gstate >= 0 && gstate != l->gen_state_executing)
            return fpi_err(&s->err, FP_E_INCOMPLETE,
                           "torn: generator frame 0x%llx of thread %llu is not executing (state %d): it left the "
                           "chain while it was read",
                           (unsigned long long)addr, (unsigned long long)th->native_id, gstate);
        int owner = fpi_load_u8(fr, l->fr_owner);
        if (popping && owner != l->owner_thread) /* RETURN_GENERATOR pops a function's frame */
            return fpi_err(&s->err, FP_E_INCOMPLETE,
                           "torn: frame 0x%llx, the top, lies at its data stack's top and is not a function's frame",
                           (unsigned long long)addr);
        uint64_t previous = fpi_load_u64(fr, l->fr_previous);
        last = addr;
        last_outside = outside;
        last_fr = fr;
        last_owner = owner;
        depth++;
        if (owner == l->owner_cstack || owner == l->owner_interpreter) {
            above_is_python = false;
            last_is_entry = true;
            addr = previous;
            continue;
        }
        if (owner != l->owner_thread && owner != l->owner_generator)
            return fpi_err(&s->err, FP_E_CORRUPT, "frame 0x%llx: unknown owner %d", (unsigned long long)addr, owner);
        fpi_pending_frame *pf = next_pending(s, ch);
        if (!pf)
            return FP_E_NOMEM;
        pf->addr = addr;
        pf->code = fpi_load_u64(fr, l->fr_executable) & ~l->executable_tag_mask;
        pf->instr = fpi_load_u64(fr, l->fr_instr_ptr);
        pf->tlbc_index = l->fr_tlbc_index != FPI_OFF_NONE ? (int32_t)fpi_load_u32(fr, l->fr_tlbc_index) : 0;
        pf->stacktop = ch->seen[ch->nseen - 1].stacktop;
        pf->top = addr == top;
        pf->generator = owner == l->owner_generator;
        pf->called_directly = above_is_python;
        pf->popping = popping;
        pf->funcobj = l->fr_funcobj != FPI_OFF_NONE ? fpi_load_u64(fr, l->fr_funcobj) & ~l->executable_tag_mask : 0;
        pf->slots_known = !outside && above_is_python && slots_at_depth(s, ch, chunk, addr, pf->stacktop, pf->slots);
        ch->npending++;
        /* 3.11 marks a frame entered from C code on the frame itself. */
        above_is_python = l->fr_is_entry == FPI_OFF_NONE || fpi_load_u8(fr, l->fr_is_entry) == 0;
        last_is_entry = !above_is_python;
        addr = previous;
    }
    /* 3.11: a generator resumed from C code is its own entry frame, so a
     * chain ending at a generator frame passes the rule below; but an
     * unlinked generator frame is also seen executing while it is closed
     * (_gen_throw marks it executing around gen_close_iter) or when read
     * through a _PyCFrame its evaluation has left.  Such a chain is torn;
     * the cost: a thread whose whole Python stack is one generator resumed
     * from C (a thread started on a C callable that iterates it) is never
     * sampled on 3.11. */
    if (l->gen_state_before_frame != FPI_OFF_NONE && ch->npending > 0 && ch->pending[ch->npending - 1].generator &&
        ch->pending[ch->npending - 1].addr == last)
        return fpi_err(&s->err, FP_E_INCOMPLETE,
                       "torn: thread %llu's walk ended at generator frame 0x%llx (3.11: an unlinked generator frame)",
                       (unsigned long long)th->native_id, (unsigned long long)last);
    /* A chain greenlet rewrote for a switch ends at a Python frame with no
     * caller (stack_switch.c): whole, when its frame object proves it. */
    bool exposed = false;
    uint64_t last_frame_obj = /* the last frame's frame object, when its thread owns it */
        last_fr && last_owner == l->owner_thread && l->fr_frame_obj != FPI_OFF_NONE ? fpi_load_u64(last_fr, l->fr_frame_obj)
                                                                                      : 0;
    if (top && !last_is_entry && last_frame_obj) {
        int rc = fpi_switcher_exposed(s, ch->chunks, ch->nchunks, last, last_frame_obj, &exposed);
        if (rc)
            return rc;
    }
    /* Before 3.15 every thread's chain ends at a frame entered from C code
     * (3.12+: the evaluation loop's entry frame; 3.11: a frame marked
     * is_entry).  A chain that ends elsewhere was cut: a generator read
     * while it was not running, or a frame read after it was unlinked. */
    if (l->ts_base_frame == FPI_OFF_NONE && top && !last_is_entry && !exposed)
        return fpi_err(&s->err, FP_E_INCOMPLETE,
                       "torn: thread %llu's walk ended at frame 0x%llx, which was not entered from C code (a chain "
                       "cut while it was read)",
                       (unsigned long long)th->native_id, (unsigned long long)last);
    if (l->ts_base_frame != FPI_OFF_NONE && top && last != base_frame && !exposed &&
        !ends_at_switched_stack_bottom(ch, last_is_entry, last_outside))
        return fpi_err(&s->err, FP_E_INCOMPLETE,
                      "incomplete sample: thread %llu's walk did not reach its base frame (expected 0x%llx, ended at "
                      "0x%llx, %s)",
                      (unsigned long long)th->native_id, (unsigned long long)base_frame, (unsigned long long)last,
                      !last_is_entry ? "not an entry frame"
                      : !last_outside ? "an interpreter-owned frame inside the data stack"
                                      : "with frames of the data stack below it");
    return FP_OK;
}

void fpi_chain_free(fpi_chain *c)
{
    free(c->stack_buf);
    free(c->chunks);
    free(c->seen);
    free(c->pending);
}
