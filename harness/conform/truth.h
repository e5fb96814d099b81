/* truth.h — a checkpoint message of the ground-truth channel,
 * decoded into the harness frame type for comparison. */
#ifndef CF_TRUTH_H
#define CF_TRUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "sample.h"

typedef struct cf_truth_thread {
    uint64_t native_id;
    uint64_t thread_id;
    bool main;
    bool exception;
    cf_frame *frames;      /* innermost first; strings borrowed from the message */
    size_t nframes;
} cf_truth_thread;

typedef struct cf_truth {
    const char *name;      /* checkpoint label (borrowed) */
    int64_t seq;           /* -1 when absent */
    cf_truth_thread *threads;
    size_t nthreads;
    uint64_t *all_ids;     /* native ids of all_threads */
    size_t nall;
} cf_truth;

/* Decodes a {"event":"checkpoint",...} message.  The truth borrows strings
 * from msg, which must outlive it.  CF_E_FORMAT with a reason in err when
 * the message does not follow the protocol. */
int cf_truth_parse(json_object *msg, cf_truth *out, char *err, size_t errlen);
void cf_truth_free(cf_truth *t);

/* The truth thread with this native id, or NULL. */
const cf_truth_thread *cf_truth_find(const cf_truth *t, uint64_t native_id);

#endif
