/* view.h — a mutable copy of one libframeproof sample (threads and
 * frames) that the comparison reads, and the --inject-fault self-test
 * faults applied to it. */
#ifndef FP_CONFORM_VIEW_H
#define FP_CONFORM_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frameproof/frameproof.h"

enum cf_fault {
    CF_FAULT_NONE = 0,
    CF_FAULT_DROP_FRAME = 1,  /* remove the innermost frame */
    CF_FAULT_SHIFT_LINE = 2,  /* add 1 to the innermost frame's line */
};

typedef struct cf_view_thread {
    uint64_t native_id;
    uint64_t thread_id;
    int64_t interp_id;
    bool main;
    int exception;         /* enum fp_tristate */
    int error;             /* FP_E_* of a failed walk, or 0 */
    size_t first, count;   /* into cf_view.frames */
} cf_view_thread;

typedef struct cf_view {
    cf_view_thread *threads;
    size_t nthreads, cap_threads;
    fp_frame *frames;      /* strings borrowed from the session's sample */
    size_t nframes, cap_frames;
} cf_view;

void cf_view_init(cf_view *v);
void cf_view_free(cf_view *v);

/* Copies every thread of every interpreter of sm (storage is reused). */
int cf_view_build(cf_view *v, const fp_sample *sm);

/* Applies a fault to the thread with this native id (no-op if absent). */
void cf_view_inject(cf_view *v, int fault, uint64_t native_id);

/* The thread with this native id; if several interpreters have one (3.11
 * and 3.12 give a sub-interpreter's thread state the native id of the
 * thread that created it, whichever thread later runs it), the one of the
 * lowest interpreter id, i.e. the main interpreter, where the ground truth
 * comes from. */
const cf_view_thread *cf_view_find(const cf_view *v, uint64_t native_id);

#endif
