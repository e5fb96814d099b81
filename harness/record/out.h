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
/* The file name extension of a format's default output file, without the
 * dot: "txt", "speedscope.json", "jsonl", "gecko.json". */
const char *fpr_format_extension(int format);

/* What the outputs say about the run besides the profile. */
typedef struct fpr_run {
    int pid;
    const fp_python_info *py;
    const char *reader;       /* fp_session_get_reader_name() */
    double rate_hz;           /* requested; 0 = back to back */
    bool poisson;
    bool blocking;
    bool realtime;            /* sampled at real-time priority (record --realtime) */
    bool colocate;            /* sampled from the target thread's CPU (record --colocate) */
    bool hold;                /* that thread held on the sampler's CPU while read (record's default; --no-hold) */
    const fps_stats *stats;   /* the sampling run's outcome */
    uint64_t torn_walks;      /* fp_read_stats.torn: thread walks the target changed under, walked again */
    uint64_t paused_walks;    /* fp_read_stats.paused: walked again with their thread stopped (--pause-torn) */
    double mean_sample_us;    /* mean time inside fp_session_sample */
    const char *async_mode;   /* record --async: "running" or "all" (task stacks); NULL: thread stacks */
} fpr_run;

/* Writes profile p in the given format to out.  Returns 0, or -1 when
 * writing failed (errno tells why) or memory ran out (errno ENOMEM). */
int fpr_write(FILE *out, int format, const fpr_profile *p, const fpr_run *run);

int fpr_write_collapsed(FILE *out, const fpr_profile *p);
int fpr_write_speedscope(FILE *out, const fpr_profile *p, const fpr_run *run);
int fpr_write_json(FILE *out, const fpr_profile *p, const fpr_run *run);
int fpr_write_gecko(FILE *out, const fpr_profile *p, const fpr_run *run);

/* --format json as a stream: the header when sampling starts
 * (fpr_json_stream_open), each sample's records as it is taken — the
 * threads, frames and stacks it is the first to use, then its samples
 * (fpr_json_stream_sample, after fpr_profile_add) — and the summary at the
 * end (fpr_json_stream_close, which frees the stream; fpr_json_stream_free
 * drops one that never ran).  flush_each: flush
 * after every sample (a pipe or a terminal: a reader sees each sample as
 * it is taken).  Each returns 0, or -1 when writing failed or memory ran
 * out (errno tells). */
typedef struct fpr_json_stream fpr_json_stream;
int fpr_json_stream_open(FILE *out, const fpr_profile *p, const fpr_run *run, bool flush_each,
                         fpr_json_stream **st);
int fpr_json_stream_sample(fpr_json_stream *st, const fpr_profile *p);
int fpr_json_stream_close(fpr_json_stream *st, const fpr_profile *p, const fpr_run *run);
/* Frees a stream without ending it (no summary); NULL is ignored. */
void fpr_json_stream_free(fpr_json_stream *st);

/* A thread's display name: its name, or "thread" when it has none, then
 * " (NATIVE_ID)"; writes at most size bytes. */
void fpr_thread_label(const fpr_thread *t, char *buf, size_t size);

#endif
