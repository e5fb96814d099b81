/* call_sites.c — the call-site check.
 *
 * A caller whose callee is a Python frame linked directly above it (no
 * entry or shim frame between) pushed that frame itself, so its current
 * instruction is one that pushes frames: a CALL, SEND or FOR_ITER (and the
 * few others the table lists), in any specialised or instrumented form; or
 * a generator's YIELD_VALUE / RESUME, where gen.throw() links a delegating
 * generator under the one it delegates to — a generator's only: any other
 * frame at RESUME has just been set up and has called nothing (live
 * scenario thread_churn, 3.13: d2 at its first RESUME under a leaf_c of the chain
 * before, still in the slot above).
 * SEND and FOR_ITER push a frame only to resume a generator or coroutine:
 * a caller at one of them (3.12+) under a directly linked frame that is no
 * generator's had moved on from the call that pushed it (live
 * scenario generator_pingpong, 3.13t: coro_b at the SEND of its `await` under the
 * work_b it called on the line before, the three reads of one sample each
 * meeting the coroutine between the two).  Conversely, a generator's or
 * coroutine's frame directly above a caller was linked there by SEND or
 * FOR_ITER, by the caller's own YIELD_VALUE or RESUME when it is a
 * generator delegating to it, or by gen.throw() under a generator waiting
 * in a `yield from` or `await` (fpi_call_site_resumer,
 * fpi_call_site_delegating; the rule is walk.c's).  On
 * 3.12, whose callers may name an inline cache unit (whose data byte can
 * equal SEND while the instruction is a CALL), that is told only through
 * the code object's instruction map: its bytecode decoded from the start,
 * each instruction followed by its opcode's cache count (the families'
 * lengths do not change when the interpreter specialises or instruments
 * them; INSTRUMENTED_LINE and INSTRUMENTED_INSTRUCTION hide theirs, and a
 * code object holding one is not checked).
 * A frame that has returned, or one left over in a slot that a newer call
 * chain reused, is at another instruction (typically RETURN_VALUE, or the
 * caller's next statement): a walk that meets one has mixed two instants
 * and must not be returned as a stack.  The caller's instruction pointer
 * names the instruction (3.13+), or the instruction or its last inline
 * cache unit (3.11, 3.12); 3.13+ accept the instruction only, as the cache
 * units hold data that a scan back from any unit could take for an opcode.
 * CALL and CALL_KW, and CALL_FUNCTION_EX where it pushes the frame itself
 * (3.12+), leave the function they call at the caller's saved stack depth
 * (3.11, 3.12: NULL there when it was no method call, and the function in
 * the slot above; 3.14+: where the caller's stack pointer points), where
 * it stays until the call returns: a caller in one of them under a frame
 * of another function had moved on from the call that pushed that frame
 * (walk.c).
 * The opcode sets come from each version's own opcode tables
 * (call_sites_table.h, targets/layouts/gen_call_sites). */
#include <stddef.h>
#include <stdlib.h>

#include "call_sites.h"
#include "call_sites_table.h"

#define MAJOR 3u
#define MAX_CACHE_UNITS 16    /* more inline cache units than any instruction has */
#define SUSPENDED_AT_INSTRUCTION 13u /* the first minor version whose callers point at the instruction */
#define UNITS_PER_MAP_BYTE 8u
#define RESUME_LOCATION_MASK 3u     /* RESUME's operand: where it resumes (0 start, 1 yield, 2 yield from, 3 await) */
#define RESUME_AFTER_DELEGATION 2u  /* ... the first location after a `yield from` or `await` */

const struct fpi_call_site_set *fpi_call_sites_for(unsigned major, unsigned minor)
{
    for (size_t i = 0; major == MAJOR && i < sizeof FPI_CALL_SITE_SETS / sizeof FPI_CALL_SITE_SETS[0]; i++)
        if (FPI_CALL_SITE_SETS[i].minor == minor)
            return &FPI_CALL_SITE_SETS[i];
    return NULL;
}

static bool in_set(const uint64_t words[4], uint8_t op)
{
    return (words[op / 64u] >> (op % 64u)) & 1u;
}

