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

static void begin(fp_json *j, FILE *out, const char *type)
{
    fp_json_init(j, out);
    fp_json_begin_object(j);
    fp_json_key(j, "type");
    fp_json_string(j, type);
}

static void end(fp_json *j, FILE *out)
{
    fp_json_end_object(j);
    fputc('\n', out);
}

static void header(FILE *out, const fpr_profile *p, const fpr_run *run)
{
    fp_json j;
    begin(&j, out, "header");
    fp_json_key(&j, "format");
    fp_json_string(&j, RECORD_FORMAT_NAME);
    fp_json_key(&j, "version");
    fp_json_int(&j, RECORD_FORMAT_VERSION);
    fp_json_key(&j, "frameproof");
    fp_json_string(&j, FP_VERSION_STRING);
    fp_json_key(&j, "pid");
    fp_json_int(&j, run->pid);
    fp_json_key(&j, "python");
    fp_json_string(&j, run->py->version);
    fp_json_key(&j, "free_threaded");
    fp_json_bool(&j, run->py->free_threaded);
    fp_json_key(&j, "debug");
    fp_json_bool(&j, run->py->debug);
    fp_json_key(&j, "reader");
    fp_json_string(&j, run->reader);
    fp_json_key(&j, "mode");
    fp_json_string(&j, fpr_mode_name(fpr_profile_mode(p)));
    fp_json_key(&j, "rate_hz");
    fp_json_number(&j, run->rate_hz);
    fp_json_key(&j, "poisson");
    fp_json_bool(&j, run->poisson);
    fp_json_key(&j, "blocking");
    fp_json_bool(&j, run->blocking);
    fp_json_key(&j, "realtime");
    fp_json_bool(&j, run->realtime);
    fp_json_key(&j, "colocate");
    fp_json_bool(&j, run->colocate);
    fp_json_key(&j, "hold");
    fp_json_bool(&j, run->hold);
    end(&j, out);
}

/* The thread, frame and stack records with ids from *threads, *frames and
 * *stacks on (those not written yet), then the counts written so far. */
static void tables_from(FILE *out, const fpr_profile *p, size_t *threads, uint32_t *frames, uint32_t *stacks)
{
    fp_json j;
    for (size_t i = *threads; i < fpr_profile_thread_count(p); i++) {
        const fpr_thread *t = fpr_profile_thread(p, i);
        begin(&j, out, "thread");
        fp_json_key(&j, "id");
        fp_json_uint(&j, i);
        fp_json_key(&j, "native_id");
        fp_json_uint(&j, t->native_id);
        fp_json_key(&j, "interp");
        fp_json_int(&j, t->interp_id);
        fp_json_key(&j, "main");
        fp_json_bool(&j, t->main);
        fp_json_key(&j, "name");
        fp_json_string(&j, t->name);
        end(&j, out);
    }
    *threads = fpr_profile_thread_count(p);
    for (uint32_t i = *frames; i < fpr_profile_frame_count(p); i++) {
        const fpr_frame *f = fpr_profile_frame(p, i);
        begin(&j, out, "frame");
        fp_json_key(&j, "id");
        fp_json_uint(&j, i);
        fp_json_key(&j, "function");
        fp_json_string(&j, f->function);
        fp_json_key(&j, "file");
        fp_json_string(&j, f->file);
        fp_json_key(&j, "line");
        fp_json_int_or_null(&j, f->line, FP_POS_NONE);
        end(&j, out);
    }
    *frames = (uint32_t)fpr_profile_frame_count(p);
    for (uint32_t i = *stacks; i < fpr_profile_stack_count(p); i++) {
        const fpr_stack *s = fpr_profile_stack(p, i);
        begin(&j, out, "stack");
        fp_json_key(&j, "id");
        fp_json_uint(&j, i);
        fp_json_key(&j, "parent");
        if (s->parent == FPR_NO_STACK)
            fp_json_null(&j);
        else
            fp_json_uint(&j, s->parent);
        fp_json_key(&j, "frame");
        fp_json_uint(&j, s->frame);
        end(&j, out);
    }
    *stacks = (uint32_t)fpr_profile_stack_count(p);
}

static void sample_record(FILE *out, size_t thread, const fpr_point *pt)
{
    fp_json j;
    begin(&j, out, "sample");
    fp_json_key(&j, "t_ns");
    fp_json_int(&j, pt->t_ns);
    fp_json_key(&j, "thread");
    fp_json_uint(&j, thread);
    fp_json_key(&j, "stack");
    fp_json_uint(&j, pt->stack);
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
    fp_json j;
    begin(&j, out, "summary");
    fp_json_key(&j, "elapsed_s");
    fp_json_number(&j, st->elapsed_s);
    fp_json_key(&j, "attempts");
    fp_json_uint(&j, st->attempts);
    fp_json_key(&j, "ok");
    fp_json_uint(&j, st->ok);
    fp_json_key(&j, "transient");
    fp_json_uint(&j, st->transient);
    fp_json_key(&j, "fatal");
    fp_json_uint(&j, st->fatal);
    fp_json_key(&j, "errors");
    fp_json_begin_object(&j);
    for (int k = 1; k < FPS_ERROR_SLOTS; k++)
        if (st->by_error[k]) {
            fp_json_key(&j, fp_error_describe(-k));
            fp_json_uint(&j, st->by_error[k]);
        }
    fp_json_end_object(&j);
    fp_json_key(&j, "missed_ticks");
    fp_json_uint(&j, st->missed_ticks);
    fp_json_key(&j, "achieved_rate_hz");
    fp_json_number(&j, st->achieved_rate_hz);
    fp_json_key(&j, "mean_sample_us");
    fp_json_number(&j, run->mean_sample_us);
    fp_json_key(&j, "torn_walks");
    fp_json_uint(&j, run->torn_walks);
    fp_json_key(&j, "paused_walks");
    fp_json_uint(&j, run->paused_walks);
    fp_json_key(&j, "thread_samples");
    fp_json_uint(&j, fpr_profile_points(p));
    fp_json_key(&j, "torn_threads");
    fp_json_uint(&j, d->torn_threads);
    fp_json_key(&j, "idle_threads");
    fp_json_uint(&j, d->idle_threads);
    fp_json_key(&j, "mode_threads");
    fp_json_uint(&j, d->mode_threads);
    fp_json_key(&j, "unknown_state");
    fp_json_uint(&j, d->unknown_state);
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
