/* frameproof/pause.h — stops every thread of a live process (ptrace) and
 * resumes it: what blocking samples (fp_options.blocking) and frameproof
 * snapshot use.  If the calling process dies while threads are stopped, the
 * kernel resumes them: a target is never left stopped.  Conventions as in
 * frameproof.h. */
#ifndef FRAMEPROOF_PAUSE_H
#define FRAMEPROOF_PAUSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frameproof/export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FP_PAUSE_STOP_TIMEOUT_MS 5000L  /* one thread's wait for its interrupt stop */
#define FP_PAUSE_MAX_THREADS 65536u

typedef struct fp_pause fp_pause;

/* Lists every thread of process pid and, when stop is true, stops them all
 * (a thread that appears meanwhile is stopped too).  The caller owns *out
 * (fp_pause_free).  On failure nothing stays stopped, *out is NULL and err
 * (when non-NULL) holds the message.  Errors: FP_E_INVALID_ARG,
 * FP_E_PROCESS_GONE, FP_E_PERMISSION, FP_E_LIMIT, FP_E_IO, FP_E_NOMEM. */
FP_API int fp_pause_new(int pid, bool stop, fp_pause **out, char *err, size_t errlen);

/* The threads listed, i in [0, count): kernel thread id and the scheduler
 * state letter read before the stop ('R': on a CPU; 0: unknown); 0 for i
 * out of range. */
FP_API size_t fp_pause_get_thread_count(const fp_pause *p);
FP_API uint64_t fp_pause_get_thread_id(const fp_pause *p, size_t i);
FP_API char fp_pause_get_thread_state(const fp_pause *p, size_t i);

/* Resumes every thread p stopped; p stays valid (its thread list too).
 * Resuming again is a no-op. */
FP_API void fp_pause_resume(fp_pause *p);

/* Resumes every thread p still holds stopped, then frees p. */
FP_API void fp_pause_free(fp_pause *p);

#ifdef __cplusplus
}
#endif

#endif
