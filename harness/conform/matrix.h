/* matrix.h — matrix.md: a Markdown table of scenarios x
 * interpreters with the verdict of every case, totals, the differential
 * column and a list of the failing cases. */
#ifndef FP_CONFORM_MATRIX_H
#define FP_CONFORM_MATRIX_H

#include <json-c/json.h>

#include "strbuf.h"

/* Renders the Markdown matrix of a report object (report.json content). */
int cf_matrix_render(json_object *report, cf_strbuf *out);

#endif
