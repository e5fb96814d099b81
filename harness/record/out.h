/* out.h — the output formats of `frameproof record`, one writer per file
 * (out_collapsed.c, out_speedscope.c, out_json.c, out_gecko.c); out.c names them and
 * dispatches.  The formats are described in docs/record-formats.md. */
#ifndef FPR_OUT_H
#define FPR_OUT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "frameproof/frameproof.h"
#include "profile.h"
#include "sampler.h"

enum fpr_format {
    FPR_FORMAT_COLLAPSED = 0,  /* folded stacks with counts (flamegraph.pl, speedscope, inferno) */
    FPR_FORMAT_SPEEDSCOPE = 1, /* speedscope's JSON file format, one sampled profile per thread */
    FPR_FORMAT_JSON = 2,       /* frameproof's line-delimited JSON records */
    FPR_FORMAT_GECKO = 3,      /* the Firefox Profiler's processed profile format */
    FPR_FORMAT_COUNT
};

/* The format named s; -1 for anything else. */
int fpr_format_parse(const char *s);
const char *fpr_format_name(int format);

/* What the outputs say about the run besides the profile. */
typedef struct fpr_run {
    int pid;
    const fp_python_info *py;
    const char *reader;       /* fp_session_reader_name() */
    double rate_hz;           /* requested; 0 = back to back */
    bool poisson;
    bool blocking;
    const fps_stats *stats;   /* the sampling run's outcome */
    uint64_t torn_walks;      /* fp_read_stats.torn: thread walks the target changed under, walked again */
    double mean_sample_us;    /* mean time inside fp_session_sample */
} fpr_run;

/* Writes profile p in the given format to out.  Returns 0, or -1 when
 * writing failed (errno tells why) or memory ran out (errno ENOMEM). */
int fpr_write(FILE *out, int format, const fpr_profile *p, const fpr_run *run);

int fpr_write_collapsed(FILE *out, const fpr_profile *p);
int fpr_write_speedscope(FILE *out, const fpr_profile *p, const fpr_run *run);
int fpr_write_json(FILE *out, const fpr_profile *p, const fpr_run *run);
int fpr_write_gecko(FILE *out, const fpr_profile *p, const fpr_run *run);

/* A thread's display name: its name, or "thread" when it has none, then
 * " (NATIVE_ID)"; writes at most size bytes. */
void fpr_thread_label(const fpr_thread *t, char *buf, size_t size);

#endif
