/* walk.c — one sample: every interpreter, every thread, every frame.
 *
 * Each thread's data-stack chunks are copied first and frames are decoded
 * from that copy (frames outside the chunks — generator frames, entry
 * frames — are read directly).  Everything read is untrusted: loops are
 * bounded, pointers and offsets are checked, and a walk that cannot be
 * completed is reported as an error on the thread, never as a shorter
 * stack. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "call_sites.h"
#include "grow.h"
#include "pause_thread.h"
#include "proc_state.h"
#include "retry_read.h"
#include "session.h"
#include "verify.h"
#include "walk.h"

#define PTR_SIZE 8u
#define CHUNK_HEADER 24u
#define CHUNK_TOP 16u        /* _PyStackChunk.top: slots in use when a newer chunk was pushed */
#define ROOT_CHUNK_SKIP 8u   /* a root chunk (no previous) leaves its first slot unused: its first frame follows */
#define CODEUNIT_SIZE 2
#define RUNTIME_SPAN_MAX 64
#define STACK_COPY_INITIAL 65536u  /* bytes */
#define CHUNK_LIST_INITIAL 16u
#define MEMO_INITIAL 64u
/* Bytes read ahead beyond the live part of a chunk the last sample saw, so
 * a stack a few frames deeper still comes with the first read. */
#define SPEC_CHUNK_MARGIN 1024u

/* Every read a sample makes goes through these two, which count it. */
int fpi_read(fp_session *s, uint64_t addr, void *buf, size_t len)
{
    if (addr == 0)
        return FP_E_READ;
    s->reads.calls++;
    s->reads.bytes += len;
    return fp_reader_read(s->rd, addr, buf, len);
}

int fpi_readv(fp_session *s, const fp_iov *iov, size_t n)
{
    s->reads.calls++;
    for (size_t i = 0; i < n; i++)
        s->reads.bytes += iov[i].len;
    return fp_reader_readv(s->rd, iov, n);
}

/* A read failure inside a walk: the process vanishing or permissions are
 * fatal for the sample; anything else makes this thread's walk incomplete. */
bool fpi_walk_fatal(int rc)
{
    return rc == FP_E_PROCESS_GONE || rc == FP_E_PERMISSION || rc == FP_E_NOMEM;
}

/* Does [chunk, top) hold a chunk header and something more, without
 * wrapping around the address space or exceeding a chunk's size bound? */
bool fpi_live_span(uint64_t chunk, uint64_t top)
{
    return chunk && top > chunk && top - chunk > CHUNK_HEADER && top - chunk <= FPI_MAX_CHUNK_BYTES;
}

/* Remembers where the thread just walked (the last one remembered) had its
 * newest chunk and _PyCFrame: the next sample's first read takes them. */
static void remember_stack(fp_session *s, uint64_t ts, uint64_t cframe)
{
    if (s->ncur_ts == 0 || s->cur_ts[s->ncur_ts - 1].ts != ts)
        return;
    fpi_thread_memo *m = &s->cur_ts[s->ncur_ts - 1];
    m->cframe = cframe;
    m->chunk = m->chunk_read = 0;
    m->nold = 0;
    if (s->nchunks == 0)
        return;
    for (size_t i = 1; i < s->nchunks && m->nold < FPI_SPEC_OLD_CHUNKS; i++, m->nold++) {
        m->old[m->nold] = s->chunks[i].remote;
        m->old_len[m->nold] = s->chunks[i].size;
    }
    const fpi_chunk_copy *c = &s->chunks[0];
    uint64_t cap = c->alloc < FPI_MAX_CHUNK_BYTES ? c->alloc : FPI_MAX_CHUNK_BYTES;
    m->chunk = c->remote;
    m->chunk_read = c->size + SPEC_CHUNK_MARGIN < cap ? c->size + SPEC_CHUNK_MARGIN : cap;
}

/* The bytes of the thread's older chunk `i` (0: the one below the newest)
 * if the sample's first read took them at `chunk`, else NULL. */
static const uint8_t *old_chunk_ahead(const fp_session *s, const fpi_thread_prefetch *pre, unsigned i, uint64_t chunk)
{
    if (!pre || i >= pre->spec_nold || pre->spec_old[i] != chunk || pre->spec_old_len[i] < CHUNK_HEADER)
        return NULL;
    return (pre->own_buf ? s->retry_buf : s->chunk_bufs) + pre->spec_old_buf[i];
}

/* Copies the live part of the thread's data-stack chunks into
 * s->stack_buf: the newest chunk up to datastack_top, older ones up to the
 * top they saved when a newer chunk was pushed (the rest of a chunk holds
 * dead frames).  `pre` (may be NULL) is the live part of the newest chunk
 * already read for this sample. */
