/* out_speedscope.c — speedscope's file format
 * (https://www.speedscope.app/file-format-schema.json): the run's frames
 * shared (name = function, file, line), and one "sampled" profile per
 * thread, named by the thread's name and native id, its samples in time
 * order as frame indices root first, each weighing the sampling period
 * (unit "milliseconds": a thread's weights add up to the time its samples
 * stand for; back to back, unit "none" and weight 1). */
#include <errno.h>
#include <stdlib.h>

#include "json_writer.h"
#include "out.h"

#define SPEEDSCOPE_SCHEMA "https://www.speedscope.app/file-format-schema.json"
#define LABEL_MAX 96
#define NAME_MAX_LEN 160
#define MS_PER_S 1000.0

int fpr_write_speedscope(FILE *out, const fpr_profile *p, const fpr_run *run)
{
    uint32_t *frames = malloc((fpr_profile_max_depth(p) + 1u) * sizeof *frames);
    if (!frames) {
        errno = ENOMEM;
        return -1;
    }
    fp_json j;
    fp_json_init(&j, out);
    fp_json_begin_object(&j);
    fp_json_key(&j, "$schema");
    fp_json_string(&j, SPEEDSCOPE_SCHEMA);
    char name[NAME_MAX_LEN];
    snprintf(name, sizeof name, "frameproof record: pid %d, Python %s, %s mode", run->pid, run->py->version,
             fpr_mode_name(fpr_profile_mode(p)));
    fp_json_key(&j, "name");
    fp_json_string(&j, name);
    fp_json_key(&j, "exporter");
    fp_json_string(&j, "frameproof " FP_VERSION_STRING);
    fp_json_key(&j, "activeProfileIndex");
    fp_json_int(&j, 0);
    fp_json_key(&j, "shared");
    fp_json_begin_object(&j);
    fp_json_key(&j, "frames");
    fp_json_begin_array(&j);
    for (uint32_t i = 0; i < fpr_profile_frame_count(p); i++) {
        const fpr_frame *f = fpr_profile_frame(p, i);
        fp_json_begin_object(&j);
        fp_json_key(&j, "name");
        fp_json_string(&j, f->function);
        fp_json_key(&j, "file");
        fp_json_string(&j, f->file);
        if (f->line != FP_POS_NONE) {
            fp_json_key(&j, "line");
            fp_json_int(&j, f->line);
        }
        fp_json_end_object(&j);
    }
    fp_json_end_array(&j);
    fp_json_end_object(&j);
    const bool timed = run->rate_hz > 0;
    const double weight = timed ? MS_PER_S / run->rate_hz : 1.0;
    fp_json_key(&j, "profiles");
    fp_json_begin_array(&j);
    for (size_t i = 0; i < fpr_profile_thread_count(p); i++) {
        const fpr_thread *t = fpr_profile_thread(p, i);
        char label[LABEL_MAX];
        fpr_thread_label(t, label, sizeof label);
        fp_json_begin_object(&j);
        fp_json_key(&j, "type");
        fp_json_string(&j, "sampled");
        fp_json_key(&j, "name");
        fp_json_string(&j, label);
        fp_json_key(&j, "unit");
        fp_json_string(&j, timed ? "milliseconds" : "none");
        fp_json_key(&j, "startValue");
        fp_json_int(&j, 0);
        fp_json_key(&j, "endValue");
        fp_json_number(&j, weight * (double)t->count);
        fp_json_key(&j, "samples");
        fp_json_begin_array(&j);
        for (size_t k = 0; k < t->count; k++) {
            uint32_t depth = fpr_profile_unfold(p, t->points[k].stack, frames);
            fp_json_begin_array(&j);
            for (uint32_t d = 0; d < depth; d++)
                fp_json_uint(&j, frames[d]);
            fp_json_end_array(&j);
        }
        fp_json_end_array(&j);
        fp_json_key(&j, "weights");
        fp_json_begin_array(&j);
        for (size_t k = 0; k < t->count; k++)
            fp_json_number(&j, weight);
        fp_json_end_array(&j);
        fp_json_end_object(&j);
    }
    fp_json_end_array(&j);
    fp_json_end_object(&j);
    fputc('\n', out);
    free(frames);
    return ferror(out) ? -1 : 0;
}
