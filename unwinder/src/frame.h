/* frame.h — the fields of an interpreter frame that decide a stack, decoded
 * from its bytes: what a walk records of each frame it follows (chain.c)
 * and what its read-back compares (verify.c).  Static inline: both call
 * them for every frame. */
#ifndef FPI_FRAME_H
#define FPI_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "session.h"

#define FPI_OUTSIDE_PREFIX 8u /* bytes read before a frame outside the data stack (3.11: gi_frame_state) */

/* Bytes read before a frame that lies outside the data stack (0, or 8 on
 * 3.11 for the generator's gi_frame_state): fr[-1..-prefix] are valid for
 * such a frame. */
static inline size_t fpi_outside_prefix(const fpi_layout *l)
{
    return l->gen_state_before_frame != FPI_OFF_NONE ? FPI_OUTSIDE_PREFIX : 0;
}

/* 3.11: gi_frame_state of a generator whose frame (outside the data
 * stack) is at fr; -1 for any other frame. */
static inline int16_t fpi_gen_state(const fpi_layout *l, const uint8_t *fr, bool outside)
{
    bool gen = outside && fpi_load_u8(fr, l->fr_owner) == l->owner_generator &&
               l->gen_state_before_frame != FPI_OFF_NONE;
    return gen ? (int8_t)fr[-l->gen_state_before_frame] : -1;
}

/* The stack depth the frame at addr (its fr_size bytes at fr) saved:
 * 3.11-3.13 its stacktop (-1 while it runs, 3.13: 0 once it returned);
 * 3.14+ its stack pointer counted in slots above localsplus
 * (FPI_STACKTOP_RUNNING for NULL, which debug builds store while the frame
 * runs; FPI_DEPTH_UNKNOWN for a pointer below localsplus, unaligned or too
 * far); 0 where the layout has neither. */
static inline int32_t fpi_frame_depth(const fpi_layout *l, uint64_t addr, const uint8_t *fr)
{
    if (l->fr_stacktop != FPI_OFF_NONE)
        return (int32_t)fpi_load_u32(fr, l->fr_stacktop);
    if (l->fr_stackpointer == FPI_OFF_NONE || l->fr_localsplus == FPI_OFF_NONE)
        return 0;
    uint64_t sp = fpi_load_u64(fr, l->fr_stackpointer), base = addr + (uint64_t)l->fr_localsplus;
    if (sp == 0)
        return FPI_STACKTOP_RUNNING;
    if (sp < base || (sp - base) % FPI_PTR_SIZE != 0 || (sp - base) / FPI_PTR_SIZE > (uint64_t)INT32_MAX)
        return FPI_DEPTH_UNKNOWN;
    return (int32_t)((sp - base) / FPI_PTR_SIZE);
}

/* The decisive fields of the frame whose fr_size bytes are at fr, into *out. */
static inline void fpi_seen_fields(const fpi_layout *l, uint64_t addr, const uint8_t *fr, int32_t chunk,
                                   fpi_seen_frame *out)
{
    /* Field by field into place: a struct built on the stack and copied
     * whole stalls on its narrow fields, once per frame. */
    out->gen_state = fpi_gen_state(l, fr, chunk == FPI_OUTSIDE_CHUNKS);
    out->chunk = chunk;
    out->addr = addr;
    out->previous = fpi_load_u64(fr, l->fr_previous);
    out->executable = fpi_load_u64(fr, l->fr_executable);
    out->instr = fpi_load_u64(fr, l->fr_instr_ptr);
    out->tlbc_index = l->fr_tlbc_index != FPI_OFF_NONE ? fpi_load_u32(fr, l->fr_tlbc_index) : 0;
    out->owner = fpi_load_u8(fr, l->fr_owner);
    out->is_entry = l->fr_is_entry != FPI_OFF_NONE ? fpi_load_u8(fr, l->fr_is_entry) : 0;
    out->stacktop = fpi_frame_depth(l, addr, fr);
}

#endif
