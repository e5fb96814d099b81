/* walk.h — what the walker (walk.c) shares with its batched read-back of
 * an interpreter's threads (walk_batch.c). */
#ifndef FPI_WALK_H
#define FPI_WALK_H

#include <stdbool.h>
#include <stdint.h>

#include "session.h"
#include "verify.h"

#define FPI_PENDING_INITIAL 256u /* frames of one chain, first allocation */

/* What a sample read of one interpreter. */
typedef struct fpi_interp_info {
    uint64_t addr, next, threads_head, threads_main;
    uint64_t generation;     /* code_object_generation (3.14+) */
    int64_t id;
    bool gil_known;
    uint64_t gil_holder; /* 0 when unlocked */
    uint64_t gilp;       /* 3.12: where its GIL is */
    uint64_t main_thread_id; /* of the main interpreter, from _PyRuntime */
} fpi_interp_info;

/* Does a newest chunk at `chunk` with the data-stack top at `top` hold a
 * live part past its header, within FPI_MAX_CHUNK_BYTES? */
bool fpi_live_span(uint64_t chunk, uint64_t top);

/* An error that ends the sample (the process gone, no permission, ...). */
bool fpi_walk_fatal(int rc);

/* The main interpreter lists its main thread's state for as long as it runs
 * (3.12+: threads.main; before, the state with the runtime's main thread
 * id).  FP_E_INCOMPLETE (with the message) when the `count` threads from
 * sm->threads[first] walked for interpreter ii hold none marked main: the
 * list was read while it was being changed. */
int fpi_check_main_listed(fp_session *s, const fp_sample *sm, size_t first, size_t count, const fpi_interp_info *ii);

/* One walk of the thread state at ts (reached through the pointer at link),
 * from `pre` when it was read ahead: pushes the thread (and, unless the
 * batch is collecting, its frames) to the sample; *next is its next link. */
int fpi_walk_thread_once(fp_session *s, fp_sample *sm, fpi_interp_info *ii, uint64_t link, uint64_t ts,
                         const fpi_thread_prefetch *pre, uint64_t *next);

/* Resolves the n recorded frames at pending (the walk's s->pending, or a
 * slice of a batch's) into th's frames. */
int fpi_emit_frames(fp_session *s, fp_sample *sm, fp_thread *th, const fpi_pending_frame *pending, size_t n);
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
/* After the walks' frames: the walks ws/us read back once more; FP_OK when
 * they still hold.  code_strict (FPI_OWED_CODE): a cached code object that
 * changed tears them too. */
int fpi_verify_after_frames(fp_session *s, fpi_verify_want *ws, const fpi_walk_used *us, size_t count,
                            bool code_strict);

/* Notes that the interpreter had the thread state ts in this sample;
 * FP_E_INCOMPLETE when it already had it (the list changed under the walk). */
int fpi_remember_thread(fp_session *s, uint64_t interp, uint64_t ts);

/* walk_batch.c */
/* Is a batch collecting walks (walk_frames defers its read-back)? */
bool fpi_batch_collecting(const fp_session *s);
/* Keeps the walk just collected for the batch's read-back. */
int fpi_batch_defer(fp_session *s, const fp_sample *sm, const fp_thread *th, const fpi_verify_want *want);
/* Every thread of the interpreter from its read-ahead copy, read back
 * together; see walk_batch.c. */
int fpi_walk_interp_batched(fp_session *s, fp_sample *sm, fpi_interp_info *ii);

#endif
