/* out_collapsed.c — folded stacks ("collapsed"), the input of
 * flamegraph.pl, inferno and speedscope: one line per distinct stack of a
 * thread, "THREAD;FRAME;...;FRAME COUNT", root first, where THREAD is
 * "NAME (NATIVE_ID)" and FRAME is "FUNCTION (FILE:LINE)" (":LINE" left out
 * when the line is unknown).  ';' separates frames and the count follows
 * the last space, so ';', CR and LF inside a name are written as '?'. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "out.h"

#define LABEL_MAX 96 /* a thread label: name, space, parenthesised id */

static void put_clean(FILE *out, const char *s)
{
    for (; *s; s++)
        fputc(*s == ';' || *s == '\n' || *s == '\r' ? '?' : *s, out);
}

static void put_frame(FILE *out, const fpr_frame *f)
{
    put_clean(out, f->function);
    fputs(" (", out);
    put_clean(out, f->file);
    if (f->line != FP_POS_NONE)
        fprintf(out, ":%" PRId32, f->line);
    fputc(')', out);
}

int fpr_write_collapsed(FILE *out, const fpr_profile *p)
{
    size_t nstacks = fpr_profile_stack_count(p);
    uint64_t *counts = calloc(nstacks ? nstacks : 1, sizeof *counts);
    uint32_t *frames = malloc((fpr_profile_max_depth(p) + 1u) * sizeof *frames);
    if (!counts || !frames) {
        free(counts);
        free(frames);
        errno = ENOMEM;
        return -1;
    }
    for (size_t i = 0; i < fpr_profile_thread_count(p); i++) {
        const fpr_thread *t = fpr_profile_thread(p, i);
        char label[LABEL_MAX];
        fpr_thread_label(t, label, sizeof label);
        for (size_t k = 0; k < t->count; k++)
            counts[t->points[k].stack]++;
        for (uint32_t s = 0; s < nstacks; s++) {
            if (!counts[s])
                continue;
            put_clean(out, label);
            uint32_t depth = fpr_profile_unfold(p, s, frames);
            for (uint32_t d = 0; d < depth; d++) {
                fputc(';', out);
                put_frame(out, fpr_profile_frame(p, frames[d]));
            }
            fprintf(out, " %" PRIu64 "\n", counts[s]);
            counts[s] = 0;
        }
    }
    free(counts);
    free(frames);
    return ferror(out) ? -1 : 0;
}
