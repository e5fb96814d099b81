/* emit.c — the last stage of a walk: each recorded frame's code object,
 * instruction and position resolved (or taken from the frame cache when
 * every input is the same) and pushed to the sample, under the rules that
 * refuse a chain whose frames cannot have been one stack at one instant
 * (a top frame that has returned, a caller not suspended in the call or
 * resumption that linked its callee).  It runs after the walk's read-back
 * (verify.c) and says what read-back the resolved frames still owe. */
#include "call_sites.h"
#include "emit.h"
#include "read.h"

#define CODEUNIT_SIZE 2

/* Start of the bytecode the frame executes: the thread-local copy on
 * free-threaded 3.14+ when tlbc_index selects one, else co_code_adaptive;
 * from this sample's first read when it read the copy ahead. */
static int bytecode_start(fp_session *s, uint64_t code, int32_t idx, uint64_t *out)
{
    const fpi_layout *l = &s->layout;
    if (idx == 0 || l->co_tlbc == FPI_OFF_NONE) {
        /* the common case, kept inline: the sampler resolves every uncached frame here */
        *out = code + (uint64_t)l->co_code_adaptive;
        return FP_OK;
    }
    if (idx > 0 && idx < FPI_MAX_TLBC_ENTRIES &&
        fpi_tlbc_ahead_take(&s->tlbc_ahead, s->sample_no, s->reads.calls, code, idx, out))
        return FP_OK;
    uint64_t arr;
    int rc = fpi_code_bytecode_start(s, code, idx, out, &arr);
    if (rc == FP_OK && arr)
        fpi_tlbc_ahead_note(&s->tlbc_ahead, s->sample_no, code, idx, arr);
    return rc;
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
 * next call (live scenario many_threads, 3.11: x2 at its call of leaf_x under
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
 * of every profile.  A thread stopped (`stopped`: alone, or with every
 * other in a blocking sample) is one instant
 * with no caller moving on: a top frame stopped neither running nor at a
 * call is where the thread stands (in its return, or in a C profile or
 * trace function called at its start or its return), and refusing it
 * refused every stop of that thread alike, leaving out the returns of
 * short functions. */
static int top_must_run(fp_session *s, const fpi_pending_frame *pf, const fpi_code_entry *ce, bool visible,
                        bool at_call, bool waits, bool below, bool stopped)
{
    if (!pf->top || pf->stacktop == FPI_STACKTOP_RUNNING || !visible || s->layout.fr_stacktop == FPI_OFF_NONE ||
        at_call || (pf->generator && waits && below) || stopped)
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

/* 3.13's CALL_BOUND_METHOD_GENERAL leaves at the caller's depth the bound
 * method object it called (its function and self taken into C locals,
 * self also into the slot above: probe_callable_slots.py), and the
 * caller's code as the code cache copied it may still hold the CALL that
 * was specialised into it since (its copy is not read again while the code
 * object is unchanged).  Such a slot names the callee when the object's
 * im_func is the callee's function and its im_self is the slot above.  The
 * call released the object, which may be freed and its words reused: a
 * match only stands in for the comparison, and the link is read back once
 * more like one not compared.  False where the layout has no such form
 * (meth_im_func), or when the object cannot be read. */
static bool bound_method_of(fp_session *s, const uint64_t slots[2], uint64_t funcobj)
{
    if (s->layout.meth_im_func == FPI_OFF_NONE || slots[0] == 0)
        return false;
    uint64_t m[2];
    if (fpi_read(s, slots[0] + (uint64_t)s->layout.meth_im_func, m, sizeof m) != FP_OK)
        return false;
    return m[0] == funcobj && m[1] == slots[1];
}

/* A caller suspended in a CALL or CALL_KW (3.12+: or a CALL_FUNCTION_EX
 * that pushed the frame itself) keeps the function it called at its saved
 * stack depth (3.11, 3.12: or NULL there and the function in the slot
 * above; 3.14+: the depth its stack pointer saved, and the very stack
 * reference the callee's f_funcobj took over) until that call returns.  Under a directly
 * linked frame of another function it had moved on from the call that
 * pushed that frame, a slot of another chain at the same depth (live
 * scenario thread_churn, 3.13: churn_worker at its call of d1 under c1 ->
 * c2 -> leaf_c, read so by the copy and both read-backs).  Not checked where it cannot be told: the slots not in the
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
    if (pf->slots[0] == up->funcobj || (pf->slots[0] == 0 && pf->slots[1] == up->funcobj)) {
        *compared = true;
        return FP_OK;
    }
    if (bound_method_of(s, pf->slots, up->funcobj))
        return FP_OK; /* not compared: read back once more */
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
int fpi_emit_frames(fp_session *s, fp_sample *sm, fp_thread *th, const fpi_pending_frame *pending, size_t n,
                    bool stopped)
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
         * from an earlier chain at the same depth (live scenario thread_churn,
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
        bool cacheable = s->opts.cache_frames && s->opts.cache_code && pf->tlbc_index == 0 && !pf->popping;
        bool compared;
        fpi_frame_key key = {pf->addr, pf->code, pf->instr, ce->serial, pf->generator, pf->called_directly};
        size_t at = fpi_frame_cache_next_position(&s->fc);
        const fpi_resolved_frame *hit = cacheable ? fpi_frame_cache_find(&s->fc, at, &key) : NULL;
        if (hit) {
            if ((rc = top_must_run(s, pf, ce, hit->visible, hit->at_call, hit->waits, i + 1 < n, stopped)) ||
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
        /* A thread-owned frame at a wait instruction is at RETURN_GENERATOR
         * (its code yields only once it runs as the generator's frame). */
        if (pf->popping && !(stopped && fpi_call_site_waits(s->call_sites, ce, unit)))
            return fpi_err(&s->err, FP_E_INCOMPLETE,
                           "torn: frame 0x%llx (%s), the top, lies at its data stack's top, where only a frame that "
                           "RETURN_GENERATOR pops can be, at another instruction",
                           (unsigned long long)pf->addr, ce->qualname);
        if ((rc = top_must_run(s, pf, ce, visible, at_call, waits, i + 1 < n, stopped)))
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
