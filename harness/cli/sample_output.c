/* sample_output.c — renders a sample as the `dump --json` schema (frames
 * innermost first, unknown values null) or as a traceback per thread. */
#include <inttypes.h>

#include "json_writer.h"
#include "sample_output.h"

static const char *kind_name(int kind)
{
    return kind == FP_FRAME_GENERATOR ? "generator" : "python";
}

void cli_output_json(FILE *out, int pid, const fp_python_info *py, const fp_sample *sm)
{
    fp_json j;
    fp_json_init(&j, out);
    fp_json_begin_object(&j);
    fp_json_key(&j, "pid");
    fp_json_int(&j, pid);
    fp_json_key(&j, "python");
    fp_json_begin_object(&j);
    fp_json_key(&j, "version");
    fp_json_string(&j, py->version);
    fp_json_key(&j, "hexversion");
    fp_json_uint(&j, py->hexversion);
    fp_json_key(&j, "free_threaded");
    fp_json_bool(&j, py->free_threaded);
    fp_json_key(&j, "debug");
    fp_json_bool(&j, py->debug);
    if (py->untested) { /* only then, so supported versions keep the documented schema */
        fp_json_key(&j, "untested");
        fp_json_bool(&j, true);
    }
    fp_json_end_object(&j);
    fp_json_key(&j, "interpreters");
    fp_json_begin_array(&j);
    for (size_t i = 0; i < fp_sample_get_interp_count(sm); i++) {
        const fp_interp *in = fp_sample_get_interp(sm, i);
        fp_json_begin_object(&j);
        fp_json_key(&j, "id");
        fp_json_int(&j, in->id);
        fp_json_key(&j, "threads");
        fp_json_begin_array(&j);
        for (size_t t = in->first_thread; t < in->first_thread + in->thread_count; t++) {
            const fp_thread *th = fp_sample_get_thread(sm, t);
            fp_json_begin_object(&j);
            fp_json_key(&j, "native_id");
            fp_json_uint(&j, th->native_id);
            fp_json_key(&j, "thread_id");
            fp_json_uint(&j, th->thread_id);
            fp_json_key(&j, "main");
            fp_json_bool(&j, th->main);
            fp_json_key(&j, "status");
            fp_json_begin_object(&j);
            fp_json_key(&j, "gil");
            fp_json_tristate(&j, th->holds_gil);
            fp_json_key(&j, "on_cpu");
            fp_json_tristate(&j, th->on_cpu);
            fp_json_key(&j, "gil_requested");
            fp_json_tristate(&j, th->gil_requested);
            fp_json_key(&j, "exception");
            fp_json_tristate(&j, th->exception);
            fp_json_end_object(&j);
            if (th->error) {
                fp_json_key(&j, "error");
                fp_json_string(&j, fp_error_describe(th->error));
            }
            fp_json_key(&j, "frames");
            fp_json_begin_array(&j);
            for (size_t f = th->first_frame; f < th->first_frame + th->frame_count; f++) {
                const fp_frame *fr = fp_sample_get_frame(sm, f);
                fp_json_begin_object(&j);
                fp_json_key(&j, "function");
                fp_json_string(&j, fr->function);
                fp_json_key(&j, "name");
                fp_json_string(&j, fr->name);
                fp_json_key(&j, "file");
                fp_json_string(&j, fr->file);
                fp_json_key(&j, "line");
                fp_json_int_or_null(&j, fr->line, FP_POS_NONE);
                fp_json_key(&j, "end_line");
                fp_json_int_or_null(&j, fr->end_line, FP_POS_NONE);
                fp_json_key(&j, "column");
                fp_json_int_or_null(&j, fr->column, FP_POS_NONE);
                fp_json_key(&j, "end_column");
                fp_json_int_or_null(&j, fr->end_column, FP_POS_NONE);
                fp_json_key(&j, "kind");
                fp_json_string(&j, kind_name(fr->kind));
                fp_json_end_object(&j);
            }
            fp_json_end_array(&j);
            fp_json_end_object(&j);
        }
        fp_json_end_array(&j);
        fp_json_end_object(&j);
    }
    fp_json_end_array(&j);
    fp_json_end_object(&j);
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
