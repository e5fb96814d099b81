/* stack_switch.c — a chain greenlet rewrote for a switch, told from a
 * chain cut while it was read.
 *
 * When greenlet (3.12+) switches away from a greenlet, it makes that
 * greenlet's frames walkable without the C stack it saves away: every
 * Python frame's previous link is set to the next Python frame below it
 * (skipping the entry frames, which live on that C stack), the outermost
 * Python frame's link to NULL, and each frame's own link is kept in the
 * first word of its frame object's _f_frame_data (unused while the frame
 * runs).  The thread state's current frame still names the greenlet's top
 * frame until the switch is over, so a sample taken then, even of a
 * stopped thread, walks Python frames down to one with no caller that was
 * not entered from C code: the greenlet's own stack, true, but shaped as a
 * cut chain.
 *
 * CPython itself never leaves a frame its thread owns with no caller once
 * the frame is on a chain (a frame a C call pushes has none only until the
 * evaluation loop links it under its entry frame, and it has no frame
 * object until then).  So such a bottom is taken as greenlet's when its
 * frame object exists, names the frame as its own (f_frame), and holds a
 * kept link that can be the one greenlet kept: nonzero, aligned, and
 * outside the thread's data stack (the outermost Python frame's own
 * caller is the entry frame of its evaluation, a C local; a frame object
 * freed with its frame holds whatever its memory held).  Everything else
 * stays a torn chain. */
#include "layout.h"
#include "read.h"
#include "stack_switch.h"
#include "typed_load.h"

/* Does addr lie in one of the data-stack chunks (their whole allocation)? */
static bool in_data_stack(const fpi_chunk_copy *chunks, size_t nchunks, uint64_t addr)
{
    for (size_t i = 0; i < nchunks; i++)
        if (fpi_chunk_holds(&chunks[i], addr))
            return true;
    return false;
}

int fpi_switcher_exposed(fp_session *s, const fpi_chunk_copy *chunks, size_t nchunks, uint64_t frame,
                         uint64_t frame_obj, bool *exposed)
{
    const fpi_layout *l = &s->layout;
    uint8_t fo[FPI_MAX_FRAME_OBJECT_PREFIX];
    *exposed = false;
    if (l->fo_frame == FPI_OFF_NONE || l->fo_frame_data == FPI_OFF_NONE || !frame_obj ||
        (frame_obj & (FPI_PTR_SIZE - 1)))
        return FP_OK;
    size_t len = (size_t)l->fo_frame_data + FPI_PTR_SIZE;
    int rc = fpi_read(s, frame_obj, fo, len);
    if (rc)
        return fpi_walk_fatal(rc) ? rc : FP_OK;
    uint64_t owner = fpi_load_u64(fo, l->fo_frame), kept = fpi_load_u64(fo, l->fo_frame_data);
    *exposed = owner == frame && kept && !(kept & (FPI_PTR_SIZE - 1)) && !in_data_stack(chunks, nchunks, kept);
    return FP_OK;
}
