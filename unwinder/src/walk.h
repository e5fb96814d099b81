/* walk.h — one sample of every interpreter, thread and frame (walk.c). */
#ifndef FPI_WALK_H
#define FPI_WALK_H

#include "session.h"

/* Fills sm with one sample of the target: FP_OK; FP_E_INCOMPLETE or
 * FP_E_LIMIT with the threads that failed marked (or the list that did);
 * any other code ends the sample (the process gone, no permission, no
 * memory, a runtime that cannot be read).  Every error leaves a message. */
int fpi_walk_all(fp_session *s, fp_sample *sm);

#endif
