/* sample_output.h — the documented JSON and traceback-like text forms of a
 * sample, shared by `dump` and `replay`. */
#ifndef FP_SAMPLE_OUTPUT_H
#define FP_SAMPLE_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>

#include "frameproof/frameproof.h"

/* Is a sample that returned rc worth printing?  On success, and on
 * FP_E_INCOMPLETE when the sample holds its threads and the failed ones
 * carry their error (they are printed with "error" and no frames). */
bool fp_output_printable(int rc, const fp_sample *sm);

void fp_output_json(FILE *out, int pid, const fp_python_info *py, const fp_sample *sm);
void fp_output_text(FILE *out, int pid, const fp_python_info *py, const char *reader, const fp_sample *sm);

#endif
