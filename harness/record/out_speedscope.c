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
    jw_writer j;
    jw_init(&j, out);
    jw_begin_object(&j);
    jw_key(&j, "$schema");
    jw_string(&j, SPEEDSCOPE_SCHEMA);
    char name[NAME_MAX_LEN];
    snprintf(name, sizeof name, "frameproof record: pid %d, Python %s, %s mode", run->pid, run->py->version,
             fpr_mode_name(fpr_profile_mode(p)));
    jw_key(&j, "name");
    jw_string(&j, name);
    jw_key(&j, "exporter");
    jw_string(&j, "frameproof " FP_VERSION_STRING);
    jw_key(&j, "activeProfileIndex");
    jw_int(&j, 0);
    jw_key(&j, "shared");
    jw_begin_object(&j);
    jw_key(&j, "frames");
    jw_begin_array(&j);
    for (uint32_t i = 0; i < fpr_profile_frame_count(p); i++) {
        const fpr_frame *f = fpr_profile_frame(p, i);
        jw_begin_object(&j);
        jw_key(&j, "name");
        jw_string(&j, f->function);
        jw_key(&j, "file");
        jw_string(&j, f->file);
        if (f->line != FP_POS_NONE) {
            jw_key(&j, "line");
            jw_int(&j, f->line);
        }
        jw_end_object(&j);
    }
    jw_end_array(&j);
    jw_end_object(&j);
    const bool timed = run->rate_hz > 0;
    const double weight = timed ? MS_PER_S / run->rate_hz : 1.0;
    jw_key(&j, "profiles");
    jw_begin_array(&j);
    for (size_t i = 0; i < fpr_profile_thread_count(p); i++) {
        const fpr_thread *t = fpr_profile_thread(p, i);
        char label[LABEL_MAX];
        fpr_thread_label(t, label, sizeof label);
        jw_begin_object(&j);
        jw_key(&j, "type");
        jw_string(&j, "sampled");
        jw_key(&j, "name");
        jw_string(&j, label);
        jw_key(&j, "unit");
        jw_string(&j, timed ? "milliseconds" : "none");
        jw_key(&j, "startValue");
        jw_int(&j, 0);
        jw_key(&j, "endValue");
        jw_number(&j, weight * (double)t->count);
        jw_key(&j, "samples");
        jw_begin_array(&j);
        for (size_t k = 0; k < t->count; k++) {
            uint32_t depth = fpr_profile_unfold(p, t->points[k].stack, frames);
            jw_begin_array(&j);
            for (uint32_t d = 0; d < depth; d++)
                jw_uint(&j, frames[d]);
            jw_end_array(&j);
        }
        jw_end_array(&j);
        jw_key(&j, "weights");
        jw_begin_array(&j);
        for (size_t k = 0; k < t->count; k++)
            jw_number(&j, weight);
        jw_end_array(&j);
        jw_end_object(&j);
    }
    jw_end_array(&j);
    jw_end_object(&j);
    fputc('\n', out);
    free(frames);
    return ferror(out) ? -1 : 0;
}
