/* emit.h — a walk's recorded frames resolved and pushed to the sample
 * (emit.c). */
#ifndef FPI_EMIT_H
#define FPI_EMIT_H

#include <stddef.h>
#include <stdint.h>

#include "session.h"
#include "verify.h"

/* Resolves the n recorded frames at pending (the walk's s->pending, or a
 * slice of a batch's) into th's frames, refusing (FP_E_INCOMPLETE, "torn:
 * ...") a chain whose frames cannot have been one stack.  stopped: they
 * were read from a thread stopped alone, one instant of it. */
int fpi_emit_frames(fp_session *s, fp_sample *sm, fp_thread *th, const fpi_pending_frame *pending, size_t n,
                    bool stopped);
/* After a walk's last read-back (u, w): its top frame is reported at the
 * instruction that read-back found (fpi_verify_want.top_instr). */
void fpi_take_top_instr(fpi_pending_frame *pending, size_t n, const fpi_walk_used *u, const fpi_verify_want *w);
/* What frames resolved after a walk's read-back owe it: nothing, one more
 * read-back for a link the callee check did not compare (on versions read
 * back once first: fpi_verify_reads_first), or one with its code objects
 * confirmed strictly, after code objects were read outside the read-back
 * (s->code_late moved). */
typedef enum fpi_owed {
    FPI_OWED_NONE,
    FPI_OWED_LINKS,
    FPI_OWED_CODE,
} fpi_owed;
/* The counters fpi_frames_owe compares, taken before frames are resolved. */
typedef struct fpi_frames_mark {
    uint64_t code_late, links_unchecked;
} fpi_frames_mark;
fpi_frames_mark fpi_frames_mark_now(const fp_session *s);
fpi_owed fpi_frames_owe(const fp_session *s, fpi_frames_mark since);

#endif
