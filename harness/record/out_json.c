/* out_json.c — frameproof's record format for tools: JSON Lines, one
 * record per line, each an object whose "type" says what it is: one
 * "header", then the "thread", "frame" and "stack" records (numbered from
 * 0 by "id"; a stack is its innermost frame on its parent stack, null for
 * a root frame) and every "sample" (thread id, stack id, t_ns since the
 * start) in time order across threads, each record before the first that
 * uses it, then one "summary".  `record` streams it (fpr_json_stream_*: the
 * records of each sample as it is taken); fpr_write_json writes a whole
 * profile at once.  The fields are listed in docs/record-formats.md. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json_writer.h"
#include "out.h"

#define RECORD_FORMAT_NAME "frameproof-record"
#define RECORD_FORMAT_VERSION 1

static void begin(jw_writer *j, FILE *out, const char *type)
{
    jw_init(j, out);
    jw_begin_object(j);
    jw_key(j, "type");
    jw_string(j, type);
}

static void end(jw_writer *j, FILE *out)
{
    jw_end_object(j);
    fputc('\n', out);
}

static void header(FILE *out, const fpr_profile *p, const fpr_run *run)
{
    jw_writer j;
    begin(&j, out, "header");
    jw_key(&j, "format");
    jw_string(&j, RECORD_FORMAT_NAME);
    jw_key(&j, "version");
    jw_int(&j, RECORD_FORMAT_VERSION);
    jw_key(&j, "frameproof");
    jw_string(&j, FP_VERSION_STRING);
    jw_key(&j, "pid");
    jw_int(&j, run->pid);
    jw_key(&j, "python");
    jw_string(&j, run->py->version);
    jw_key(&j, "free_threaded");
    jw_bool(&j, run->py->free_threaded);
    jw_key(&j, "debug");
    jw_bool(&j, run->py->debug);
    jw_key(&j, "reader");
    jw_string(&j, run->reader);
    jw_key(&j, "mode");
    jw_string(&j, fpr_mode_name(fpr_profile_mode(p)));
    jw_key(&j, "rate_hz");
    jw_number(&j, run->rate_hz);
    jw_key(&j, "poisson");
    jw_bool(&j, run->poisson);
    jw_key(&j, "blocking");
    jw_bool(&j, run->blocking);
    jw_key(&j, "realtime");
    jw_bool(&j, run->realtime);
    jw_key(&j, "colocate");
    jw_bool(&j, run->colocate);
    jw_key(&j, "hold");
    jw_bool(&j, run->hold);
    jw_key(&j, "async");
    jw_string_or_null(&j, run->async_mode);
    end(&j, out);
}

/* The thread, frame and stack records with ids from *threads, *frames and
 * *stacks on (those not written yet), then the counts written so far. */
static void tables_from(FILE *out, const fpr_profile *p, size_t *threads, uint32_t *frames, uint32_t *stacks)
{
    jw_writer j;
    for (size_t i = *threads; i < fpr_profile_thread_count(p); i++) {
        const fpr_thread *t = fpr_profile_thread(p, i);
        begin(&j, out, "thread");
        jw_key(&j, "id");
        jw_uint(&j, i);
        jw_key(&j, "native_id");
        jw_uint(&j, t->native_id);
        jw_key(&j, "interp");
        jw_int(&j, t->interp_id);
        jw_key(&j, "main");
        jw_bool(&j, t->main);
        jw_key(&j, "name");
        jw_string(&j, t->name);
        end(&j, out);
    }
    *threads = fpr_profile_thread_count(p);
    for (uint32_t i = *frames; i < fpr_profile_frame_count(p); i++) {
        const fpr_frame *f = fpr_profile_frame(p, i);
        begin(&j, out, "frame");
        jw_key(&j, "id");
        jw_uint(&j, i);
        jw_key(&j, "function");
        jw_string(&j, f->function);
        jw_key(&j, "file");
        jw_string(&j, f->file);
        jw_key(&j, "line");
        jw_int_or_null(&j, f->line, FP_POS_NONE);
        end(&j, out);
    }
    *frames = (uint32_t)fpr_profile_frame_count(p);
    for (uint32_t i = *stacks; i < fpr_profile_stack_count(p); i++) {
        const fpr_stack *s = fpr_profile_stack(p, i);
        begin(&j, out, "stack");
        jw_key(&j, "id");
        jw_uint(&j, i);
        jw_key(&j, "parent");
        if (s->parent == FPR_NO_STACK)
            jw_null(&j);
        else
            jw_uint(&j, s->parent);
        jw_key(&j, "frame");
        jw_uint(&j, s->frame);
        end(&j, out);
    }
    *stacks = (uint32_t)fpr_profile_stack_count(p);
}

static void sample_record(FILE *out, size_t thread, const fpr_point *pt)
{
    jw_writer j;
    begin(&j, out, "sample");
    jw_key(&j, "t_ns");
    jw_int(&j, pt->t_ns);
    jw_key(&j, "thread");
    jw_uint(&j, thread);
    jw_key(&j, "stack");
    jw_uint(&j, pt->stack);
    end(&j, out);
}

