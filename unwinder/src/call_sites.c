/* call_sites.c — the call-site check.
 *
 * A caller whose callee is a Python frame linked directly above it (no
 * entry or shim frame between) pushed that frame itself, so its current
 * instruction is one that pushes frames: a CALL, SEND or FOR_ITER (and the
 * few others the table lists), in any specialised or instrumented form; or
 * a generator's YIELD_VALUE / RESUME, where gen.throw() links a delegating
 * generator under the one it delegates to — a generator's only: any other
 * frame at RESUME has just been set up and has called nothing (ci/live
 * thread_churn, 3.13: d2 at its first RESUME under a leaf_c of the chain
 * before, still in the slot above).
 * A frame that has returned, or one left over in a slot that a newer call
 * chain reused, is at another instruction (typically RETURN_VALUE, or the
 * caller's next statement): a walk that meets one has mixed two instants
 * and must not be returned as a stack.  The caller's instruction pointer
 * names the instruction (3.13+), or the instruction or its last inline
 * cache unit (3.11, 3.12); 3.13+ accept the instruction only, as the cache
 * units hold data that a scan back from any unit could take for an opcode.
 * The opcode sets come from each version's own opcode tables
 * (call_sites_table.h, targets/layouts/gen_call_sites). */
#include <stddef.h>

#include "call_sites.h"
#include "call_sites_table.h"

#define MAJOR 3u
#define MAX_CACHE_UNITS 16    /* more inline cache units than any instruction has */
#define SUSPENDED_AT_INSTRUCTION 13u /* the first minor version whose callers point at the instruction */

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

bool fpi_call_site_ok(const fpi_call_site_set *set, const fpi_code_entry *e, int32_t unit, bool generator)
{
    if (!set || !e->bytecode || unit < 0 || unit >= e->code_units)
        return true;
    /* 3.13+: the instruction itself.  3.11, 3.12: the instruction itself
     * or its last cache unit (a frame-pushing instruction exactly its
     * cache count before it). */
    uint8_t op = e->bytecode[2u * (size_t)unit];
    if (member(set, op, generator))
        return true;
    if (set->minor >= SUSPENDED_AT_INSTRUCTION)
        return false;
    for (int32_t back = 1; back <= unit && back <= MAX_CACHE_UNITS; back++) {
        uint8_t prev = e->bytecode[2u * (size_t)(unit - back)];
        if (member(set, prev, generator) && set->caches[prev] == back)
            return true;
    }
    return false;
}
