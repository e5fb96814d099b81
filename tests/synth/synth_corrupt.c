/* synth_corrupt.c — the corruptions a synthetic image is put through:
 * each breaks one thread in one way, which its walk must refuse with a
 * precise error (synth_fixture.h). */
#include "synth_fixture.h"

/* Frame f's bytecode: where it starts, the unit f is at and the unit
 * count; every unit is zeroed (no instruction that pushes frames) for the
 * caller to place its own. */
void wipe_code(built *b, uint64_t f, uint64_t *start, uint64_t *unit, uint64_t *units)
{
    const fpi_layout *l = synth_layout(b->img);
    uint64_t ip, code;
    memcpy(&ip, synth_bytes(b->img, f + (uint64_t)l->fr_instr_ptr, 8), 8);
    memcpy(&code, synth_bytes(b->img, f + (uint64_t)l->fr_executable, 8), 8);
    code &= ~l->executable_tag_mask;
    memcpy(units, synth_bytes(b->img, code + (uint64_t)l->ob_size, 8), 8);
    *start = code + (uint64_t)l->co_code_adaptive;
    *unit = (ip - *start) / 2;
    memset(synth_bytes(b->img, *start, (size_t)*units * 2), 0, (size_t)*units * 2);
}

/* The call-site opcode set of the image's version (NULL: none), and that
 * version's minor number. */
const fpi_call_site_set *image_call_sites(built *b, unsigned *minor)
{
    fp_python_info py;
    if (fp_session_get_python(b->s, &py) != FP_OK)
        return NULL;
    *minor = (py.hexversion >> 16) & 0xffu;
    return fpi_call_sites_for(3, *minor);
}

bool op_in(const uint64_t words[4], int v)
{
    return (words[v / 64] >> (v % 64)) & 1u;
}

/* The first frame-pushing opcode that resumes a generator (`resumes`:
 * SEND, FOR_ITER) or that pushes a function's frame (a call), or -1. */
int pushing_opcode(const fpi_call_site_set *set, bool resumes)
{
    for (int v = 0; set && v < 256; v++)
        if (op_in(set->ops, v) && !op_in(set->gen_ops, v) && op_in(set->gen_callee_ops, v) == resumes)
            return v;
    return -1;
}

/* Frame f's code holds no frame-pushing instruction but `op`, which f is
 * suspended in: at f's unit (3.13+), or ending at it (3.11, 3.12, whose
 * callers name an instruction's last inline cache unit), the rest of the
 * code one-unit instructions as the instruction map decodes it.  False
 * when f's unit leaves no room for it. */
bool suspend_in(built *b, uint64_t f, const fpi_call_site_set *set, unsigned minor, int op)
{
    uint64_t start, unit, units;
    wipe_code(b, f, &start, &unit, &units);
    uint64_t back = minor < SUSPENDED_AT_INSTRUCTION_MINOR ? set->caches[op] : 0;
    if (op < 0 || unit >= units || unit < back)
        return false;
    *synth_bytes(b->img, start + 2 * (unit - back), 1) = (uint8_t)op;
    return true;
}

