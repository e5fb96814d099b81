/* matrix.h — matrix.md: the state of the field (cases passed/failed per
 * unwinder x interpreter), a scenarios x interpreters table per unwinder
 * with its most frequent failure classes and failing cases. */
#ifndef CF_MATRIX_H
#define CF_MATRIX_H

#include <json-c/json.h>

#include "strbuf.h"

/* Renders the Markdown matrix of a report object (report.json content). */
int cf_matrix_render(json_object *report, cf_strbuf *out);

/* Appends s as one Markdown table cell ('|' escaped, newlines as spaces). */
void cf_md_cell(cf_strbuf *out, const char *s);

#endif
