/* stack_switch.h — the proof that a frame chain ending at a Python frame
 * with no caller is one a stack switcher (greenlet) rewrote for a switch,
 * not a chain cut while it was read (stack_switch.c). */
#ifndef FPI_STACK_SWITCH_H
#define FPI_STACK_SWITCH_H

#include <stdbool.h>
#include <stdint.h>

#include "session.h"
#include "walk_record.h"

/* Is the chain's outermost frame, at `frame` (owned by its thread, a NULL
 * previous link; frame_obj its frame-object pointer as the walk copied
 * it), the bottom of a stack greenlet has exposed for a switch?  chunks:
 * the thread's data-stack chunks as the walk copied them (nchunks).
 * Reads the frame object.  Sets *exposed; returns 0, or the read's error
 * when it is fatal for the sample (fpi_walk_fatal). */
int fpi_switcher_exposed(fp_session *s, const fpi_chunk_copy *chunks, size_t nchunks, uint64_t frame,
                         uint64_t frame_obj, bool *exposed);

#endif