/* Every thread's samples merged by time (ties: lower thread id first). */
static int samples(FILE *out, const fpr_profile *p)
{
    size_t n = fpr_profile_thread_count(p);
    size_t *next = calloc(n ? n : 1, sizeof *next);
    if (!next) {
        errno = ENOMEM;
        return -1;
    }
    for (;;) {
        size_t best = n;
        for (size_t i = 0; i < n; i++) {
            const fpr_thread *t = fpr_profile_thread(p, i);
            if (next[i] < t->count &&
                (best == n || t->points[next[i]].t_ns < fpr_profile_thread(p, best)->points[next[best]].t_ns))
                best = i;
        }
        if (best == n)
            break;
        sample_record(out, best, &fpr_profile_thread(p, best)->points[next[best]++]);
    }
    free(next);
    return 0;
}

static void summary(FILE *out, const fpr_profile *p, const fpr_run *run)
{
    const fps_stats *st = run->stats;
    const fpr_dropped *d = fpr_profile_dropped(p);
    jw_writer j;
    begin(&j, out, "summary");
    jw_key(&j, "elapsed_s");
    jw_number(&j, st->elapsed_s);
    jw_key(&j, "attempts");
    jw_uint(&j, st->attempts);
    jw_key(&j, "ok");
    jw_uint(&j, st->ok);
    jw_key(&j, "transient");
    jw_uint(&j, st->transient);
    jw_key(&j, "fatal");
    jw_uint(&j, st->fatal);
    jw_key(&j, "errors");
    jw_begin_object(&j);
    for (int k = 1; k < FPS_ERROR_SLOTS; k++)
        if (st->by_error[k]) {
            jw_key(&j, fp_error_describe(-k));
            jw_uint(&j, st->by_error[k]);
        }
    jw_end_object(&j);
    jw_key(&j, "missed_ticks");
    jw_uint(&j, st->missed_ticks);
    jw_key(&j, "achieved_rate_hz");
    jw_number(&j, st->achieved_rate_hz);
    jw_key(&j, "held_s");
    jw_number(&j, st->held_s);
    jw_key(&j, "mean_sample_us");
    jw_number(&j, run->mean_sample_us);
    jw_key(&j, "torn_walks");
    jw_uint(&j, run->torn_walks);
    jw_key(&j, "paused_walks");
    jw_uint(&j, run->paused_walks);
    jw_key(&j, "thread_samples");
    jw_uint(&j, fpr_profile_points(p));
    jw_key(&j, "torn_threads");
    jw_uint(&j, d->torn_threads);
    jw_key(&j, "idle_threads");
    jw_uint(&j, d->idle_threads);
    jw_key(&j, "mode_threads");
    jw_uint(&j, d->mode_threads);
    jw_key(&j, "unknown_state");
    jw_uint(&j, d->unknown_state);
    end(&j, out);
}

int fpr_write_json(FILE *out, const fpr_profile *p, const fpr_run *run)
{
    size_t threads = 0;
    uint32_t frames = 0, stacks = 0;
    header(out, p, run);
    tables_from(out, p, &threads, &frames, &stacks);
    if (samples(out, p))
        return -1;
    summary(out, p, run);
    return ferror(out) ? -1 : 0;
}

struct fpr_json_stream {
    FILE *out;
    bool flush_each;
    size_t threads;           /* thread records written */
    uint32_t frames, stacks;  /* frame and stack records written */
    size_t *points;           /* per thread: its samples written */
    size_t points_cap;
};

int fpr_json_stream_open(FILE *out, const fpr_profile *p, const fpr_run *run, bool flush_each,
                         fpr_json_stream **st)
{
    fpr_json_stream *js = calloc(1, sizeof *js);
    if (!js) {
        errno = ENOMEM;
        return -1;
    }
    js->out = out;
    js->flush_each = flush_each;
    *st = js;
    header(out, p, run);
    if (flush_each)
        fflush(out);
    return ferror(out) ? -1 : 0;
}

int fpr_json_stream_sample(fpr_json_stream *js, const fpr_profile *p)
{
    size_t n = fpr_profile_thread_count(p);
    if (n > js->points_cap) {
        size_t cap = js->points_cap ? js->points_cap : 16;
        while (cap < n)
            cap *= 2;
        size_t *np = realloc(js->points, cap * sizeof *np);
        if (!np) {
            errno = ENOMEM;
            return -1;
        }
        memset(np + js->points_cap, 0, (cap - js->points_cap) * sizeof *np);
        js->points = np;
        js->points_cap = cap;
    }
    tables_from(js->out, p, &js->threads, &js->frames, &js->stacks);
    /* One sample adds at most one point per thread, all at its time:
     * thread order is time order. */
    for (size_t i = 0; i < n; i++) {
        const fpr_thread *t = fpr_profile_thread(p, i);
        for (; js->points[i] < t->count; js->points[i]++)
            sample_record(js->out, i, &t->points[js->points[i]]);
    }
    if (js->flush_each)
        fflush(js->out);
    return ferror(js->out) ? -1 : 0;
}

int fpr_json_stream_close(fpr_json_stream *js, const fpr_profile *p, const fpr_run *run)
{
    int rc = fpr_json_stream_sample(js, p);
    summary(js->out, p, run);
    fflush(js->out);
    if (ferror(js->out))
        rc = -1;
    fpr_json_stream_free(js);
    return rc;
}

void fpr_json_stream_free(fpr_json_stream *js)
{
    if (!js)
        return;
    free(js->points);
    free(js);
}
