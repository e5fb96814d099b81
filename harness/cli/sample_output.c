/* sample_output.c — renders a sample as the `dump --json` schema (frames
 * innermost first, unknown values null) or as a traceback per thread. */
#include <inttypes.h>

#include "json_writer.h"
#include "sample_output.h"

static const char *kind_name(int kind)
{
    return kind == FP_FRAME_GENERATOR ? "generator" : "python";
}

void cli_json_python(jw_writer *j, const fp_python_info *py)
{
    jw_begin_object(j);
    jw_key(j, "version");
    jw_string(j, py->version);
    jw_key(j, "hexversion");
    jw_uint(j, py->hexversion);
    jw_key(j, "free_threaded");
    jw_bool(j, py->free_threaded);
    jw_key(j, "debug");
    jw_bool(j, py->debug);
    if (py->untested) { /* only then, so supported versions keep the documented schema */
        jw_key(j, "untested");
        jw_bool(j, true);
    }
    jw_end_object(j);
}

void cli_json_frame_fields(jw_writer *j, const fp_frame *fr)
{
    jw_key(j, "function");
    jw_string(j, fr->function);
    jw_key(j, "name");
    jw_string(j, fr->name);
    jw_key(j, "file");
    jw_string(j, fr->file);
    jw_key(j, "line");
    jw_int_or_null(j, fr->line, FP_POS_NONE);
    jw_key(j, "end_line");
    jw_int_or_null(j, fr->end_line, FP_POS_NONE);
    jw_key(j, "column");
    jw_int_or_null(j, fr->column, FP_POS_NONE);
    jw_key(j, "end_column");
    jw_int_or_null(j, fr->end_column, FP_POS_NONE);
}

void cli_output_json(FILE *out, int pid, const fp_python_info *py, const fp_sample *sm)
{
    jw_writer j;
    jw_init(&j, out);
    jw_begin_object(&j);
    jw_key(&j, "pid");
    jw_int(&j, pid);
    jw_key(&j, "python");
    cli_json_python(&j, py);
    jw_key(&j, "interpreters");
    jw_begin_array(&j);
    for (size_t i = 0; i < fp_sample_get_interp_count(sm); i++) {
        const fp_interp *in = fp_sample_get_interp(sm, i);
        jw_begin_object(&j);
        jw_key(&j, "id");
        jw_int(&j, in->id);
        jw_key(&j, "threads");
        jw_begin_array(&j);
        for (size_t t = in->first_thread; t < in->first_thread + in->thread_count; t++) {
            const fp_thread *th = fp_sample_get_thread(sm, t);
            jw_begin_object(&j);
            jw_key(&j, "native_id");
            jw_uint(&j, th->native_id);
            jw_key(&j, "thread_id");
            jw_uint(&j, th->thread_id);
            jw_key(&j, "main");
            jw_bool(&j, th->main);
            jw_key(&j, "status");
            jw_begin_object(&j);
            jw_key(&j, "gil");
            jw_tristate(&j, th->holds_gil);
            jw_key(&j, "on_cpu");
            jw_tristate(&j, th->on_cpu);
            jw_key(&j, "gil_requested");
            jw_tristate(&j, th->gil_requested);
            jw_key(&j, "exception");
            jw_tristate(&j, th->exception);
            jw_end_object(&j);
            if (th->error) {
                jw_key(&j, "error");
                jw_string(&j, fp_error_describe(th->error));
            }
            jw_key(&j, "frames");
            jw_begin_array(&j);
            for (size_t f = th->first_frame; f < th->first_frame + th->frame_count; f++) {
                const fp_frame *fr = fp_sample_get_frame(sm, f);
                jw_begin_object(&j);
                cli_json_frame_fields(&j, fr);
                jw_key(&j, "kind");
                jw_string(&j, kind_name(fr->kind));
                jw_end_object(&j);
            }
            jw_end_array(&j);
            jw_end_object(&j);
        }
        jw_end_array(&j);
        jw_end_object(&j);
    }
    jw_end_array(&j);
    jw_end_object(&j);
    fputc('\n', out);
}

static const char *tri(int v, const char *yes)
{
    return v == FP_YES ? yes : "";
}

void cli_output_text(FILE *out, int pid, const fp_python_info *py, const char *reader, const fp_sample *sm)
{
    fprintf(out, "Process %d: CPython %s%s%s%s (reader: %s)\n", pid, py->version,
            py->free_threaded ? ", free-threaded" : "", py->debug ? ", debug build" : "",
            py->untested ? ", untested version" : "", reader);
    for (size_t i = 0; i < fp_sample_get_interp_count(sm); i++) {
        const fp_interp *in = fp_sample_get_interp(sm, i);
        fprintf(out, "\nInterpreter %" PRId64 " (%zu thread%s)\n", in->id, in->thread_count,
                in->thread_count == 1 ? "" : "s");
        for (size_t t = in->first_thread; t < in->first_thread + in->thread_count; t++) {
            const fp_thread *th = fp_sample_get_thread(sm, t);
            fprintf(out, "\nThread %" PRIu64 " (0x%" PRIx64 ")%s%s%s%s%s\n", th->native_id, th->thread_id,
                    th->main ? " main" : "", tri(th->holds_gil, " [holds GIL]"),
                    tri(th->gil_requested, " [waiting for GIL]"), tri(th->on_cpu, " [on CPU]"),
                    tri(th->exception, " [handling exception]"));
            if (th->error) {
                fprintf(out, "  <stack not available: %s>\n", fp_error_describe(th->error));
                continue;
            }
            if (th->frame_count == 0) {
                fprintf(out, "  <no Python frames>\n");
                continue;
            }
            fprintf(out, "Traceback (most recent call last):\n");
            for (size_t k = th->frame_count; k-- > 0;) {
                const fp_frame *fr = fp_sample_get_frame(sm, th->first_frame + k);
                if (fr->line == FP_POS_NONE)
                    fprintf(out, "  File \"%s\", line ?, in %s\n", fr->file, fr->function);
                else
                    fprintf(out, "  File \"%s\", line %d, in %s\n", fr->file, fr->line, fr->function);
            }
        }
    }
}