/* Is op a call site for a frame that is (or is not) a generator's? */
static bool member(const fpi_call_site_set *set, uint8_t op, bool generator)
{
    return in_set(set->ops, op) && (generator || !in_set(set->gen_ops, op));
}

/* The frame-pushing instruction a caller of code `e` at `unit` is
 * suspended at, or -1.  3.13+: the instruction itself.  3.11, 3.12: the
 * instruction itself or its last cache unit (a frame-pushing instruction
 * exactly its cache count before it). */
static int pushing_op(const fpi_call_site_set *set, const fpi_code_entry *e, int32_t unit, bool generator)
{
    uint8_t op = e->bytecode[2u * (size_t)unit];
    if (member(set, op, generator))
        return op;
    if (set->minor >= SUSPENDED_AT_INSTRUCTION)
        return -1;
    for (int32_t back = 1; back <= unit && back <= MAX_CACHE_UNITS; back++) {
        uint8_t prev = e->bytecode[2u * (size_t)(unit - back)];
        if (member(set, prev, generator) && set->caches[prev] == back)
            return prev;
    }
    return -1;
}

int fpi_call_site_starts(const fpi_call_site_set *set, const uint8_t *bytecode, int64_t units, uint8_t **starts)
{
    *starts = NULL;
    if (!set || set->minor >= SUSPENDED_AT_INSTRUCTION || !bytecode || units <= 0)
        return FP_OK;
    uint8_t *map = calloc(((size_t)units + UNITS_PER_MAP_BYTE - 1) / UNITS_PER_MAP_BYTE, 1);
    if (!map)
        return FP_E_NOMEM;
    int64_t u = 0;
    while (u < units) {
        uint8_t n = set->caches[bytecode[2u * (size_t)u]];
        if (n == FPI_CALL_SITE_OPAQUE_LENGTH)
            break;
        map[(size_t)u / UNITS_PER_MAP_BYTE] |= (uint8_t)(1u << ((size_t)u % UNITS_PER_MAP_BYTE));
        u += 1 + (int64_t)n;
    }
    if (u != units) {
        free(map);
        return FP_OK;
    }
    *starts = map;
    return FP_OK;
}

static bool starts_at(const uint8_t *map, int32_t unit)
{
    return (map[(size_t)unit / UNITS_PER_MAP_BYTE] >> ((size_t)unit % UNITS_PER_MAP_BYTE)) & 1u;
}

/* 3.11, 3.12, through the instruction map: the opcode of the instruction
 * at `unit`, or of the one whose last inline cache unit `unit` is, or -1
 * (a unit inside a cache, where no frame waits). */
static int mapped_op(const fpi_call_site_set *set, const fpi_code_entry *e, int32_t unit)
{
    int32_t at = unit;
    while (at > 0 && !starts_at(e->starts, at))
        at--;
    uint8_t op = e->bytecode[2u * (size_t)at];
    return at == unit || at + (int32_t)set->caches[op] == unit ? op : -1;
}

static bool checkable(const fpi_call_site_set *set, const fpi_code_entry *e, int32_t unit)
{
    return set && e->bytecode && unit >= 0 && unit < e->code_units;
}

bool fpi_call_site_ok(const fpi_call_site_set *set, const fpi_code_entry *e, int32_t unit, bool generator)
{
    return !checkable(set, e, unit) || pushing_op(set, e, unit, generator) >= 0;
}

/* The opcode of the instruction a caller of code `e` at `unit` is
 * suspended in, from any of the families: the unit's own (3.13+), or
 * through the instruction map (3.11, 3.12, whose callers may name an inline
 * cache unit); -1 when it cannot be told. */
static int suspended_op(const fpi_call_site_set *set, const fpi_code_entry *e, int32_t unit, bool generator)
{
    if (set->minor >= SUSPENDED_AT_INSTRUCTION)
        return pushing_op(set, e, unit, generator);
    return e->starts ? mapped_op(set, e, unit) : -1;
}