static int copy_chunks(fp_session *s, uint64_t chunk, uint64_t top, const fpi_thread_prefetch *pre)
{
    const fpi_layout *l = &s->layout;
    s->nchunks = 0;
    size_t used = 0;
    if (chunk && top && top < chunk)
        return fpi_err(&s->err, FP_E_CORRUPT, "data-stack top 0x%llx: below its chunk at 0x%llx",
                       (unsigned long long)top, (unsigned long long)chunk);
    for (unsigned n = 0; chunk && n < FPI_MAX_CHUNKS; n++) {
        /* The newest chunk is live only up to datastack_top: copy that part,
         * header included, in one read; older chunks are copied whole. */
        bool live_part = n == 0 && fpi_live_span(chunk, top);
        uint8_t hdr[CHUNK_HEADER];
        uint64_t want = 0, size = 0, prev = 0;
        const uint8_t *ahead = n > 0 ? old_chunk_ahead(s, pre, n - 1, chunk) : NULL; /* read with the first read */
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
            if (size < CHUNK_HEADER || size > FPI_MAX_CHUNK_BYTES)
                return fpi_err(&s->err, FP_E_CORRUPT, "data-stack chunk at 0x%llx: size %llu",
                              (unsigned long long)chunk, (unsigned long long)size);
            if (size > UINT64_MAX - chunk)
                return fpi_err(&s->err, FP_E_CORRUPT,
                               "data-stack chunk at 0x%llx: its %llu bytes wrap around the address space",
                               (unsigned long long)chunk, (unsigned long long)size);
            /* The newest chunk without a live part (its top at the header)
             * holds no frame; an older one is live up to its saved top. */
            uint64_t slots = n == 0 ? 0 : fpi_load_u64(hdr, CHUNK_TOP);
            if (slots > (size - CHUNK_HEADER) / PTR_SIZE)
                return fpi_err(&s->err, FP_E_CORRUPT, "data-stack chunk at 0x%llx: top %llu slots beyond its %llu bytes",
                               (unsigned long long)chunk, (unsigned long long)slots, (unsigned long long)size);
            want = CHUNK_HEADER + slots * PTR_SIZE;
        } else {
            want = top - chunk;
        }
        if (used + want > FPI_MAX_STACK_COPY)
            return fpi_err(&s->err, FP_E_LIMIT, "data stack: larger than %u bytes", FPI_MAX_STACK_COPY);
        /* The last frame's fr_size bytes may pass the live part's end
         * (frame_bytes): the buffer reaches that far. */
        uint8_t *nb = fpi_grow(s->stack_buf, &s->stack_cap, used + (size_t)want + (size_t)l->fr_size, 1,
                               STACK_COPY_INITIAL);
        fpi_chunk_copy *nc = fpi_grow(s->chunks, &s->chunks_cap, s->nchunks + 1, sizeof *nc, CHUNK_LIST_INITIAL);
        if (nb)
            s->stack_buf = nb;
        if (nc)
            s->chunks = nc;
        if (!nb || !nc)
            return fpi_err(&s->err, FP_E_NOMEM, "out of memory: copying %zu bytes of data-stack chunks",
                           used + (size_t)want);
        int rc = FP_OK;
        if (live_part && pre && pre->chunklen == want && pre->chunk == chunk && pre->top == top)
            memcpy(s->stack_buf + used, (pre->own_buf ? s->retry_buf : s->chunk_bufs) + pre->chunkbuf, (size_t)want);
        else if (ahead && want <= ahead_len)
            memcpy(s->stack_buf + used, ahead, (size_t)want);
        else
            rc = fpi_read(s, chunk, s->stack_buf + used, (size_t)want);
        if (rc)
            return fpi_err_code(&s->err, rc, "cannot copy data-stack chunk at 0x%llx (%llu bytes)",
                          (unsigned long long)chunk, (unsigned long long)want);
        if (live_part) {
            size = fpi_load_u64(s->stack_buf + used, l->chunk_size);
            if (size < want || size > FPI_MAX_CHUNK_BYTES)
                return fpi_err(&s->err, FP_E_CORRUPT, "data-stack chunk at 0x%llx: size %llu below its top",
                              (unsigned long long)chunk, (unsigned long long)size);
        }
        prev = fpi_load_u64(s->stack_buf + used, l->chunk_previous);
        s->chunks[s->nchunks++] = (fpi_chunk_copy){chunk, want, size, used, chunk + want};
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
 * into s->frame_buf.  A frame's locals and stack may end before fr_size (a
 * function with neither, 3.11: `while True: pass`, whose frame ends 8
 * bytes short of sizeof(_PyInterpreterFrame) at the data stack's top).  A
 * frame inside a chunk but beyond its live part is dead: the walk followed
 * a pointer the thread had already left behind. */
static int frame_bytes(fp_session *s, uint64_t addr, bool is_top, size_t *chunk, const uint8_t **out, bool *outside)
{
    size_t fsize = (size_t)s->layout.fr_size, pre = fpi_outside_prefix(&s->layout);
    size_t hdr = (size_t)s->layout.fr_localsplus;
    *outside = false;
    /* The search starts at *chunk, the chunk of the frame before: a chain's
     * frames lie in its chunks newest first (a scan from the first chunk
     * for every frame was quadratic in a deep stack's chunks). */
    for (size_t k = 0; k < s->nchunks; k++) {
        size_t i = (*chunk + k) % s->nchunks;
        const fpi_chunk_copy *c = &s->chunks[i];
        if (addr >= c->remote + CHUNK_HEADER && addr < c->remote + c->size &&
            c->remote + c->size - addr >= hdr) {
            *out = s->stack_buf + c->local + (addr - c->remote);
            *chunk = i;
            return FP_OK;
        }
        if (addr >= c->remote && addr - c->remote < c->alloc)
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
    const uint8_t *proven = s->spec_frames && !is_top ? fpi_frame_cache_spec(&s->fc, addr - pre, pre + fsize) : NULL;
    if (proven) {
        s->fc.spec_hits++;
        *out = proven + pre;
        return FP_OK;
    }
    int rc = fpi_read(s, addr - pre, s->frame_buf, pre + fsize);
    if (rc)
        return fpi_err_code(&s->err, rc, "cannot read frame at 0x%llx", (unsigned long long)addr);
    *out = s->frame_buf + pre;
    return FP_OK;
}

/* Start of the bytecode the frame executes: the thread-local copy on
 * free-threaded 3.14+ when tlbc_index selects one, else co_code_adaptive. */
static int bytecode_start(fp_session *s, uint64_t code, int32_t idx, uint64_t *out)
{
    const fpi_layout *l = &s->layout;
    *out = code + (uint64_t)l->co_code_adaptive;
    if (idx == 0 || l->co_tlbc == FPI_OFF_NONE)
        return FP_OK;
    if (idx < 0 || idx >= FPI_MAX_TLBC_ENTRIES)
        return fpi_err(&s->err, FP_E_CORRUPT, "frame tlbc_index %d: out of range", idx);
    if (fpi_tlbc_ahead_take(&s->tlbc_ahead, s->sample_no, s->reads.calls, code, idx, out))
        return FP_OK;
    uint64_t arr;
    int rc = fpi_read(s, code + (uint64_t)l->co_tlbc, &arr, sizeof arr);
    if (rc)
        return fpi_err_code(&s->err, rc, "cannot read co_tlbc of code object 0x%llx", (unsigned long long)code);
    int64_t size;
    if ((rc = fpi_read(s, arr, &size, sizeof size)))
        return fpi_err_code(&s->err, rc, "cannot read the TLBC array at 0x%llx", (unsigned long long)arr);
    if (size < 0 || size > FPI_MAX_TLBC_ENTRIES || idx >= size)
        return fpi_err(&s->err, FP_E_CORRUPT, "tlbc_index %d: outside the TLBC array of size %lld",
                      idx, (long long)size);
    uint64_t entry;
    if ((rc = fpi_read(s, arr + PTR_SIZE * (1u + (uint64_t)idx), &entry, sizeof entry)))
        return fpi_err_code(&s->err, rc, "cannot read TLBC entry %d", idx);
    if (entry == 0)
        return fpi_err(&s->err, FP_E_CORRUPT, "TLBC entry %d of code object 0x%llx: empty", idx,
                      (unsigned long long)code);
    fpi_tlbc_ahead_note(&s->tlbc_ahead, s->sample_no, code, idx, arr);
    *out = entry;
    return FP_OK;
}

/* Has the walk followed the frame at addr already? */
static bool followed(const fp_session *s, uint64_t addr)
{
    for (size_t i = 0; i < s->nseen; i++)
        if (s->seen[i].addr == addr)
            return true;
    return false;
}

static int push_pending(fp_session *s, const fpi_pending_frame *pf)
{
    fpi_pending_frame *np = fpi_grow(s->pending, &s->pending_cap, s->npending + 1, sizeof *np, FPI_PENDING_INITIAL);
    if (!np)
        return fpi_err(&s->err, FP_E_NOMEM, "out of memory: recording %zu frames", s->npending + 1);
    s->pending = np;
    s->pending[s->npending++] = *pf;
    return FP_OK;
}

static int push_seen(fp_session *s, uint64_t addr, const uint8_t *fr, int32_t chunk)
{
    const fpi_layout *l = &s->layout;
    fpi_seen_frame *ns = fpi_grow(s->seen, &s->seen_cap, s->nseen + 1, sizeof *ns, FPI_PENDING_INITIAL);
    if (!ns)
        return fpi_err(&s->err, FP_E_NOMEM, "out of memory: recording frame %zu of a walk", s->nseen + 1);
    s->seen = ns;
    fpi_seen_fields(l, addr, fr, chunk, &s->seen[s->nseen++]);
    if (chunk != FPI_OUTSIDE_CHUNKS) /* top down: the last one met in a chunk is its lowest */
        s->chunks[chunk].lowest = addr;
    return FP_OK;
}

/* The two stack slots at a suspended frame's saved depth, where a CALL
 * leaves the function it called (call_sites.c), into out (3.14+: stack
 * references, without their tag bits); false when they do not lie in this
 * walk's copy of the frame's chunk. */
static bool slots_at_depth(const fp_session *s, size_t chunk, uint64_t addr, int32_t depth, uint64_t out[2])
{
    const fpi_layout *l = &s->layout;
    if (l->fr_localsplus == FPI_OFF_NONE || depth < 0 || chunk >= s->nchunks)
        return false;
    const fpi_chunk_copy *c = &s->chunks[chunk];
    uint64_t at = addr + (uint64_t)l->fr_localsplus + PTR_SIZE * (uint64_t)depth, end = c->remote + c->size;
    if (at < addr || at < c->remote || at > end || end - at < 2u * PTR_SIZE)
        return false;
    const uint8_t *p = s->stack_buf + c->local + (at - c->remote);
    out[0] = fpi_load_u64(p, 0) & ~l->executable_tag_mask;
    out[1] = fpi_load_u64(p, PTR_SIZE) & ~l->executable_tag_mask;
    return true;
}

/* Does the data stack hold a frame below the lowest one the walk
 * followed?  The oldest chunk copied has no previous chunk (copy_chunks
 * stops there): the root, whose first frame lies ROOT_CHUNK_SKIP bytes
 * past its header.  False when the walk passed that frame, or when no
 * chunk holds a frame at all. */
static bool data_stack_below_walk(const fp_session *s)
{
    if (s->nchunks == 0)
        return false;
    const fpi_chunk_copy *root = &s->chunks[s->nchunks - 1];
    if (root->lowest == root->remote + CHUNK_HEADER + ROOT_CHUNK_SKIP)
        return false;
    for (size_t i = 0; i < s->nchunks; i++) {
        uint64_t first = CHUNK_HEADER + (i == s->nchunks - 1 ? ROOT_CHUNK_SKIP : 0u);
        if (s->chunks[i].size > first)
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
 * frames of the data stack below it; a chain greenlet has cut for a switch
 * (its frames' links rewritten, the outermost Python frame's set to NULL)
 * ends at a Python frame.  Both are refused. */
static bool ends_at_switched_stack_bottom(const fp_session *s, bool last_is_entry, bool last_outside)
{
    return last_is_entry && last_outside && !data_stack_below_walk(s);
}

/* Phase 1: follow the chain from the thread's top frame, recording every
 * frame followed (for the read-back check) and every Python frame (entry
 * and shim frames are skipped). */
static int collect_chain(fp_session *s, fp_thread *th, uint64_t top, uint64_t base_frame)
{
    const fpi_layout *l = &s->layout;
    uint64_t addr = top, last = 0;
    uint32_t depth = 0;
    size_t chunk = 0; /* where frame_bytes looks first */
    bool above_is_python = false; /* the frame just followed can be a directly linked callee */
    bool last_is_entry = false;   /* the frame just followed was entered from C code */
    bool last_outside = false;    /* the frame just followed lies outside the data stack */
    /* Brent's cycle detection: a frame passed at step 2^k - 1, compared
     * with every later one until step 2^(k+1) - 1.  A chain read across
     * instants can loop (3.12: generator frames, read one by one outside
     * the data stack, each pointing back to a consumer that pointed on to
     * them); the loop is found within twice its length plus its lead, not
     * after max_depth frames and as many reads. */
    uint64_t cycle_mark = 0;
    uint64_t cycle_power = 1, cycle_steps = 0;
    s->npending = 0;
    s->nseen = 0;
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
            if (followed(s, addr)) /* a loop longer than Brent's check could close in max_depth frames */
                return fpi_err(&s->err, FP_E_CORRUPT, "frame chain of thread %llu: a cycle at 0x%llx",
                              (unsigned long long)th->native_id, (unsigned long long)addr);
            return fpi_err(&s->err, FP_E_LIMIT, "thread %llu: deeper than %u frames",
                          (unsigned long long)th->native_id, s->opts.max_depth);
        }
        if (addr & (PTR_SIZE - 1))
            return fpi_err(&s->err, FP_E_CORRUPT, "frame pointer 0x%llx: unaligned", (unsigned long long)addr);
        if (addr == base_frame) { /* 3.15+: the sentinel at the bottom of every chain */
            last = addr;
            break;
        }
        const uint8_t *fr = NULL;
        bool outside = false;
        int rc = frame_bytes(s, addr, depth == 0, &chunk, &fr, &outside);
        if (rc)
            return rc;
        if ((rc = push_seen(s, addr, fr, outside ? FPI_OUTSIDE_CHUNKS : (int32_t)chunk)))
            return rc;
        /* 3.11: a generator's frame on a running chain is executing; one
         * that is suspended was read after it left the chain (its previous
         * link is gone, and the chain would end at it). */
        int16_t gstate = s->seen[s->nseen - 1].gen_state;
        if (gstate >= 0 && gstate != l->gen_state_executing)
            return fpi_err(&s->err, FP_E_INCOMPLETE,
                           "torn: generator frame 0x%llx of thread %llu is not executing (state %d): it left the "
                           "chain while it was read",
                           (unsigned long long)addr, (unsigned long long)th->native_id, gstate);
        int owner = fpi_load_u8(fr, l->fr_owner);
        uint64_t previous = fpi_load_u64(fr, l->fr_previous);
        last = addr;
        last_outside = outside;
        depth++;
        if (owner == l->owner_cstack || owner == l->owner_interpreter) {
            above_is_python = false;
            last_is_entry = true;
            addr = previous;
            continue;
        }
        if (owner != l->owner_thread && owner != l->owner_generator)
            return fpi_err(&s->err, FP_E_CORRUPT, "frame 0x%llx: unknown owner %d", (unsigned long long)addr, owner);
        fpi_pending_frame pf = {
            .addr = addr,
            .code = fpi_load_u64(fr, l->fr_executable) & ~l->executable_tag_mask,
            .instr = fpi_load_u64(fr, l->fr_instr_ptr),
            .tlbc_index = l->fr_tlbc_index != FPI_OFF_NONE ? (int32_t)fpi_load_u32(fr, l->fr_tlbc_index) : 0,
            .stacktop = s->seen[s->nseen - 1].stacktop,
            .top = addr == top,
            .generator = owner == l->owner_generator,
            .called_directly = above_is_python,
            .funcobj = l->fr_funcobj != FPI_OFF_NONE ? fpi_load_u64(fr, l->fr_funcobj) & ~l->executable_tag_mask : 0,
        };
        pf.slots_known = !outside && above_is_python && slots_at_depth(s, chunk, addr, pf.stacktop, pf.slots);
        if ((rc = push_pending(s, &pf)))
            return rc;
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
    if (l->gen_state_before_frame != FPI_OFF_NONE && s->npending > 0 && s->pending[s->npending - 1].generator &&
        s->pending[s->npending - 1].addr == last)
        return fpi_err(&s->err, FP_E_INCOMPLETE,
                       "torn: thread %llu's walk ended at generator frame 0x%llx (3.11: an unlinked generator frame)",
                       (unsigned long long)th->native_id, (unsigned long long)last);
    /* Before 3.15 every thread's chain ends at a frame entered from C code
     * (3.12+: the evaluation loop's entry frame; 3.11: a frame marked
     * is_entry).  A chain that ends elsewhere was cut: a generator read
     * while it was not running, or a frame read after it was unlinked. */
    if (l->ts_base_frame == FPI_OFF_NONE && top && !last_is_entry)
        return fpi_err(&s->err, FP_E_INCOMPLETE,
                       "torn: thread %llu's walk ended at frame 0x%llx, which was not entered from C code (a chain "
                       "cut while it was read)",
                       (unsigned long long)th->native_id, (unsigned long long)last);
    if (l->ts_base_frame != FPI_OFF_NONE && top && last != base_frame &&
        !ends_at_switched_stack_bottom(s, last_is_entry, last_outside))
        return fpi_err(&s->err, FP_E_INCOMPLETE,
                      "incomplete sample: thread %llu's walk did not reach its base frame (expected 0x%llx, ended at "
                      "0x%llx, %s)",
                      (unsigned long long)th->native_id, (unsigned long long)base_frame, (unsigned long long)last,
                      !last_is_entry ? "not an entry frame"
                      : !last_outside ? "an interpreter-owned frame inside the data stack"
                                      : "with frames of the data stack below it");
    return FP_OK;
}

static int push_frame(fp_session *s, fp_sample *sm, fp_thread *th, const fpi_pending_frame *pf,
                      const fpi_code_entry *ce, int32_t unit, const fpi_position *pos)
{
    fp_frame *f = fpi_sample_push_frame(sm);
    if (!f)
        return fpi_err(&s->err, FP_E_NOMEM, "out of memory: adding frame %zu to the sample", sm->nframes + 1);
    f->function = ce->qualname;
    f->name = ce->name;
    f->file = ce->filename;
    f->line = pos->line;
    f->end_line = pos->end_line;
    f->column = pos->column;
    f->end_column = pos->end_column;
    f->code_addr = pf->code;
    f->frame_addr = pf->addr;
    f->instr_offset = unit;
    f->kind = pf->generator ? FP_FRAME_GENERATOR : FP_FRAME_PYTHON;
    th->frame_count++;
    return FP_OK;
}

/* 3.11-3.13: the thread's top frame, once it has started (visible), runs
 * with its stack pointer held by the evaluation loop (stacktop -1), or
 * has stopped at a call whose callee is not linked yet (a stack depth, at
 * a call instruction).  Stopped anywhere else, it has returned (or is
 * returning: the same bytes), still in its slot while its caller, at its
 * next call, is about to reuse it.  A sample of a running target taken in
 * that instant showed the returned frame as the top under the caller's
 * next call (ci/live many_threads, 3.11: x2 at its call of leaf_x under
 * leaf_y).  Refused with it: a frame in the instant it returns, or
 * stopped for a C trace function.  One stop is no such frame: a
 * generator's or coroutine's frame at the instruction where it waits to
 * be resumed (`waits`), linked above a frame (`below`), is being resumed
 * from C code (gen.send(), next(), an asyncio task's step: the frame is
 * linked before the evaluation loop takes up its stack pointer) or is
 * yielding back to it (its stack pointer saved, not unlinked yet).  Its
 * frame lives in the generator, not in a slot a caller reuses, and a
 * generator that has finished yielding is unlinked (`previous` cleared),
 * so a chain read through it then ends there (refused by the chain's end
 * check, and here too).  Thread states stopped in
 * that instant (every sum() of a generator expression passes through it
 * for each item) are exact stacks; refused, they left those stacks out
 * of every profile. */
static int top_must_run(fp_session *s, const fpi_pending_frame *pf, const fpi_code_entry *ce, bool visible,
                        bool at_call, bool waits, bool below)
{
    if (!pf->top || pf->stacktop == FPI_STACKTOP_RUNNING || !visible || s->layout.fr_stacktop == FPI_OFF_NONE ||
        at_call || (pf->generator && waits && below))
        return FP_OK;
    return fpi_err(&s->err, FP_E_INCOMPLETE,
                   "torn: frame 0x%llx (%s), the top, is not running (stack depth %d) and not at a call: it has "
                   "returned",
                   (unsigned long long)pf->addr, ce->qualname, (int)pf->stacktop);
}

/* A frame suspended at SEND or FOR_ITER under a directly linked callee
 * pushed that callee to resume a generator or coroutine: a callee that is
 * no generator's was pushed by an earlier call of that frame, which has
 * moved on (call_sites.c).  Checked through the frame cache too: its key
 * does not hold the callee's kind. */
static int callee_kind_fits(fp_session *s, const fpi_pending_frame *pending, size_t i, const fpi_code_entry *ce,
                            bool visible, fpi_resumer resumer)
{
    const fpi_pending_frame *pf = &pending[i];
    if (!visible || !pf->called_directly || i == 0 || pending[i - 1].generator || resumer != FPI_RESUMER_RESUMES)
        return FP_OK;
    return fpi_err(&s->err, FP_E_INCOMPLETE,
                   "torn: frame 0x%llx (%s) is suspended resuming a generator under a frame that is no generator's "
                   "(a callee of an earlier call)",
                   (unsigned long long)pf->addr, ce->qualname);
}

/* A generator's or coroutine's frame linked directly above a frame (3.11:
 * not marked as entered from C code) was linked there by that frame's own
 * instruction: SEND or FOR_ITER, which resume it inline (3.12+); or the
 * frame is a generator waiting at its YIELD_VALUE or RESUME under the one
 * it delegates to; or it called gen.throw(), which links a generator
 * suspended in a `yield from` or `await` straight under its caller and
 * throws into the generator that one delegates to (_gen_throw) — that
 * generator then waits at the RESUME after its delegation (3.12: at the
 * YIELD_VALUE before it), with a frame above it (the next one down the
 * chain, or the entry frame of the generator thrown into) and, where a
 * frame keeps one, its stack depth saved.  Any other caller under a
 * generator's frame has moved on from the resumption that linked it: the
 * caller read at its next call, the generator read still linked.  3.11
 * links no generator's frame itself (every generator is resumed from C
 * code, its frame marked as an entry frame), so there a caller under a
 * directly linked generator's frame is torn whatever its instruction.
 * Refused with the torn ones: a caller of gen.throw() in the instant the
 * delegating generator is linked and has nothing above it yet.  Not
 * checked where the caller's instruction cannot be told
 * (FPI_RESUMER_UNKNOWN); a generator whose delegation cannot be told
 * passes as delegating.
 * Under the JIT (3.13+ tier 2) a frame's instruction pointer is written
 * only before a micro-op that escapes to C, pushes a frame (_PUSH_FRAME
 * needs it as the return address) or yields: the optimizer drops every
 * other _SET_IP (remove_unneeded_uops).  So at the instant a frame links a
 * callee its instruction pointer names the linking instruction —
 * FOR_ITER_GEN and SEND_GEN link the generator's frame in
 * _FOR_ITER_GEN_FRAME / _SEND_GEN_FRAME after their instruction's _SET_IP,
 * and gen.throw() is reached through a call, which escapes — and it stays
 * so while the callee is linked, as the caller does not run.  In between
 * it lags behind (a frame that called a function and went on names that
 * CALL until its next escape or push): only a running frame's, and a
 * running frame is the top or links a callee, so it is never the caller
 * checked here; a running generator above may name the RESUME after its
 * last yield, which is why the gen.throw() shape also needs that generator
 * not to be the top and not to be running.  Checked through the frame
 * cache too: its key holds neither frame's kind. */
static int generator_was_resumed(fp_session *s, const fpi_pending_frame *pending, size_t i, const fpi_code_entry *ce,
                                 bool visible, fpi_resumer resumer, enum fp_tristate above_delegating)
{
    const fpi_pending_frame *pf = &pending[i];
    if (!visible || !pf->called_directly || i == 0 || !pending[i - 1].generator ||
        resumer == FPI_RESUMER_UNKNOWN || resumer == FPI_RESUMER_RESUMES || resumer == FPI_RESUMER_DELEGATES)
        return FP_OK;
    const fpi_pending_frame *up = &pending[i - 1];
    if (!up->top && up->stacktop != FPI_STACKTOP_RUNNING && above_delegating != FP_NO)
        return FP_OK;
    return fpi_err(&s->err, FP_E_INCOMPLETE,
                   "torn: frame 0x%llx (%s) is not suspended resuming a generator under the generator's frame "
                   "0x%llx linked above it (one it had resumed before)",
                   (unsigned long long)pf->addr, ce->qualname, (unsigned long long)up->addr);
}

/* A caller suspended in a CALL or CALL_KW (3.12+: or a CALL_FUNCTION_EX
 * that pushed the frame itself) keeps the function it called at its saved
 * stack depth (3.11, 3.12: or NULL there and the function in the slot
 * above; 3.14+: the depth its stack pointer saved, and the very stack
 * reference the callee's f_funcobj took over) until that call returns.  Under a directly
 * linked frame of another function it had moved on from the call that
 * pushed that frame, a slot of another chain at the same depth (ci/live
 * thread_churn, 3.13: churn_worker at its call of d1 under c1 -> c2 ->
 * leaf_c, read so by the copy and both read-backs: 2 samples in 11.6
 * million).  Not checked where it cannot be told: the slots not in the
 * copy, no function recorded, a generator's frame above (resumed, not
 * called), the __init__ shim above (3.13+: the callable is the class), a
 * 3.14+ debug build's caller with a NULL stack pointer.
 * Checked through the frame cache too: its key holds neither frame's
 * function. */
static int callee_was_called(fp_session *s, const fpi_pending_frame *pending, size_t i, const fpi_code_entry *ce,
                             bool callee_is_shim, bool visible, bool passes_callable, bool *compared)
{
    const fpi_pending_frame *pf = &pending[i];
    *compared = false;
    if (!visible || !passes_callable || !pf->called_directly || i == 0 || !pf->slots_known)
        return FP_OK;
    const fpi_pending_frame *up = &pending[i - 1];
    if (up->generator || up->funcobj == 0 || callee_is_shim)
        return FP_OK;
    /* A call made by JIT code: the trace runs _INIT_CALL_PY_EXACT_ARGS (or
     * _PY_FRAME_GENERAL, _PY_FRAME_KW) and _PUSH_FRAME as separate uops,
     * passing the new frame through memory, so the callable's slot holds
     * the callee's frame (a stack reference to it) instead of the function
     * (3.14+jit: jit_loops' step under the checkpoint it called).  Where a
     * callee is placed follows from its caller alone, so the frame names no
     * call: nothing to compare, and the link is read back (count_link). */
    if (pf->slots[0] == up->addr)
        return FP_OK;
    *compared = true;
    if (pf->slots[0] == up->funcobj || (pf->slots[0] == 0 && pf->slots[1] == up->funcobj))
        return FP_OK;
    return fpi_err(&s->err, FP_E_INCOMPLETE,
                   "torn: frame 0x%llx (%s) is suspended in a call of another function than that of the frame "
                   "above it (0x%llx: a slot of another call chain)",
                   (unsigned long long)pf->addr, ce->qualname, (unsigned long long)up->addr);
}

/* A shown frame under another shown frame is a link of the stack; one the
 * callee check did not compare is counted (s->links_unchecked): the walk is
 * then read back once more (fpi_verify_reads_first). */
static void count_link(fp_session *s, bool visible, bool *shown_above, bool compared)
{
    if (visible && *shown_above && !compared)
        s->links_unchecked++;
    *shown_above = *shown_above || visible;
}

/* Phase 2: resolve each recorded frame's code object and position (or
 * take them from the frame cache when every input is the same). */
int fpi_emit_frames(fp_session *s, fp_sample *sm, fp_thread *th, const fpi_pending_frame *pending, size_t n)
{
    fpi_code_prevalidate(s, pending, n);
    bool callee_is_shim = false; /* frame i - 1 runs the __init__ cleanup shim */
    enum fp_tristate above_delegating = FP_UNKNOWN; /* frame i - 1, a generator's, waits in a delegation */
    bool shown_above = false;    /* a frame above i is shown */
    for (size_t i = 0; i < n; i++) {
        const fpi_pending_frame *pf = &pending[i];
        fpi_code_entry *ce;
        int rc = fpi_code_get(s, pf->code, &ce);
        if (rc) {
            fpi_err_prefix(&s->err, "frame 0x%llx", (unsigned long long)pf->addr);
            return rc;
        }
        /* 3.13: a frame in use keeps at least its locals on its stack
         * (stacktop >= co_nlocalsplus, or -1 while it runs); its return
         * clears it to 0.  A cleared frame read as part of the chain is
         * one that returned, still in a slot its caller is about to reuse
         * (checked before the frame cache, which would take it for the
         * live frame it was). */
        if (pf->stacktop == 0 && ce->nlocalsplus > 0)
            return fpi_err(&s->err, FP_E_INCOMPLETE,
                           "torn: frame 0x%llx (%s) has returned: its stack was cleared (a slot its caller is "
                           "about to reuse)",
                           (unsigned long long)pf->addr, ce->qualname);
        /* 3.11-3.13: a frame saves its stack depth before it links the
         * callee it pushes (and runs with -1 from the moment it resumes),
         * so a running frame has no directly linked function's frame above
         * it: that frame is one it has not pushed yet, still in its slot
         * from an earlier chain at the same depth (ci/live thread_churn,
         * 3.11: c2 at its call of leaf_c under a leaf_d of the chain
         * before).  A generator's frame can be: gen.throw() links the
         * delegating generator straight under the frame that called it,
         * which runs (parked yield_from, 3.12+).  Checked before the frame
         * cache too: its key holds no depth. */
        if (pf->called_directly && pf->stacktop == FPI_STACKTOP_RUNNING && s->layout.fr_stacktop != FPI_OFF_NONE &&
            i > 0 && !pending[i - 1].generator)
            return fpi_err(&s->err, FP_E_INCOMPLETE,
                           "torn: frame 0x%llx (%s) is running under the frame linked above it (one it has not "
                           "pushed: a slot of an earlier call)",
                           (unsigned long long)pf->addr, ce->qualname);
        /* Thread-local bytecode (free-threaded 3.14+) can be replaced under
         * the same index: such frames are always resolved afresh. */
        bool cacheable = s->opts.cache_frames && s->opts.cache_code && pf->tlbc_index == 0;
        bool compared;
        fpi_frame_key key = {pf->addr, pf->code, pf->instr, ce->serial, pf->generator, pf->called_directly};
        size_t at = s->resolve_pos++;
        const fpi_resolved_frame *hit = cacheable ? fpi_frame_cache_find(&s->fc, at, &key) : NULL;
        if (hit) {
            if ((rc = top_must_run(s, pf, ce, hit->visible, hit->at_call, hit->waits, i + 1 < n)) ||
                (rc = callee_kind_fits(s, pending, i, ce, hit->visible, hit->resumer)) ||
                (rc = generator_was_resumed(s, pending, i, ce, hit->visible, hit->resumer, above_delegating)) ||
                (rc = callee_was_called(s, pending, i, ce, callee_is_shim, hit->visible, hit->passes_callable,
                                        &compared)))
                return rc;
            s->fc.hits++;
            if (hit->visible && (rc = push_frame(s, sm, th, pf, ce, hit->unit, &hit->pos)))
                return rc;
            count_link(s, hit->visible, &shown_above, compared);
            callee_is_shim = ce->init_shim;
            above_delegating = hit->delegating;
            continue;
        }
        uint64_t start;
        if ((rc = bytecode_start(s, pf->code, pf->tlbc_index, &start)))
            return rc;
        /* 3.11/3.12 point a frame that has not started one unit before
         * its first instruction; a generator's frame is made at its
         * RETURN_GENERATOR, past its first unit, and is never there. */
        int64_t delta = (int64_t)(pf->instr - start);
        int64_t lowest = pf->generator ? 0 : -CODEUNIT_SIZE;
        if (delta % CODEUNIT_SIZE != 0 || delta < lowest || delta / CODEUNIT_SIZE >= ce->code_units)
            return fpi_err(&s->err, FP_E_CORRUPT,
                          "frame 0x%llx: instruction pointer 0x%llx is outside the bytecode of %s (0x%llx, %lld units)",
                          (unsigned long long)pf->addr, (unsigned long long)pf->instr, ce->qualname,
                          (unsigned long long)start, (long long)ce->code_units);
        int32_t unit = (int32_t)(delta / CODEUNIT_SIZE);
        /* A frame before its first traceable instruction is hidden: the
         * __init__ cleanup shim under the __init__ it pushed, or a frame
         * being set up, which has called nothing yet. */
        bool visible = pf->generator || unit >= ce->firsttraceable;
        /* What the call-site checks derive from the key alone (the code
         * cache entry's instructions, the unit, the generator flag): kept
         * with the frame cache's entry for its hits, and decoded only when
         * that entry or a check below reads them (the top, a direct caller). */
        bool verdicts = cacheable || pf->top || pf->called_directly;
        bool at_call = verdicts && fpi_call_site_ok(s->call_sites, ce, unit, pf->generator);
        fpi_resumer resumer =
            verdicts ? fpi_call_site_resumer(s->call_sites, ce, unit, pf->generator) : FPI_RESUMER_UNKNOWN;
        enum fp_tristate delegating =
            pf->generator ? fpi_call_site_delegating(s->call_sites, ce, unit) : FP_UNKNOWN;
        bool passes = verdicts && s->layout.fr_localsplus != FPI_OFF_NONE &&
                      fpi_call_site_passes_callable(s->call_sites, ce, unit);
        bool waits = pf->generator && (verdicts && fpi_call_site_waits(s->call_sites, ce, unit));
        if ((rc = top_must_run(s, pf, ce, visible, at_call, waits, i + 1 < n)))
            return rc;
        if (visible && pf->called_directly && !at_call)
            return fpi_err(&s->err, FP_E_INCOMPLETE,
                           "torn: frame 0x%llx (%s) is not suspended in a call under the frame above it "
                           "(a frame that had returned)",
                           (unsigned long long)pf->addr, ce->qualname);
        if ((rc = callee_kind_fits(s, pending, i, ce, visible, resumer)) ||
            (rc = generator_was_resumed(s, pending, i, ce, visible, resumer, above_delegating)) ||
            (rc = callee_was_called(s, pending, i, ce, callee_is_shim, visible, passes, &compared)))
            return rc;
        if (!visible && pf->called_directly && !ce->init_shim)
            return fpi_err(&s->err, FP_E_INCOMPLETE,
                           "torn: frame 0x%llx (%s) is being set up under a frame it cannot have called yet "
                           "(a slot a newer call reused)",
                           (unsigned long long)pf->addr, ce->qualname);
        /* Frames that have not reached their first traceable instruction
         * (being set up, or the __init__ cleanup shim) are not part of the
         * Python-visible stack. */
        fpi_position pos = {FP_POS_NONE, FP_POS_NONE, FP_POS_NONE, FP_POS_NONE};
        if (visible && (rc = fpi_code_position(ce, unit, &pos)))
            return fpi_err(&s->err, rc, "line table of %s (%s): corrupt", ce->qualname, ce->filename);
        fpi_resolved_frame res = {
            .key = key, .visible = visible, .at_call = at_call, .resumer = resumer, .delegating = delegating,
            .passes_callable = passes, .waits = waits, .unit = unit, .pos = pos};
        if (cacheable && fpi_frame_cache_store(&s->fc, at, &res) == FP_OK)
            s->fc.misses++;
        if (visible && (rc = push_frame(s, sm, th, pf, ce, unit, &pos)))
            return rc;
        count_link(s, visible, &shown_above, compared);
        callee_is_shim = ce->init_shim;
        above_delegating = delegating;
    }
    return FP_OK;
}

void fpi_take_top_instr(fpi_pending_frame *pending, size_t n, const fpi_walk_used *u, const fpi_verify_want *w)
{
    if (u->nseen == 0)
        return;
    for (size_t i = 0; i < n; i++)
        if (pending[i].addr == u->seen[0].addr) {
            pending[i].instr = w->top_instr;
            return;
        }
}

/* Collects the chain, reads back everything it used (verify.c), then
 * resolves the frames. */
static int walk_frames(fp_session *s, fp_sample *sm, fp_thread *th, uint64_t top, uint64_t base_frame,
                       fpi_verify_want *want)
{
    int rc = collect_chain(s, th, top, base_frame);
    if (!rc && fpi_batch_collecting(s))
        return fpi_batch_defer(s, sm, th, want); /* read back with the interpreter's other threads */
    /* Two read-backs: a copy torn by a thread switching chains between its
     * reads, read back torn the same way, must also be read so a second
     * time (each more read asks the thread to switch twice more in step
     * with the reads); where the callee check refuses such a mixture, the
     * second only for a walk with a link it did not compare (verify.c). */
    fpi_walk_used used = {s->chunks, s->nchunks, s->seen, s->nseen};
    size_t failed;
    unsigned first = fpi_verify_reads_first(&s->layout);
    for (unsigned i = 0; !rc && i < first; i++) {
        want->last = i + 1 == first;
        rc = fpi_verify_batch(s, want, &used, 1, &failed);
    }
    if (rc)
        return rc;
    fpi_take_top_instr(s->pending, s->npending, &used, want);
    fpi_frames_mark mark = fpi_frames_mark_now(s);
    rc = fpi_emit_frames(s, sm, th, s->pending, s->npending);
    fpi_owed owed = rc ? FPI_OWED_NONE : fpi_frames_owe(s, mark);
    if (owed != FPI_OWED_NONE)
        rc = fpi_verify_after_frames(s, want, &used, 1, owed == FPI_OWED_CODE);
    return rc;
}

fpi_frames_mark fpi_frames_mark_now(const fp_session *s)
{
    return (fpi_frames_mark){s->code_late, s->links_unchecked};
}

fpi_owed fpi_frames_owe(const fp_session *s, fpi_frames_mark since)
{
    if (s->code_late != since.code_late)
        return FPI_OWED_CODE;
    if (fpi_verify_reads_first(&s->layout) < FPI_VERIFY_READS && s->links_unchecked != since.links_unchecked)
        return FPI_OWED_LINKS;
    return FPI_OWED_NONE;
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

/* Follows the exc_info chain like sys.exception(): the topmost item whose
 * value is neither NULL nor None. */
static int thread_exception(fp_session *s, uint64_t ts, const uint8_t *tsbuf, uint64_t item, int *out)
{
    const fpi_layout *l = &s->layout;
    for (uint32_t n = 0; item && n < s->opts.max_depth; n++) {
        uint64_t pair[2];
        int rc = FP_OK;
        if (item == ts + (uint64_t)l->ts_exc_state) /* the thread state's own item: already copied */
            memcpy(pair, tsbuf + l->ts_exc_state + l->err_exc_value, sizeof pair);
        else
            rc = fpi_read(s, item + (uint64_t)l->err_exc_value, pair, sizeof pair);
        if (rc)
            return rc;
        /* None, the usual exc_value of a thread with no exception, is a
         * static singleton: once known, it costs no read. */
        if (pair[0] && pair[0] != s->none_obj) {
            uint64_t type;
            if ((rc = fpi_read(s, pair[0] + (uint64_t)l->ob_type, &type, sizeof type)))
                return rc;
            int kind;
            if ((rc = fpi_type_kind(s, type, &kind)))
                return rc;
            if (kind != FPI_TYPE_NONE) {
                *out = FP_YES;
                return FP_OK;
            }
            s->none_obj = pair[0];
        }
        item = pair[1]; /* previous_item follows exc_value */
    }
    *out = item ? FP_UNKNOWN : FP_NO;
    return FP_OK;
}


int fpi_walk_thread_once(fp_session *s, fp_sample *sm, fpi_interp_info *ii, uint64_t link, uint64_t ts,
                            const fpi_thread_prefetch *pre, uint64_t *next)
{
    const fpi_layout *l = &s->layout;
    uint8_t buf[FPI_MAX_STRUCT_READ];
    int rc = FP_OK;
    if (pre)
        memcpy(buf, (pre->own_buf ? s->retry_buf : s->ts_bufs) + pre->tsbuf, s->ts_read_len);
    else
        rc = fpi_read(s, ts, buf, s->ts_read_len);
    if (rc)
        return fpi_err_code(&s->err, rc, "cannot read thread state at 0x%llx", (unsigned long long)ts);
    *next = fpi_load_u64(buf, l->ts_next);
    fp_thread *th = fpi_sample_push_thread(sm);
    if (!th)
        return fpi_err(&s->err, FP_E_NOMEM, "out of memory: adding thread %zu to the sample", sm->nthreads + 1);
    th->native_id = fpi_load_u64(buf, l->ts_native_thread_id);
    th->thread_id = fpi_load_u64(buf, l->ts_thread_id);
    th->interp_id = ii->id;
    th->first_frame = sm->nframes;
    /* A listed thread state that does not name this interpreter is not set
     * up yet: 3.11's new_threadstate makes the new state the list's head
     * and only then sets it up (interpreter, next link, ids: until then the
     * template's zeros).  A thread stopped in between (blocking mode), or a
     * copy and read-backs that all fall in between, showed a list of one
     * frameless thread, the main thread missing (ci/live thread_churn on
     * 3.11, blocking).  A failed walk of its own, so that the list is
     * followed on or walked again as after any thread that failed (a state
     * freed and its memory reused, reached through a stale link, fails so
     * too). */
    uint64_t owner = fpi_load_u64(buf, l->ts_interp);
    if (owner != ii->addr) {
        rc = fpi_err(&s->err, FP_E_INCOMPLETE,
                     "torn: thread state 0x%llx names interpreter 0x%llx, not 0x%llx: it is being added to the "
                     "list or taken off it",
                     (unsigned long long)ts, (unsigned long long)owner, (unsigned long long)ii->addr);
        goto fail;
    }
    /* The main thread is the interpreter's threads.main.  That is cleared
     * when finalisation starts (atexit handlers still run on the main
     * thread): only then does the runtime's main thread id decide.  The
     * ids alone cannot: a thread state whose thread has not started yet
     * carries its creator's thread id, and on 3.11 its creator's native
     * id too (seen live: a new thread's state listed as a frameless main
     * thread beside the real one); on 3.12 no native id yet. */
    th->main = ii->threads_main ? ts == ii->threads_main
                                : ii->main_thread_id && th->thread_id == ii->main_thread_id && th->native_id != 0;
    /* (Without threads.main, 3.11 and 3.12, one_main_thread keeps the
     * oldest state with the main thread's ids.) */
    th->holds_gil = th->gil_requested = th->on_cpu = th->exception = FP_UNKNOWN;
    if (!l->free_threaded) {
        if (l->ts_holds_gil != FPI_OFF_NONE)
            th->holds_gil = fpi_load_u32(buf, l->ts_holds_gil) ? FP_YES : FP_NO;
        else if (ii->gil_known)
            th->holds_gil = ii->gil_holder == ts ? FP_YES : FP_NO;
        if (l->ts_gil_requested != FPI_OFF_NONE)
            th->gil_requested = fpi_load_u32(buf, l->ts_gil_requested) && th->holds_gil != FP_YES ? FP_YES : FP_NO;
    }
    if (s->opts.thread_cpu_state) {
        char st = 0;
        if (s->thread_state)
            st = s->thread_state(s->thread_state_ctx, th->native_id);
        else if (s->pid > 0)
            st = fpi_proc_thread_state(s->pid, (long)th->native_id);
        if (st)
            th->on_cpu = st == 'R' ? FP_YES : FP_NO;
    }
    int exc = FP_NO;
    if (fpi_load_u64(buf, l->ts_current_exception) != 0)
        exc = FP_YES;
    else if ((rc = thread_exception(s, ts, buf, fpi_load_u64(buf, l->ts_exc_info), &exc)) && fpi_walk_fatal(rc))
        goto fail;
    th->exception = rc ? FP_UNKNOWN : exc;
    rc = FP_OK; /* an exception that could not be read only leaves it unknown */

    uint64_t top, cframe = 0;
    if (l->ts_current_frame != FPI_OFF_NONE) {
        top = fpi_load_u64(buf, l->ts_current_frame);
    } else {
        cframe = fpi_load_u64(buf, l->ts_cframe);
        top = 0;
        if (cframe && pre && pre->has_cframe_top && pre->cframe == cframe)
            top = pre->cframe_top;
        else if (cframe && (rc = fpi_read(s, cframe + (uint64_t)l->cframe_current_frame, &top, sizeof top))) {
            rc = fpi_err_code(&s->err, rc, "cannot read the _PyCFrame of thread %llu", (unsigned long long)th->native_id);
            goto fail;
        }
        /* Only the thread state's own _PyCFrame has no frame (no evaluation
         * running); an evaluation's has none only while it is being
         * entered (or through a _PyCFrame it has left). */
        if (cframe && !top && l->ts_root_cframe != FPI_OFF_NONE && cframe != ts + (uint64_t)l->ts_root_cframe) {
            rc = fpi_err(&s->err, FP_E_INCOMPLETE,
                         "torn: thread %llu's current _PyCFrame at 0x%llx has no frame yet (an evaluation being "
                         "entered)",
                         (unsigned long long)th->native_id, (unsigned long long)cframe);
            goto fail;
        }
    }
    uint64_t base = l->ts_base_frame != FPI_OFF_NONE ? fpi_load_u64(buf, l->ts_base_frame) : 0;
    /* A thread state with no Python frames (3.15+: its top is the base
     * frame) has nothing in its data stack to copy, but is read back like
     * any other: a thread state freed and being set up again at the same
     * address looks frameless and ends the list (next NULL), which would
     * drop every thread after it from a sample returned as good. */
    bool frameless = top && top == base;
    fpi_verify_want want = {
        .native_id = th->native_id,
        .link_addr = link,
        .ts = ts,
        .tsbuf = buf,
        .cframe_addr = cframe,
        .top = top,
        .generation_addr = l->interp_code_generation != FPI_OFF_NONE ? ii->addr + (uint64_t)l->interp_code_generation : 0,
        .generation = ii->generation,
        .generation_seen = ii->generation,
    };
    if (frameless)
        s->nchunks = 0;
    else
        rc = copy_chunks(s, fpi_load_u64(buf, l->ts_datastack_chunk), fpi_load_u64(buf, l->ts_datastack_top), pre);
    if (!rc) {
        remember_stack(s, ts, cframe);
        rc = walk_frames(s, sm, th, top, base, &want);
    }
    if (want.generation_seen != want.generation) {
        /* Code objects were freed while the thread was read: none of the
         * cached ones can be trusted for the retry. */
        fpi_code_cache_invalidate(&s->cc);
        s->code_generation = ii->generation = want.generation_seen;
    }
    if (!rc)
        return FP_OK;
fail:
    /* The thread stays in the sample, failed, saying why (left without its
     * error, it would read as a good thread).  th may have moved if frames
     * grew the arrays: re-fetch. */
    th = &sm->threads[sm->nthreads - 1];
    sm->nframes = th->first_frame;
    th->frame_count = 0;
    th->error = rc;
    return rc;
}

/* What a thread stopped by walk_thread_paused was doing before its stop
 * (its /proc state reads "traced" while stopped). */
static char paused_thread_state(void *ctx, uint64_t native_id)
{
    const fpi_paused_thread *t = ctx;
    return native_id == (uint64_t)t->tid ? t->state : 0;
}

/* The native id the last attempt read for the thread walked from entry
 * nthreads of sm (0 when it read none). */
static uint64_t walked_thread_id(const fp_sample *sm, size_t nthreads)
{
    return sm->nthreads > nthreads ? sm->threads[nthreads].native_id : 0;
}

/* fp_options.pause_torn: the thread whose walks keep tearing (its native
 * id as the last attempt read it) is stopped alone and walked once more,
 * every check on, then resumed.  False when it could not be stopped (not
 * one of the process's threads, another tracer, not permitted): the
 * caller retries as without the option. */
static bool walk_thread_paused(fp_session *s, fp_sample *sm, fpi_interp_info *ii, uint64_t link, uint64_t ts,
                               size_t nthreads, size_t nframes, uint64_t *next, int *rc)
{
    uint64_t tid = walked_thread_id(sm, nthreads);
    fpi_paused_thread pt;
    char why[FPI_ERRMSG_MAX];
    if (tid == 0 || tid > (uint64_t)LONG_MAX || fpi_pause_thread(s->pid, (long)tid, &pt, why, sizeof why) != FP_OK)
        return false;
    s->reads.paused++;
    char (*saved)(void *, uint64_t) = s->thread_state;
    void *saved_ctx = s->thread_state_ctx;
    s->thread_state = paused_thread_state;
    s->thread_state_ctx = &pt;
    sm->nthreads = nthreads;
    sm->nframes = nframes;
    s->spec_frames = false;
    *rc = fpi_walk_thread_once(s, sm, ii, link, ts, NULL, next);
    if (*rc == FP_E_INCOMPLETE)
        s->reads.torn++; /* the list changed around it, or another thread's generator */
    s->thread_state = saved;
    s->thread_state_ctx = saved_ctx;
    fpi_resume_thread(&pt);
    return true;
}

/* Whether the link that led to a thread state, read now, names another:
 * a retry through it would tear again, and the interpreter's threads are
 * walked again from its list head instead (fpi_walk_all).  *now: what the
 * link names now (when the link is the list head, the head to start from). */
static bool link_moved_from(fp_session *s, uint64_t link, uint64_t ts, uint64_t *now)
{
    return fpi_read(s, link, now, sizeof *now) == FP_OK && *now != ts;
}

/* A running thread changes under the walker; a walk that fails for any
 * reason but the process vanishing is retried from its thread state
 * (with fp_options.pause_torn, after FP_PAUSE_TORN_AFTER torn walks, with
 * the thread stopped).  *link_left: the retries ended because the link
 * that led to the thread state was read naming *link_now (fpi_walk_all then
 * walks the list again from its head without reading the link again). */
static int walk_thread(fp_session *s, fp_sample *sm, fpi_interp_info *ii, uint64_t link, uint64_t ts,
                       const fpi_thread_prefetch *pre, uint64_t *next, bool *link_left, uint64_t *link_now)
{
    size_t nthreads = sm->nthreads, nframes = sm->nframes;
    int rc = FP_OK;
    *link_left = false;
    *link_now = 0;
    s->rb_retry_on = true;
    for (unsigned attempt = 0; attempt < FPI_THREAD_WALK_ATTEMPTS; attempt++) {
        /* The read-backs the last attempt planned become the ones its
         * retry reads ahead (retry_read.c); this attempt's are recorded. */
        fpi_rb_ahead_begin_sample(&s->rb_retry);
        /* The caller hears of a torn walk before its retry (and may move
         * to the CPU the thread runs on: fp_session_set_retry_hook). */
        if (attempt > 0 && rc == FP_E_INCOMPLETE && s->retry_hook)
            s->retry_hook(s->retry_hook_ctx, walked_thread_id(sm, nthreads));
        /* Stopped, the thread is one instant; a walk that still fails
         * stopped it in the middle of an update (a frame or a chunk being
         * pushed or popped): it runs on a little, and is stopped again. */
        if (attempt >= FP_PAUSE_TORN_AFTER && rc == FP_E_INCOMPLETE && s->opts.pause_torn && s->pid > 0 &&
            walk_thread_paused(s, sm, ii, link, ts, nthreads, nframes, next, &rc)) {
            if (rc != FP_E_INCOMPLETE)
                break;
            continue;
        }
        sm->nthreads = nthreads;
        sm->nframes = nframes;
        /* Retries read afresh, in one read (retry_read.c): the prefetched
         * copy is what failed.  So does the first walk of a thread that
         * the batched read-back found changed: the frame bytes it took
         * from the frame cache may be what changed. */
        s->spec_frames = attempt == 0 && ts != s->batch_torn_ts && s->opts.cache_frames && s->opts.cache_code;
        fpi_thread_prefetch again;
        const fpi_thread_prefetch *use = attempt == 0 ? pre : fpi_retry_read(s, ts, &again) ? &again : NULL;
        s->link_moved = false;
        rc = fpi_walk_thread_once(s, sm, ii, link, ts, use, next);
        if (rc == FP_E_INCOMPLETE)
            s->reads.torn++;
        if (rc == FP_OK || fpi_walk_fatal(rc) || rc == FP_E_LIMIT)
            break;
        if (rc == FP_E_INCOMPLETE && s->link_moved && (*link_left = link_moved_from(s, link, ts, link_now)))
            break;
    }
    s->rb_retry_on = false;
    return rc;
}

/* The words of an interpreter state a sample needs, with the GIL's (3.11,
 * 3.12: who holds it), read in one batch: alone, or within the sample's
 * first read when the interpreter is the one the last sample started at. */
typedef struct interp_words {
    uint64_t addr;
    uint64_t next, threads_head, id, threads_main, gilp, generation;
    uint64_t gil_at;          /* the GIL these words read (0: none read) */
    int32_t gil_locked;
    uint64_t gil_holder;
} interp_words;

/* Where the GIL's state lies: in _PyRuntime (3.11), behind the
 * interpreter's ceval.gil pointer (3.12), or nowhere (3.13+ keep it in the
 * thread state; free-threaded builds have none).  0: not read. */
static uint64_t gil_base(const fpi_layout *l, uint64_t runtime, uint64_t gilp)
{
    if (l->free_threaded || l->ts_holds_gil != FPI_OFF_NONE)
        return 0;
    if (l->rt_gil_locked != FPI_OFF_NONE)
        return runtime;
    return l->gil_locked != FPI_OFF_NONE ? gilp : 0;
}

static int32_t gil_locked_off(const fpi_layout *l)
{
    return l->rt_gil_locked != FPI_OFF_NONE ? l->rt_gil_locked : l->gil_locked;
}

static int32_t gil_holder_off(const fpi_layout *l)
{
    return l->rt_gil_locked != FPI_OFF_NONE ? l->rt_gil_last_holder : l->gil_last_holder;
}

/* Appends the reads of interpreter addr's words to iov (at most
 * INTERP_IOV_MAX), the GIL's at gil (0: none); returns the count. */
#define INTERP_IOV_MAX 8u
static size_t interp_iov(const fpi_layout *l, uint64_t addr, uint64_t gil, interp_words *w, fp_iov *iov)
{
    size_t n = 0;
    memset(w, 0, sizeof *w);
    w->addr = addr;
    w->gil_at = gil;
    iov[n++] = (fp_iov){addr + (uint64_t)l->interp_next, &w->next, 8};
    iov[n++] = (fp_iov){addr + (uint64_t)l->interp_threads_head, &w->threads_head, 8};
    iov[n++] = (fp_iov){addr + (uint64_t)l->interp_id, &w->id, 8};
    if (l->interp_threads_main != FPI_OFF_NONE)
        iov[n++] = (fp_iov){addr + (uint64_t)l->interp_threads_main, &w->threads_main, 8};
    if (l->interp_ceval_gil != FPI_OFF_NONE)
        iov[n++] = (fp_iov){addr + (uint64_t)l->interp_ceval_gil, &w->gilp, 8};
    if (l->interp_code_generation != FPI_OFF_NONE)
        iov[n++] = (fp_iov){addr + (uint64_t)l->interp_code_generation, &w->generation, 8};
    if (gil) {
        iov[n++] = (fp_iov){gil + (uint64_t)gil_locked_off(l), &w->gil_locked, sizeof w->gil_locked};
        iov[n++] = (fp_iov){gil + (uint64_t)gil_holder_off(l), &w->gil_holder, sizeof w->gil_holder};
    }
    /* In address order, so that a reader can take neighbours as one range
     * (reader_vm.c); these words need no order among themselves. */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && iov[j - 1].addr > iov[j].addr; j--) {
            fp_iov t = iov[j];
            iov[j] = iov[j - 1];
            iov[j - 1] = t;
        }
    return n;
}

/* Reads the interpreter at addr, or takes its words from the sample's
 * first read (pre, when it read this interpreter). */
static int read_interp(fp_session *s, uint64_t addr, uint64_t runtime, uint64_t main_tid, const interp_words *pre,
                       fpi_interp_info *ii)
{
    const fpi_layout *l = &s->layout;
    memset(ii, 0, sizeof *ii);
    ii->addr = addr;
    interp_words w;
    int rc;
    if (pre && pre->addr == addr) {
        w = *pre;
    } else {
        fp_iov iov[INTERP_IOV_MAX];
        /* 3.11's GIL is in _PyRuntime: read with the interpreter. */
        size_t n = interp_iov(l, addr, l->rt_gil_locked != FPI_OFF_NONE ? gil_base(l, runtime, 0) : 0, &w, iov);
        if ((rc = fpi_readv(s, iov, n)))
            return fpi_err_code(&s->err, rc, "cannot read interpreter state at 0x%llx", (unsigned long long)addr);
    }
    ii->next = w.next;
    ii->threads_head = w.threads_head;
    ii->threads_main = l->interp_threads_main != FPI_OFF_NONE ? w.threads_main : 0;
    ii->gilp = w.gilp;
    ii->id = (int64_t)w.id;
    if (l->interp_code_generation != FPI_OFF_NONE) {
        /* Any code object freed since the last look may have had its
         * address reused: forget every cached code object. */
        if (!s->have_generation || w.generation != s->code_generation)
            fpi_code_cache_invalidate(&s->cc);
        s->code_generation = w.generation;
        s->have_generation = true;
        ii->generation = w.generation;
    }
    /* The GIL the words read is the one to use only if it is still where
     * the interpreter says (3.12: its ceval.gil pointer). */
    uint64_t gil = gil_base(l, runtime, w.gilp);
    if (gil && gil != w.gil_at) {
        fp_iov g[2] = {{gil + (uint64_t)gil_locked_off(l), &w.gil_locked, sizeof w.gil_locked},
                       {gil + (uint64_t)gil_holder_off(l), &w.gil_holder, sizeof w.gil_holder}};
        if ((rc = fpi_readv(s, g, 2)))
            return fpi_err_code(&s->err, rc, "cannot read the GIL state of interpreter %lld", (long long)ii->id);
    }
    if (gil) {
        ii->gil_known = true;
        ii->gil_holder = w.gil_locked ? w.gil_holder : 0;
    }
    if (ii->id == 0)
        ii->main_thread_id = main_tid;
    return FP_OK;
}

/* Plans the read-ahead of the thread states interpreter `interp` had in the
 * previous sample: s->pf and s->pf_iov[first ..] (s->pf_iov grown to hold
 * `first` more reads before them); with `stacks`, also each one's newest
 * chunk and _PyCFrame where the previous sample saw them, after all the
 * thread states (finish_thread_reads keeps them where the thread states
 * still point there).  Returns how many threads (0: none, fewer than
 * `min`, or no memory); *reads is how many reads follow `first`. */
static size_t plan_thread_reads(fp_session *s, uint64_t interp, size_t first, size_t min, bool stacks,
                                size_t *reads)
{
    *reads = 0;
    s->npf = 0;
    s->spec_bytes = 0;
    size_t n = 0;
    for (size_t i = 0; i < s->nlast_ts; i++)
        if (s->last_ts[i].interp == interp)
            n++;
    if (n < min || n == 0 || n > s->opts.max_threads)
        return 0; /* nothing to gain, or nothing known */
    fpi_thread_prefetch *pf = fpi_grow(s->pf, &s->pf_cap, n, sizeof *pf, n);
    if (!pf)
        return 0;
    s->pf = pf;
    size_t tslen = s->ts_read_len;
    uint8_t *tb = fpi_grow(s->ts_bufs, &s->ts_bufs_cap, n * tslen, 1, n * tslen);
    if (!tb)
        return 0;
    s->ts_bufs = tb;
    size_t spec = 0; /* bytes of chunks to read ahead */
    for (size_t i = 0; stacks && i < s->nlast_ts; i++) {
        const fpi_thread_memo *t = &s->last_ts[i];
        uint64_t bytes = t->chunk_read;
        for (unsigned j = 0; j < t->nold; j++)
            bytes += t->old_len[j];
        if (t->interp == interp && spec + bytes <= FPI_MAX_STACK_COPY)
            spec += (size_t)bytes;
    }
    uint8_t *cb = spec ? fpi_grow(s->chunk_bufs, &s->chunk_bufs_cap, spec, 1, STACK_COPY_INITIAL) : NULL;
    if (cb)
        s->chunk_bufs = cb;
    size_t most = first + (stacks ? (3 + FPI_SPEC_OLD_CHUNKS) * n : n);
    fp_iov *iov = fpi_grow(s->pf_iov, &s->pf_iov_cap, most, sizeof *iov, most);
    if (!iov)
        return 0;
    s->pf_iov = iov;
    size_t k = 0, m = first + n;
    for (size_t i = 0; i < s->nlast_ts && k < n; i++) {
        const fpi_thread_memo *t = &s->last_ts[i];
        if (t->interp != interp)
            continue;
        pf[k] = (fpi_thread_prefetch){.ts = t->ts, .tsbuf = k * tslen};
        iov[first + k] = (fp_iov){pf[k].ts, tb + k * tslen, tslen};
        if (stacks && t->cframe && s->layout.cframe_current_frame != FPI_OFF_NONE) {
            pf[k].spec_cframe = t->cframe;
            iov[m++] = (fp_iov){t->cframe + (uint64_t)s->layout.cframe_current_frame, &pf[k].cframe_top, 8};
        }
        if (cb && t->chunk && s->spec_bytes + t->chunk_read <= spec) {
            size_t first_chunk = m;
            pf[k].spec_chunk = t->chunk;
            pf[k].spec_chunkbuf = s->spec_bytes;
            pf[k].spec_chunklen = (size_t)t->chunk_read;
            iov[m++] = (fp_iov){t->chunk, cb + s->spec_bytes, (size_t)t->chunk_read};
            s->spec_bytes += (size_t)t->chunk_read;
            /* Older chunks change only where the stack is as deep as them:
             * read whole as last copied, they save a read each. */
            for (unsigned j = 0; j < t->nold && s->spec_bytes + t->old_len[j] <= spec; j++) {
                pf[k].spec_old[j] = t->old[j];
                pf[k].spec_old_buf[j] = s->spec_bytes;
                pf[k].spec_old_len[j] = (size_t)t->old_len[j];
                pf[k].spec_nold = j + 1;
                iov[m++] = (fp_iov){t->old[j], cb + s->spec_bytes, (size_t)t->old_len[j]};
                s->spec_bytes += (size_t)t->old_len[j];
            }
            /* Read oldest first, as the read-back does (verify.c, plan). */
            for (size_t a = first_chunk, z = m; a + 1 < z; a++, z--) {
                fp_iov tmp = iov[a];
                iov[a] = iov[z - 1];
                iov[z - 1] = tmp;
            }
        }
        k++;
    }
    *reads = m - first;
    return n;
}

/* With the n planned thread states read: keeps the prefix whose `next`
 * links still match (the walk reads anything else itself) and reads, in
 * one more batched read, each one's current frame from its _PyCFrame
 * (3.11, 3.12) and the live part of its newest chunk.  Best effort: any
 * failure just leaves less (or nothing) read ahead. */
static void finish_thread_reads(fp_session *s, const fpi_interp_info *ii, size_t n)
{
    const fpi_layout *l = &s->layout;
    size_t tslen = s->ts_read_len;
    fpi_thread_prefetch *pf = s->pf;
    const uint8_t *tb = s->ts_bufs;
    if (n == 0 || pf[0].ts != ii->threads_head)
        return;
    size_t valid = 1;
    while (valid < n && fpi_load_u64(tb + (valid - 1) * tslen, l->ts_next) == pf[valid].ts)
        valid++;
    s->npf = valid;
    size_t total = s->spec_bytes, m = 0;
    bool cframes = l->ts_current_frame == FPI_OFF_NONE;
    fp_iov *iov = fpi_grow(s->pf_iov, &s->pf_iov_cap, 2 * valid, sizeof *iov, 2 * valid);
    if (!iov) {
        s->npf = 0;
        return;
    }
    s->pf_iov = iov;
    for (size_t i = 0; i < valid; i++) {
        pf[i].cframe = cframes ? fpi_load_u64(tb + i * tslen, l->ts_cframe) : 0;
        /* Read with the first read where the last sample saw it. */
        pf[i].has_cframe_top = pf[i].cframe && pf[i].cframe == pf[i].spec_cframe;
        if (pf[i].cframe && !pf[i].has_cframe_top)
            iov[m++] = (fp_iov){pf[i].cframe + (uint64_t)l->cframe_current_frame, &pf[i].cframe_top, 8};
    }
    size_t first_chunk = m;
    for (size_t i = 0; i < valid; i++) {
        uint64_t chunk = fpi_load_u64(tb + i * tslen, l->ts_datastack_chunk);
        uint64_t top = fpi_load_u64(tb + i * tslen, l->ts_datastack_top);
        pf[i].chunk = chunk;
        pf[i].top = top;
        pf[i].chunklen = 0;
        if (!fpi_live_span(chunk, top))
            continue;
        size_t len = (size_t)(top - chunk);
        if (chunk == pf[i].spec_chunk && len <= pf[i].spec_chunklen) {
            pf[i].chunkbuf = pf[i].spec_chunkbuf; /* read with the first read */
            pf[i].chunklen = len;
        } else if (total + len <= FPI_MAX_STACK_COPY) {
            pf[i].chunkbuf = total;
            pf[i].chunklen = len;
            total += len;
            m++; /* its read is planned below, once the buffer has grown */
        }
    }
    if (m == 0)
        return;
    uint8_t *cb = fpi_grow(s->chunk_bufs, &s->chunk_bufs_cap, total ? total : 1, 1, STACK_COPY_INITIAL);
    if (cb)
        s->chunk_bufs = cb;
    size_t r = first_chunk;
    for (size_t i = 0; cb && i < valid; i++)
        if (pf[i].chunklen && pf[i].chunkbuf >= s->spec_bytes)
            iov[r++] = (fp_iov){pf[i].chunk, cb + pf[i].chunkbuf, pf[i].chunklen};
    if (!cb || fpi_readv(s, iov, m) != FP_OK) {
        /* What this read was to bring is left to the walk. */
        for (size_t i = 0; i < valid; i++)
            if (pf[i].chunkbuf >= s->spec_bytes)
                pf[i].chunklen = 0;
        return;
    }
    for (size_t i = 0; i < valid; i++)
        pf[i].has_cframe_top = pf[i].cframe != 0;
}

/* Reads ahead, in one batched read, the thread states this interpreter had
 * in the previous sample and (with `stacks`) their newest chunks and
 * _PyCFrames where it saw them; a second batched read brings whatever of
 * those moved (a single thread gains nothing from a read of its own). */
static void prefetch_threads(fp_session *s, const fpi_interp_info *ii, bool stacks)
{
    size_t reads;
    size_t n = plan_thread_reads(s, ii->addr, 0, 2, stacks, &reads);
    if (n && ii->threads_head == s->pf[0].ts && fpi_readv(s, s->pf_iov, reads) == FP_OK)
        finish_thread_reads(s, ii, n);
    else
        s->npf = 0;
}

/* The sample's first read, in one batch: _PyRuntime's interpreter list
 * head and main thread id, and, speculating that the interpreter list
 * starts where it did in the last sample, that interpreter's words, the
 * thread states it had, and their newest chunks and _PyCFrames where they
 * were, and, after all of that, the last sample's read-backs
 * (readback_ahead.c): a steady-state sample of one interpreter makes no
 * other read.  Whatever the speculation got wrong is read again
 * by the walk (read_interp, finish_thread_reads check the addresses).
 * Returns the number of thread states read with it (-1: the batch failed
 * and nothing of it may be used, the runtime words included). */
static long first_read(fp_session *s, uint64_t rt_addr, uint8_t *rt, size_t span, interp_words *spec)
{
    const fpi_layout *l = &s->layout;
    spec->addr = 0;
    if (!s->last_interp)
        return -1;
    fp_iov fixed[1 + INTERP_IOV_MAX];
    size_t k = 0;
    fixed[k++] = (fp_iov){rt_addr, rt, span};
    k += interp_iov(l, s->last_interp, gil_base(l, s->info.runtime_addr, s->last_gilp), spec, fixed + k);
    size_t reads;
    size_t n = plan_thread_reads(s, s->last_interp, k, 1, true, &reads);
    fp_iov *iov = n ? s->pf_iov : fixed;
    size_t ahead = 0, tlbc = 0;
    if (n) {
        memcpy(iov, fixed, k * sizeof *iov); /* plan_thread_reads left k slots before the thread states */
        /* The last sample's read-backs, after everything the walks copy;
         * then where its frames' thread-local bytecode was. */
        ahead = fpi_rb_ahead_append(&s->rb_ahead, &s->pf_iov, &s->pf_iov_cap, k + reads);
        if (l->co_tlbc != FPI_OFF_NONE)
            tlbc = fpi_tlbc_ahead_append(&s->tlbc_ahead, s->sample_no, l->co_tlbc, &s->pf_iov, &s->pf_iov_cap,
                                         k + reads + ahead);
        iov = s->pf_iov;
    }
    bool ok = fpi_readv(s, iov, k + reads + ahead + tlbc) == FP_OK;
    fpi_rb_ahead_after_first_read(&s->rb_ahead, ahead, ok, s->reads.calls);
    if (ok && tlbc)
        fpi_tlbc_ahead_read(&s->tlbc_ahead, s->sample_no, s->reads.calls);
    if (!ok) {
        spec->addr = 0;
        s->npf = 0;
        return -1;
    }
    return (long)n;
}

/* Remembers which thread states the interpreter had, for the next sample. */
int fpi_remember_thread(fp_session *s, uint64_t interp, uint64_t ts)
{
    /* Each link was proven when its thread was, but not the list as a
     * whole: a thread that exits and whose state a new thread reuses at
     * the list's head can lead the walk back to threads it has listed. */
    for (size_t i = s->ncur_ts; i-- > 0 && s->cur_ts[i].interp == interp;)
        if (s->cur_ts[i].ts == ts)
            return fpi_err(&s->err, FP_E_INCOMPLETE,
                           "torn: the thread list of interpreter 0x%llx changed while it was walked (thread state "
                           "0x%llx reached twice)",
                           (unsigned long long)interp, (unsigned long long)ts);
    fpi_thread_memo *nl = fpi_grow(s->cur_ts, &s->cur_ts_cap, s->ncur_ts + 1, sizeof *nl, MEMO_INITIAL);
    if (!nl)
        return fpi_err(&s->err, FP_E_NOMEM, "out of memory: remembering %zu thread states", s->ncur_ts + 1);
    s->cur_ts = nl;
    s->cur_ts[s->ncur_ts++] = (fpi_thread_memo){.interp = interp, .ts = ts};
    return FP_OK;
}

/* After a thread's walk failed: its state's next link (as the failed walk
 * read it) and the link that led to the state, read back in that order
 * (the read-back order of verify.c), both unchanged.  A state reached
 * through a torn link, or freed meanwhile, fails it. */
static bool list_link_holds(fp_session *s, uint64_t link, uint64_t ts, uint64_t next)
{
    uint64_t now_next, now_ts;
    if (fpi_read(s, ts + (uint64_t)s->layout.ts_next, &now_next, sizeof now_next) ||
        fpi_read(s, link, &now_ts, sizeof now_ts))
        return false;
    return now_next == next && now_ts == ts;
}

/* Without threads.main (3.11, 3.12) the main thread is known by its ids,
 * which a thread state created by it for a thread not started yet
 * carries too (3.11: native id included).  New states go to the head of
 * the list, so the main thread's is the last of those: only it stays
 * main. */
int fpi_check_main_listed(fp_session *s, const fp_sample *sm, size_t first, size_t count, const fpi_interp_info *ii)
{
    if (ii->id != 0 || (!ii->threads_main && !ii->main_thread_id))
        return FP_OK;
    for (size_t i = 0; i < count; i++)
        if (sm->threads[first + i].main)
            return FP_OK;
    return fpi_err(&s->err, FP_E_INCOMPLETE,
                   "incomplete sample: the main interpreter's thread list (%zu threads) lacks its main thread: it was "
                   "being changed",
                   count);
}

/* Leaves the main flag on one thread of the interpreter at most.  With
 * threads.main only that state carries it.  By the ids (3.11, 3.12, and
 * finalisation) it is the last state with the main thread's ids: new
 * states go to the list's head, the main thread's own is the oldest.  A
 * state made for a thread that has not started yet carries its creator's
 * ids (3.11: the native id too) and no frames; in a list the walk did not
 * follow to its end (`cut`), the main thread's own state may lie beyond,
 * and a frameless state with its ids may be either: it is failed as torn,
 * neither taken for the main thread (ci/live thread_churn, 3.11: a new
 * thread's state returned as a frameless main thread, the list cut after a
 * thread that exited under the walk, 4 of 20 million samples) nor returned
 * as another thread (fuzz_live_consistency, 3.11: the main thread itself,
 * frameless, returned as a good thread that is not the main one). */
static void one_main_thread(fp_sample *sm, const fp_interp *fi, bool by_ids, bool cut)
{
    size_t last = SIZE_MAX;
    for (size_t i = 0; i < fi->thread_count; i++)
        if (sm->threads[fi->first_thread + i].main)
            last = i;
    for (size_t i = 0; last != SIZE_MAX && i < last; i++)
        sm->threads[fi->first_thread + i].main = false;
    fp_thread *t = last != SIZE_MAX ? &sm->threads[fi->first_thread + last] : NULL;
    if (t && by_ids && cut && t->frame_count == 0) {
        t->main = false;
        if (!t->error)
            t->error = FP_E_INCOMPLETE;
    }
}

int fpi_walk_all(fp_session *s, fp_sample *sm)
{
    const fpi_layout *l = &s->layout;
    fpi_sample_reset(sm);
    s->sample_no++;
    s->confirm_epoch++;
    /* This sample's thread list becomes the guess for the next one. */
    fpi_thread_memo *tl = s->last_ts;
    size_t tcap = s->last_ts_cap;
    s->last_ts = s->cur_ts;
    s->last_ts_cap = s->cur_ts_cap;
    s->nlast_ts = s->ncur_ts;
    s->cur_ts = tl;
    s->cur_ts_cap = tcap;
    s->ncur_ts = 0;
    fpi_code_cache_begin_sample(&s->cc);
    fpi_rb_ahead_begin_sample(&s->rb_ahead);
    s->resolve_pos = 0;
    s->batch_torn_ts = 0;
    uint64_t runtime = s->info.runtime_addr;
    /* interpreters.head and main_thread sit a few words apart: one read. */
    uint8_t rt[RUNTIME_SPAN_MAX];
    int32_t lo = l->rt_interpreters_head;
    int32_t mt = l->rt_main_thread;
    size_t span = mt > lo && mt - lo + 8 <= RUNTIME_SPAN_MAX ? (size_t)(mt - lo) + 8 : 8;
    interp_words spec;
    long spec_threads = first_read(s, runtime + (uint64_t)lo, rt, span, &spec);
    /* A first read that failed most likely met a chunk since freed: no
     * more stacks read ahead in this sample. */
    bool stacks_ahead = !(s->last_interp && spec_threads < 0);
    int rc = spec_threads < 0 ? fpi_read(s, runtime + (uint64_t)lo, rt, span) : FP_OK;
    if (rc)
        return fpi_err_code(&s->err, rc, "cannot read the interpreter list at 0x%llx", (unsigned long long)runtime);
    uint64_t interp = fpi_load_u64(rt, 0);
    s->last_interp = interp;
    uint64_t main_tid = span > 8 ? fpi_load_u64(rt, mt - lo) : 0;
    int result = FP_OK;
    fpi_errbuf first_err = {{0}};
    uint32_t ninterp = 0;
    while (interp) {
        if (++ninterp > s->opts.max_interpreters)
            return fpi_err(&s->err, FP_E_LIMIT, "interpreter list: more than %u interpreters (or a cycle)", s->opts.max_interpreters);
        fpi_interp_info ii;
        bool first = ninterp == 1;
        if ((rc = read_interp(s, interp, runtime, main_tid, first ? &spec : NULL, &ii)))
            return rc;
        if (first)
            s->last_gilp = ii.gilp;
        fp_interp *fi = fpi_sample_push_interp(sm);
        if (!fi)
            return fpi_err(&s->err, FP_E_NOMEM, "out of memory: adding interpreter %zu to the sample", sm->ninterps + 1);
        fi->id = ii.id;
        fi->first_thread = sm->nthreads;
        size_t interp_index = sm->ninterps - 1;
        if (first && spec.addr == interp && spec_threads >= 0)
            finish_thread_reads(s, &ii, (size_t)spec_threads);
        else
            prefetch_threads(s, &ii, stacks_ahead);
        /* Several threads all read ahead: one read-back for all of them. */
        if (s->npf > 1) {
            rc = fpi_walk_interp_batched(s, sm, &ii);
            sm->interps[interp_index].thread_count = sm->nthreads - sm->interps[interp_index].first_thread;
            if (rc == FP_OK) {
                one_main_thread(sm, &sm->interps[interp_index], !ii.threads_main, false);
                interp = ii.next;
                continue;
            }
            if (fpi_walk_fatal(rc))
                return rc;
        }
        uint64_t ts = ii.threads_head, link = interp + (uint64_t)l->interp_threads_head;
        uint32_t nthreads = 0;
        unsigned restarts = 0;
        bool cut = false; /* the list was not followed to its end */
        size_t threads0 = sm->nthreads, frames0 = sm->nframes, memo0 = s->ncur_ts;
        int result0 = result; /* a restart walks this interpreter's failed threads again too */
        fpi_errbuf err0 = first_err;
        while (ts) {
            if (++nthreads > s->opts.max_threads)
                return fpi_err(&s->err, FP_E_LIMIT, "thread list: more than %u threads in interpreter %lld (or a cycle)",
                              s->opts.max_threads, (long long)ii.id);
            uint64_t next = 0;
            size_t before = sm->nthreads;
            size_t k = nthreads - 1;
            const fpi_thread_prefetch *pre = k < s->npf && s->pf[k].ts == ts ? &s->pf[k] : NULL;
            if ((rc = fpi_remember_thread(s, interp, ts)))
                return rc;
            bool link_left;
            uint64_t link_now;
            rc = walk_thread(s, sm, &ii, link, ts, pre, &next, &link_left, &link_now);
            /* Keep the interpreter's thread range exact on every exit path. */
            sm->interps[interp_index].thread_count = sm->nthreads - sm->interps[interp_index].first_thread;
            if (rc) {
                if (fpi_walk_fatal(rc))
                    return rc;
                if (sm->nthreads == before) { /* the thread list itself is broken */
                    fpi_errbuf why = s->err;
                    return fpi_err(&s->err, FP_E_INCOMPLETE, "incomplete sample: %s", why.msg);
                }
                /* The link that led to the thread leads elsewhere now: the
                 * thread left the list while it was read (it exited), or
                 * the thread state holding the link did, or a thread
                 * started in front of it.  Which one, the link cannot say
                 * (a state freed and set up again for a new thread holds
                 * an empty link: followed, it cut the list short and lost
                 * the main thread, ci/live thread_churn on debug builds).
                 * The interpreter's threads are walked again from its list
                 * head as it is now, a bounded number of times, rather than
                 * rejecting the sample for a thread that exited under the
                 * walk (which thread_churn did for every exit).  The link
                 * is read here unless walk_thread's last retry found it
                 * moved already; when the link is the list head, what it
                 * was read naming is the head to start from. */
                uint64_t head_at = interp + (uint64_t)l->interp_threads_head, head = 0;
                if (rc != FP_E_LIMIT && restarts < FPI_THREAD_LIST_RESTARTS &&
                    (link_left || link_moved_from(s, link, ts, &link_now)) &&
                    (link == head_at ? (head = link_now, true)
                                     : fpi_read(s, head_at, &head, sizeof head) == FP_OK)) {
                    restarts++;
                    sm->nthreads = threads0;
                    sm->nframes = frames0;
                    sm->interps[interp_index].thread_count = 0;
                    s->ncur_ts = memo0;
                    result = result0;
                    first_err = err0;
                    nthreads = 0;
                    link = head_at;
                    ts = head;
                    continue;
                }
                if (result == FP_OK) {
                    result = rc == FP_E_LIMIT ? FP_E_LIMIT : FP_E_INCOMPLETE;
                    first_err = s->err;
                }
                /* Its next link came from a copy that failed its checks
                 * (a torn list head can even point into the middle of a
                 * thread state): the list is followed on only if the
                 * link and that next link still hold. */
                if (!list_link_holds(s, link, ts, next)) {
                    cut = true;
                    break;
                }
            }
            link = ts + (uint64_t)l->ts_next;
            ts = next;
        }
        one_main_thread(sm, &sm->interps[interp_index], !ii.threads_main, cut);
        if (result == FP_OK &&
            (result = fpi_check_main_listed(s, sm, sm->interps[interp_index].first_thread,
                                            sm->interps[interp_index].thread_count, &ii)) != FP_OK)
            first_err = s->err;
        interp = ii.next;
    }
    if (result != FP_OK)
        s->err = first_err;
    return result;
}
