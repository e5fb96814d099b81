/* compare.h — compares one sample of any unwinder (cf_sample) with the
 * ground truth of a checkpoint, on the fields the sample reports, and
 * describes every difference readably. */
#ifndef CF_COMPARE_H
#define CF_COMPARE_H

#include <stddef.h>

#include <json-c/json.h>

#include "strbuf.h"
#include "truth.h"
#include "sample.h"

/* Appends one JSON object per mismatch to the array `out` and stores their
 * number in *count.  Each object has "type" (thread_missing, thread_extra,
 * thread_field, walk_error, frame_differs, frame_missing, frame_extra or
 * truncated), "thread" (native id), "message" and, for frames, "index",
 * "expected" and "actual" (frame objects) and "fields".  Returns CF_OK or
 * CF_E_NOMEM. */
int cf_compare(const cf_truth *truth, const cf_sample *sample, json_object *out, size_t *count);

/* "qualname (file:line:col-endcol)" on the fields in mask (enum
 * cf_field): "[generator]" for generator frames; "?" for unknown
 * positions; "line:col-endline:endcol" over several lines; co_name when
 * the qualname is not reported. */
int cf_frame_describe(const cf_frame *f, unsigned mask, cf_strbuf *sb);

/* The frame as a JSON object with the protocol's FRAME keys of the fields
 * in mask (NULL on OOM). */
json_object *cf_frame_to_json(const cf_frame *f, unsigned mask);

#endif
