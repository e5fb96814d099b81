/* sample_output.h — the documented JSON and traceback-like text forms of a
 * sample, shared by `dump` and `replay`. */
#ifndef CLI_SAMPLE_OUTPUT_H
#define CLI_SAMPLE_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>

#include "frameproof/frameproof.h"
#include "json_writer.h"

/* The "python" object of `dump --json` (and `dump --async --json`), and a
 * frame's position fields as both write them (the caller opens and closes
 * the frame's object). */
void cli_json_python(jw_writer *j, const fp_python_info *py);
void cli_json_frame_fields(jw_writer *j, const fp_frame *fr);

void cli_output_json(FILE *out, int pid, const fp_python_info *py, const fp_sample *sm);
void cli_output_text(FILE *out, int pid, const fp_python_info *py, const char *reader, const fp_sample *sm);

#endif
