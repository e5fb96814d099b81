/* call_sites.h — the call-site check: a frame whose callee is a Python
 * frame it pushed itself must be suspended at an instruction that pushes
 * frames (see call_sites.c). */
#ifndef FPI_CALL_SITES_H
#define FPI_CALL_SITES_H

#include <stdbool.h>
#include <stdint.h>

#include "call_site_kind.h"
#include "session.h"

/* The opcode set of CPython 3.minor, or NULL when none is known (a version
 * newer than the tables: no check). */
const struct fpi_call_site_set *fpi_call_sites_for(unsigned major, unsigned minor);

/* 3.11, 3.12: decode `units` code units of `bytecode` from the start into
 * *starts, a bit per unit that begins an instruction (the rest are inline
 * cache units, whose bytes are data), or NULL when the bytecode does not
 * tell (3.13+, which need no map; an opcode that hides its length or is
 * none; an instruction running past the end).  FP_OK or FP_E_NOMEM. */
int fpi_call_site_starts(const struct fpi_call_site_set *set, const uint8_t *bytecode, int64_t units,
                         uint8_t **starts);

/* Can the frame of code `e` (a generator's or coroutine's frame, or not)
 * be suspended under a directly linked callee at code unit `unit`?  True
 * when it can, or when it cannot be told (no bytecode kept, no table). */
bool fpi_call_site_ok(const struct fpi_call_site_set *set, const fpi_code_entry *e, int32_t unit, bool generator);

/* What the frame of code `e` (a generator's or coroutine's frame, or not),
 * suspended under a directly linked callee at `unit`, is suspended in:
 * SEND or FOR_ITER, which push only a generator's or coroutine's frame; a
 * generator's YIELD_VALUE or RESUME; another instruction; or unknown (no
 * table or bytecode kept; 3.11, 3.12 without the instruction map, as a
 * caller there may point at an inline cache unit whose data byte can look
 * like any opcode; an instrumented line or instruction). */
fpi_resumer fpi_call_site_resumer(const struct fpi_call_site_set *set, const fpi_code_entry *e, int32_t unit,
                                  bool generator);

/* Is the generator's or coroutine's frame of code `e`, at `unit`,
 * suspended in a `yield from` or `await`: at the RESUME after its
 * YIELD_VALUE (3.13+, whose YIELD_VALUE moves the instruction pointer onto
 * it), or at the YIELD_VALUE followed by that RESUME (3.12), whose operand
 * says it resumes after a delegation (as CPython's _PyGen_yf reads it)?
 * FP_UNKNOWN when it cannot be told (no table or bytecode kept; 3.12
 * without the instruction map; an instrumented line or instruction). */
enum fp_tristate fpi_call_site_delegating(const struct fpi_call_site_set *set, const fpi_code_entry *e,
                                          int32_t unit);

/* Does the generator's or coroutine's frame of code `e` stand, at `unit`,
 * where such a frame waits to be resumed with its stack depth saved: at
 * its YIELD_VALUE or its RETURN_GENERATOR (made, not started) (3.11,
 * 3.12, told through the instruction map), or at that instruction or the
 * one after it (3.13+, whose YIELD_VALUE and RETURN_GENERATOR move the
 * instruction pointer past themselves)?  False when it cannot be told. */
bool fpi_call_site_waits(const struct fpi_call_site_set *set, const fpi_code_entry *e, int32_t unit);

/* Is the frame of code `e`, suspended under a directly linked callee at
 * `unit`, in a CALL, CALL_KW or (3.12, 3.13) CALL_FUNCTION_EX, which leave the function they call at the
 * caller's saved stack depth (or NULL there and the function in the slot
 * above)?  False when it cannot be told (no table, no bytecode kept; 3.11,
 * 3.12 without an instruction map). */
bool fpi_call_site_passes_callable(const struct fpi_call_site_set *set, const fpi_code_entry *e, int32_t unit);

#endif