bool fpi_call_site_passes_callable(const fpi_call_site_set *set, const fpi_code_entry *e, int32_t unit)
{
    if (!checkable(set, e, unit))
        return false;
    int op = suspended_op(set, e, unit, false);
    return op >= 0 && in_set(set->callable_ops, (uint8_t)op);
}

fpi_resumer fpi_call_site_resumer(const fpi_call_site_set *set, const fpi_code_entry *e, int32_t unit,
                                  bool generator)
{
    /* 3.11, 3.12: a caller may point at a cache unit, whose data byte can
     * look like SEND or FOR_ITER while the instruction is a CALL (3.12
     * Thread._bootstrap, parked): told apart by the instruction map, and
     * not told without one.  A unit inside a cache, not its last, is where
     * no instruction waits. */
    if (!checkable(set, e, unit))
        return FPI_RESUMER_UNKNOWN;
    int op;
    if (set->minor >= SUSPENDED_AT_INSTRUCTION) {
        op = e->bytecode[2u * (size_t)unit];
        if (set->caches[op] == FPI_CALL_SITE_OPAQUE_LENGTH)
            return FPI_RESUMER_UNKNOWN;
    } else {
        if (!e->starts)
            return FPI_RESUMER_UNKNOWN;
        op = mapped_op(set, e, unit);
        if (op < 0)
            return FPI_RESUMER_OTHER;
    }
    if (in_set(set->gen_callee_ops, (uint8_t)op))
        return FPI_RESUMER_RESUMES;
    if (generator && in_set(set->gen_ops, (uint8_t)op))
        return FPI_RESUMER_DELEGATES;
    return FPI_RESUMER_OTHER;
}

bool fpi_call_site_waits(const fpi_call_site_set *set, const fpi_code_entry *e, int32_t unit)
{
    if (!checkable(set, e, unit))
        return false;
    if (set->minor < SUSPENDED_AT_INSTRUCTION) {
        int op = e->starts ? mapped_op(set, e, unit) : -1;
        return op >= 0 && in_set(set->wait_ops, (uint8_t)op);
    }
    uint8_t op = e->bytecode[2u * (size_t)unit];
    if (in_set(set->wait_ops, op))
        return true;
    if (unit == 0)
        return false;
    uint8_t prev = e->bytecode[2u * (size_t)(unit - 1)];
    return in_set(set->wait_ops, prev) && set->caches[prev] == 0;
}

enum fp_tristate fpi_call_site_delegating(const fpi_call_site_set *set, const fpi_code_entry *e, int32_t unit)
{
    if (!checkable(set, e, unit))
        return FP_UNKNOWN;
    /* 3.11 (no generator-only call sites): the generator gen.throw() links
     * under its caller is an entry frame there, as every resumed
     * generator's frame is, so none waits directly under a frame. */
    if (!(set->gen_ops[0] | set->gen_ops[1] | set->gen_ops[2] | set->gen_ops[3]))
        return FP_NO;
    int32_t resume = unit;
    if (set->minor < SUSPENDED_AT_INSTRUCTION) {
        /* 3.12: the generator names the YIELD_VALUE it yielded at; the
         * RESUME after it says where it resumes. */
        if (!e->starts)
            return FP_UNKNOWN;
        uint8_t op = e->bytecode[2u * (size_t)unit];
        resume = unit + 1 + set->caches[op];
        if (!starts_at(e->starts, unit) || !in_set(set->gen_ops, op) || resume >= e->code_units ||
            !starts_at(e->starts, resume))
            return FP_NO;
    }
    uint8_t op = e->bytecode[2u * (size_t)resume], arg = e->bytecode[2u * (size_t)resume + 1];
    if (set->caches[op] == FPI_CALL_SITE_OPAQUE_LENGTH)
        return FP_UNKNOWN;
    /* YIELD_VALUE's operand (3.13+: 0 or 1) never reaches the delegation
     * values of RESUME's location. */
    return in_set(set->gen_ops, op) && (arg & RESUME_LOCATION_MASK) >= RESUME_AFTER_DELEGATION ? FP_YES : FP_NO;
}
