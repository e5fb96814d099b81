/* call_sites.h — the call-site check: a frame whose callee is a Python
 * frame it pushed itself must be suspended at an instruction that pushes
 * frames (see call_sites.c). */
#ifndef FPI_CALL_SITES_H
#define FPI_CALL_SITES_H

#include <stdbool.h>
#include <stdint.h>

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

/* Is the frame of code `e`, suspended under a directly linked callee at
 * `unit`, at an instruction that pushes only a generator's or coroutine's
 * frame (SEND, FOR_ITER)?  False when it cannot be told (3.11, 3.12: a
 * caller there may point at an inline cache unit, told from one of its
 * instruction only through the instruction map). */
bool fpi_call_site_resumes_generator(const struct fpi_call_site_set *set, const fpi_code_entry *e, int32_t unit,
                                     bool generator);

/* Is the frame of code `e`, suspended under a directly linked callee at
 * `unit`, in a CALL, CALL_KW or (3.12, 3.13) CALL_FUNCTION_EX, which leave the function they call at the
 * caller's saved stack depth (or NULL there and the function in the slot
 * above)?  False when it cannot be told (no table, no bytecode kept; 3.11,
 * 3.12 without an instruction map). */
bool fpi_call_site_passes_callable(const struct fpi_call_site_set *set, const fpi_code_entry *e, int32_t unit);

#endif