/* Damages thread 1 (the second thread); thread 0 must stay exact. */
bool corrupt(built *b, int what)
{
    const fpi_layout *l = synth_layout(b->img);
    uint64_t f0 = synth_frame_addr(b->img, 1, 0), f2 = synth_frame_addr(b->img, 1, 2);
    uint64_t f3 = synth_frame_addr(b->img, 1, 3);
    uint8_t *p;
    switch (what) {
    case C_CYCLE:
        p = synth_bytes(b->img, f2 + (uint64_t)l->fr_previous, 8);
        memcpy(p, &f0, 8);
        return true;
    case C_NOT_CODE: {
        /* point the executable at the frame's own filename str */
        uint8_t *ex = synth_bytes(b->img, f0 + (uint64_t)l->fr_executable, 8);
        uint64_t code;
        memcpy(&code, ex, 8);
        code &= ~l->executable_tag_mask;
        uint64_t fname;
        memcpy(&fname, synth_bytes(b->img, code + (uint64_t)l->co_filename, 8), 8);
        memcpy(ex, &fname, 8);
        return true;
    }
    case C_IP_OUTSIDE:
        p = synth_bytes(b->img, f0 + (uint64_t)l->fr_instr_ptr, 8);
        {
            uint64_t ip;
            memcpy(&ip, p, 8);
            ip += 4096;
            memcpy(p, &ip, 8);
        }
        return true;
    case C_OWNER:
        *synth_bytes(b->img, f2 + (uint64_t)l->fr_owner, 1) = 7;
        return true;
    case C_TLBC_RANGE:
        if (l->fr_tlbc_index == FPI_OFF_NONE)
            return false;
        {
            uint32_t idx = SYNTH_MAX_TLBC + 5;
            memcpy(synth_bytes(b->img, f0 + (uint64_t)l->fr_tlbc_index, 4), &idx, 4);
        }
        return true;
    case C_NO_BASE:
        if (l->ts_base_frame == FPI_OFF_NONE)
            return false;
        memset(synth_bytes(b->img, f3 + (uint64_t)l->fr_previous, 8), 0, 8);
        return true;
    case C_STR_STATE: {
        uint8_t *ex = synth_bytes(b->img, f0 + (uint64_t)l->fr_executable, 8);
        uint64_t code, name;
        memcpy(&code, ex, 8);
        code &= ~l->executable_tag_mask;
        memcpy(&name, synth_bytes(b->img, code + (uint64_t)l->co_qualname, 8), 8);
        uint32_t bad = 3u << l->uni_kind_shift | 1u << l->uni_compact_bit; /* kind 3 does not exist */
        memcpy(synth_bytes(b->img, name + (uint64_t)l->uni_state, 4), &bad, 4);
        return true;
    }
    case C_SETUP_CALLER: {
        /* Frame 2 (Outer.method) is a direct caller of frame 1 (the shim):
         * move it before its first instruction, as a frame being set up in
         * a slot that held the caller a moment ago. */
        uint8_t *ip = synth_bytes(b->img, f2 + (uint64_t)l->fr_instr_ptr, 8);
        uint64_t v;
        memcpy(&v, ip, 8);
        v -= (uint64_t)(loc_start(&CODE_A, 4) + 2 + 1) * 2;
        memcpy(ip, &v, 8);
        return true;
    }
    case C_CFRAME_EMPTY: {
        /* 3.11/3.12: the thread's current _PyCFrame (not its own root one)
         * says no frame, as in the instant an evaluation is entered. */
        if (l->ts_cframe == FPI_OFF_NONE)
            return false;
        uint64_t ts = synth_thread_state_addr(b->img, 1), cframe, zero = 0;
        memcpy(&cframe, synth_bytes(b->img, ts + (uint64_t)l->ts_cframe, 8), 8);
        if (cframe == ts + (uint64_t)l->ts_root_cframe)
            fail_msg("the synthetic thread runs on its root _PyCFrame");
        memcpy(synth_bytes(b->img, cframe + (uint64_t)l->cframe_current_frame, 8), &zero, 8);
        return true;
    }
    case C_RETURNED_CALLER: {
        /* Frame 1 is a direct callee of frame 2 in the standard scene:
         * give frame 2's code no instruction that pushes frames, as a
         * frame that has returned (or a dead slot) would look. */
        uint64_t start, unit, units;
        wipe_code(b, f2, &start, &unit, &units);
        return true;
    }
    case C_CACHE_LOOKALIKE_CALLER: {
        /* 3.13+ callers point at the instruction itself: frame 2's code
         * holds no frame-pushing instruction, but the unit its cache count
         * before frame 2's own holds a byte equal to one (as cache data
         * may), which a scan back from the unit would take for the call. */
        fp_python_info py;
        if (fp_session_get_python(b->s, &py) != FP_OK)
            return false;
        const fpi_call_site_set *set = fpi_call_sites_for(3, (py.hexversion >> 16) & 0xffu);
        if (!set || ((py.hexversion >> 16) & 0xffu) < 13)
            return false;
        int op = -1;
        for (int v = 0; v < 256 && op < 0; v++)
            if (((set->ops[v / 64] >> (v % 64)) & 1u) && set->caches[v] > 0)
                op = v;
        uint64_t start, unit, units;
        wipe_code(b, f2, &start, &unit, &units);
        if (op < 0 || unit < set->caches[op] || unit >= units)
            return false;
        *synth_bytes(b->img, start + 2 * (unit - set->caches[op]), 1) = (uint8_t)op;
        return true;
    }
    case C_ARITHMETIC_CALLER: {
        /* A caller at `x += 1` (BINARY_OP) under a directly linked callee:
         * a frame that returned from the call and went on to its next
         * statement, above which a later call of the same chain reused
         * the slots (seen live on 3.12).  Before 3.14 no BINARY_OP pushes
         * a Python frame, so the set of frame-pushing opcodes must leave
         * it out: frame 2's code holds BINARY_OP at its own unit and, on
         * 3.11/3.12, its cache count before it. */
        fp_python_info py;
        if (fp_session_get_python(b->s, &py) != FP_OK)
            return false;
        unsigned minor = (py.hexversion >> 16) & 0xffu;
        if (minor >= FIRST_MINOR_GETITEM_IN_BINARY_OP)
            return false;
        uint8_t op = (uint8_t)(minor >= SUSPENDED_AT_INSTRUCTION_MINOR ? BINARY_OP_3_13 : BINARY_OP_3_11);
        uint64_t start, unit, units;
        wipe_code(b, f2, &start, &unit, &units);
        if (unit < BINARY_OP_CACHES || unit >= units)
            return false;
        *synth_bytes(b->img, start + 2 * unit, 1) = op;
        if (minor < SUSPENDED_AT_INSTRUCTION_MINOR)
            *synth_bytes(b->img, start + 2 * (unit - BINARY_OP_CACHES), 1) = op;
        return true;
    }
    case C_SEND_CALLER_3_11: {
        /* A 3.11 coroutine at the SEND of an `await`, with the frame of the
         * function it called on the line before still in the slot above
         * it, linked to it and not an entry frame: read live, the
         * coroutine's frame was read after it had moved on (ci/live
         * generator_pingpong, coro_b at line 58 under work_b). */
        fp_python_info py;
        if (fp_session_get_python(b->s, &py) != FP_OK || ((py.hexversion >> 16) & 0xffu) >= SEND_DIRECT_FIRST_MINOR)
            return false;
        uint64_t start, unit, units;
        wipe_code(b, f2, &start, &unit, &units);
        if (unit >= units)
            return false;
        *synth_bytes(b->img, start + 2 * unit, 1) = SEND_3_11;
        return true;
    }
    case C_RESUME_CALLER: {
        /* 3.12+: a generator waits at YIELD_VALUE or RESUME under the one
         * it delegates to (gen.throw()); a function's frame there has just
         * been set up and has called nothing.  Frame 2, a function's, at
         * such an instruction under its directly linked callee (ci/live
         * thread_churn, 3.13: d2 at its first RESUME under a leaf_c of the
         * chain before, still in the slot above). */
        fp_python_info py;
        if (fp_session_get_python(b->s, &py) != FP_OK)
            return false;
        const fpi_call_site_set *set = fpi_call_sites_for(3, (py.hexversion >> 16) & 0xffu);
        int op = -1;
        for (int v = 0; set && v < 256 && op < 0; v++)
            if (((set->gen_ops[v / 64] >> (v % 64)) & 1u) && set->caches[v] == 0)
                op = v;
        uint64_t start, unit, units;
        wipe_code(b, f2, &start, &unit, &units);
        if (op < 0 || unit >= units)
            return false;
        *synth_bytes(b->img, start + 2 * unit, 1) = (uint8_t)op;
        return true;
    }
    case C_RESUMING_CALLER: {
        /* 3.12+: SEND and FOR_ITER push a frame only to resume a generator
         * or coroutine.  Frame 2, a function's, at one of them under its
         * directly linked callee, a function's frame (ci/live
         * generator_pingpong, 3.13t: coro_b at the SEND of its `await`
         * under the work_b it called on the line before): at the
         * instruction itself (3.13+), or at its inline cache unit (3.12,
         * whose callers point there), the rest of the code being one-unit
         * instructions (CACHE) as the instruction map decodes it. */
        fp_python_info py;
        if (fp_session_get_python(b->s, &py) != FP_OK)
            return false;
        unsigned minor = (py.hexversion >> 16) & 0xffu;
        const fpi_call_site_set *set = fpi_call_sites_for(3, minor);
        bool at_cache = minor < SUSPENDED_AT_INSTRUCTION_MINOR;
        if (!set || minor < SEND_DIRECT_FIRST_MINOR)
            return false;
        uint64_t start, unit, units;
        wipe_code(b, f2, &start, &unit, &units);
        int op = -1;
        for (int v = 0; v < 256 && op < 0; v++)
            if (((set->gen_callee_ops[v / 64] >> (v % 64)) & 1u) && (!at_cache || set->caches[v] > 0))
                op = v;
        uint64_t back = at_cache && op >= 0 ? set->caches[op] : 0;
        if (op < 0 || unit >= units || unit < back)
            return false;
        *synth_bytes(b->img, start + 2 * (unit - back), 1) = (uint8_t)op;
        return true;
    }
    case C_CALLER_UNDER_GENERATOR: {
        /* Frame 2 waits in a call under frame 1 made a generator's frame
         * (not waiting in a delegation): a caller that resumed the
         * generator and went on to its next call, read with the generator
         * still linked (3.11: no instruction links a generator's frame
         * directly at all). */
        unsigned minor;
        const fpi_call_site_set *set = image_call_sites(b, &minor);
        if (!set || !suspend_in(b, f2, set, minor, pushing_opcode(set, false)))
            return false;
        *synth_bytes(b->img, synth_frame_addr(b->img, 1, 1) + (uint64_t)l->fr_owner, 1) = (uint8_t)l->owner_generator;
        return true;
    }
    case C_RUNNING_CALLER: {
        /* 3.11-3.13: frame 2 runs (stacktop -1) with frame 1 linked above
         * it: frame 1 is a slot of an earlier chain that frame 2 has not
         * pushed into yet (ci/live thread_churn, 3.11). */
        if (l->fr_stacktop == FPI_OFF_NONE)
            return false;
        int32_t running = -1;
        memcpy(synth_bytes(b->img, f2 + (uint64_t)l->fr_stacktop, 4), &running, 4);
        return true;
    }
    case C_CLEARED_CALLER_3_13:
    case C_CLEARED_TOP_3_13: {
        /* 3.13 clears a returned frame's stack depth to 0 and leaves the
         * rest of it in its slot until the next call reuses it: a caller
         * at the call that will reuse the slot above it, read with the
         * slot's old frame, gave impossible stacks live (ci/live
         * many_threads: pad at its call of y1 under x1 -> x2 -> leaf_x;
         * y2 at its call of leaf_y under leaf_x).  Either frame cleared. */
        if (l->co_nlocalsplus == FPI_OFF_NONE)
            return false;
        uint32_t zero = 0;
        memcpy(synth_bytes(b->img, (what == C_CLEARED_TOP_3_13 ? f0 : f2) + (uint64_t)l->fr_stacktop, 4), &zero, 4);
        return true;
    }
    case C_STOPPED_TOP: {
        /* 3.11-3.13: the top frame has returned and its caller, at its next
         * call, is about to reuse the slot: its stack depth is its empty
         * value stack's, not the -1 of a running frame, and it is at no
         * call (ci/live many_threads, 3.11: x2 at its call of leaf_x under
         * leaf_y). */
        if (l->fr_stacktop == FPI_OFF_NONE)
            return false;
        uint32_t depth = 2;
        uint64_t start, unit, units;
        wipe_code(b, f0, &start, &unit, &units); /* at no call: a top stopped at one is calling */
        memcpy(synth_bytes(b->img, f0 + (uint64_t)l->fr_stacktop, 4), &depth, 4);
        return true;
    }
    case C_WRAPPED_CHUNK: {
        uint64_t t1 = synth_thread_state_addr(b->img, 1), chunk = WRAP_CHUNK, top = WRAP_TOP;
        memcpy(synth_bytes(b->img, t1 + (uint64_t)l->ts_datastack_chunk, 8), &chunk, 8);
        memcpy(synth_bytes(b->img, t1 + (uint64_t)l->ts_datastack_top, 8), &top, 8);
        return true;
    }
    default:
        return false;
    }
}
