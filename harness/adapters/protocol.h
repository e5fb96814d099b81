/* protocol.h — the unwinder-command protocol (docs/unwinder-protocol.md):
 * the JSON document an external unwinder prints for one sample, parsed
 * into the harness's cf_sample with strict type checks.  A key absent from
 * every thread (or every frame) is a field the unwinder does not report. */
#ifndef ADAPTERS_PROTOCOL_H
#define ADAPTERS_PROTOCOL_H

#include <stddef.h>

#include "sample.h"

/* Fields carried by keys of a frame object. */
#define CF_PROTOCOL_FRAME_FIELDS                                                                        \
    (CF_FIELD_FUNCTION | CF_FIELD_NAME | CF_FIELD_FILE | CF_FIELD_LINE | CF_FIELD_END_LINE |          \
     CF_FIELD_COLUMN | CF_FIELD_END_COLUMN | CF_FIELD_KIND)
/* Fields carried by keys of a thread object ("exception" inside "status"). */
#define CF_PROTOCOL_THREAD_FIELDS (CF_FIELD_NATIVE_ID | CF_FIELD_THREAD_ID | CF_FIELD_MAIN | CF_FIELD_EXCEPTION)
/* Every field the protocol can report (all_threads: a top-level key). */
#define CF_PROTOCOL_FIELDS (CF_PROTOCOL_FRAME_FIELDS | CF_PROTOCOL_THREAD_FIELDS | CF_FIELD_ALL_THREADS)

/* Parses one protocol document, text[0 .. len), into out, which must hold
 * no threads (reset it first).  text is modified in place (lone surrogate
 * escapes become their 3-byte encoding, as in the ground truth) and
 * text[len] must be writable.
 *
 * declared == 0: out->fields is narrowed to the fields whose keys the
 * document holds.  Otherwise out->fields is narrowed to `declared`, and a
 * declared key missing from the document's threads or frames is an error.
 *
 * Returns CF_OK; CF_E_FORMAT with a message naming the JSON path of the
 * offending value ("$.interpreters[0].threads[1].frames[2].line: ...");
 * CF_E_LIMIT for a document longer than INT_MAX bytes; CF_E_NOMEM.  On
 * failure out may hold part of the document. */
int cf_protocol_parse(char *text, size_t len, unsigned declared, cf_sample *out, char *err, size_t errlen);

#endif
