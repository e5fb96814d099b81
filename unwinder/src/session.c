/* session.c — the public session API: options, attaching to a process or
 * any reader, detaching, and taking samples. */
#include <stdlib.h>
#include <string.h>

#include "locate.h"
#include "proc_state.h"
#include "batch.h"
#include "call_sites.h"
#include "frameproof/pause.h"
#include "session.h"
#include "walk.h"

/* Bytes of a thread state the walker needs beyond its highest used field. */
#define TS_FIELD_WIDTH FPI_PTR_SIZE /* its widest field: a pointer */

/* The smallest fp_options a caller can hold: every field up to pause_torn
 * (the first versioned layout). */
#define OPTIONS_SIZE_MIN (offsetof(fp_options, pause_torn) + sizeof(bool))
/* The end of this library's last field: a newer header's first field may
 * start in the padding after it. */
#define OPTIONS_FIELDS_END (offsetof(fp_options, pause_torn) + sizeof(bool))

/* Is field f inside the caller's struct (its size field)? */
#define OPTION_COVERED(in, f) ((in)->size >= offsetof(fp_options, f) + sizeof (in)->f)
#define OPTION_TAKE(out, in, f)          \
    do {                                 \
        if (OPTION_COVERED(in, f))       \
            (out)->f = (in)->f;          \
    } while (0)

int fp_options_init_size(fp_options *opts, size_t size)
{
    if (!opts || size < OPTIONS_SIZE_MIN)
        return FP_E_INVALID_ARG;
    fp_options d;
    memset(&d, 0, sizeof d);
    d.reader = FP_READER_AUTO;
    d.max_depth = FP_DEFAULT_MAX_DEPTH;
    d.max_threads = FP_DEFAULT_MAX_THREADS;
    d.max_interpreters = FP_DEFAULT_MAX_INTERPRETERS;
    d.cache_code = true;
    d.cache_frames = true;
    d.thread_cpu_state = true;
    /* A newer caller's fields past this library's are left zero: their
     * default. */
    memset(opts, 0, size);
    memcpy(opts, &d, size < sizeof d ? size : sizeof d);
    opts->size = size;
    return FP_OK;
}

/* The library's own copy of the caller's options: each field the caller's
 * size covers, the default for the others (every field is listed below: one
 * left out would silently keep its default).  Bytes past this library's
 * last field must be zero (a newer caller's defaults): anything else asks for
 * an option this library does not have. */
static int options_take(const fp_options *in, fp_options *out)
{
    fp_options_init_size(out, sizeof *out);
    if (!in)
        return FP_OK;
    if (in->size < OPTIONS_SIZE_MIN)
        return FP_E_INVALID_ARG;
    for (size_t i = OPTIONS_FIELDS_END; i < in->size; i++)
        if (((const unsigned char *)in)[i])
            return FP_E_UNSUPPORTED;
    OPTION_TAKE(out, in, reader);
    OPTION_TAKE(out, in, max_depth);
    OPTION_TAKE(out, in, max_threads);
    OPTION_TAKE(out, in, max_interpreters);
    OPTION_TAKE(out, in, cache_code);
    OPTION_TAKE(out, in, thread_cpu_state);
    OPTION_TAKE(out, in, allow_untested);
    OPTION_TAKE(out, in, cache_frames);
    OPTION_TAKE(out, in, blocking);
    OPTION_TAKE(out, in, pause_torn);
    if (!out->max_depth)
        out->max_depth = FP_DEFAULT_MAX_DEPTH;
    if (!out->max_threads)
        out->max_threads = FP_DEFAULT_MAX_THREADS;
    if (!out->max_interpreters)
        out->max_interpreters = FP_DEFAULT_MAX_INTERPRETERS;
    return FP_OK;
}

int fp_session_new(const fp_options *opts, fp_session **out)
{
    if (!out)
        return FP_E_INVALID_ARG;
    *out = NULL;
    fp_session *s = calloc(1, sizeof *s);
    if (!s)
        return FP_E_NOMEM;
    int rc = options_take(opts, &s->opts);
    if (rc) {
        free(s);
        return rc;
    }
    fpi_code_cache_init(&s->cc);
    *out = s;
    return FP_OK;
}

void fp_session_detach(fp_session *s)
{
    if (!s)
        return;
    fp_reader_close(&s->own_reader);
    s->rd = NULL;
    s->attached = false;
    s->pid = 0;
    s->thread_state = NULL;
    s->thread_state_ctx = NULL;
    s->ntypes = 0;
    s->none_obj = 0;
    s->have_generation = false;
    s->async_debug_at = 0;
    s->seen_last.nlast = s->seen_last.ncur = 0;
    s->seen_last.interp = s->seen_last.gilp = 0;
    fpi_code_cache_free(&s->cc);
    fpi_code_cache_init(&s->cc);
    fpi_frame_cache_free(&s->fc); /* keyed on code cache serials, which start again */
}

void fp_session_free(fp_session *s)
{
    if (!s)
        return;
    fp_session_detach(s);
    fpi_chain_free(&s->chain);
    free(s->verify_buf);
    free(s->verify_at);
    fpi_walk_batch_free(s->batch);
    fpi_rb_ahead_free(&s->rb_ahead);
    fpi_rb_ahead_free(&s->rb_retry);
    free(s->retry_buf);
    fpi_read_set_free(&s->retry_read);
    fpi_read_set_free(&s->readback);
    free(s->ahead.pf);
    free(s->ahead.ts_bufs);
    free(s->ahead.chunk_bufs);
    fpi_read_set_free(&s->ahead.first_read);
    free(s->seen_last.last);
    free(s->seen_last.cur);
    free(s->prefetch_buf);
    fpi_read_set_free(&s->prefetch);
    free(s->prefetch_entries);
    fpi_block_cache_free(&s->blocks);
    free(s);
}

const char *fp_session_get_errmsg(const fp_session *s)
{
    return s ? s->err.msg : "";
}

const char *fp_session_get_reader_name(const fp_session *s)
{
    return s && s->rd && s->rd->ops ? s->rd->ops->name : "";
}

int fp_session_get_read_stats(const fp_session *s, fp_read_stats *out)
{
    if (!s || !out)
        return FP_E_INVALID_ARG;
    *out = s->reads;
    return FP_OK;
}

int fp_session_get_python(const fp_session *s, fp_python_info *out)
{
    if (!s || !out)
        return FP_E_INVALID_ARG;
    if (!s->attached)
        return FP_E_STATE;
    *out = s->info;
    return FP_OK;
}

static void finish_attach(fp_session *s)
{
    const fpi_layout *l = &s->layout;
    s->reads = (fp_read_stats){0};
    int32_t fields[] = {l->ts_next, l->ts_interp, l->ts_cframe, l->ts_current_frame, l->ts_base_frame,
                        l->ts_thread_id, l->ts_native_thread_id, l->ts_datastack_chunk, l->ts_datastack_top,
                        l->ts_status, l->ts_holds_gil, l->ts_gil_requested, l->ts_current_exception,
                        l->ts_exc_info, l->ts_exc_state + 8};
    int32_t hi = 0;
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (fields[i] > hi)
            hi = fields[i];
    s->ts_read_len = (size_t)hi + TS_FIELD_WIDTH;
    /* A version newer than the tables numbers its opcodes in a way nothing
     * here knows: no call-site check for it. */
    s->call_sites = s->info.untested ? NULL
                                     : fpi_call_sites_for(s->info.hexversion >> 24, (s->info.hexversion >> 16) & 0xffu);
    s->attached = true;
}

static int open_live_reader(fp_session *s, int pid)
{
    char msg[FPI_ERRMSG_MAX] = "";
    int rc;
    if (s->opts.reader == FP_READER_MEM)
        rc = fp_reader_open_mem(pid, &s->own_reader, msg, sizeof msg);
    else
        rc = fp_reader_open_vm(pid, &s->own_reader, msg, sizeof msg);
    if (rc)
        return fpi_err(&s->err, rc, "%s", msg);
    s->rd = &s->own_reader;
    return FP_OK;
}

int fp_session_attach_pid(fp_session *s, int pid)
{
    if (!s || pid <= 0)
        return s ? fpi_err(&s->err, FP_E_INVALID_ARG, "pid %d: invalid", pid) : FP_E_INVALID_ARG;
    if (s->attached)
        return fpi_err(&s->err, FP_E_STATE, "session: already attached");
    s->err.msg[0] = 0;
    int rc = open_live_reader(s, pid);
    if (rc)
        return rc;
    s->pid = pid;
    rc = fpi_locate_pid(s, pid);
    if (rc) {
        fp_reader_close(&s->own_reader);
        s->rd = NULL;
        s->pid = 0;
        return rc;
    }
    finish_attach(s);
    return FP_OK;
}

int fp_session_attach_reader(fp_session *s, const fp_reader *reader, const fp_target_desc *desc)
{
    if (!s || !reader || !reader->ops || !desc)
        return s ? fpi_err(&s->err, FP_E_INVALID_ARG, "session: missing reader or target description") : FP_E_INVALID_ARG;
    if (s->attached)
        return fpi_err(&s->err, FP_E_STATE, "session: already attached");
    s->err.msg[0] = 0;
    s->rd = reader;
    s->pid = desc->pid;
    s->thread_state = desc->thread_state;
    s->thread_state_ctx = desc->thread_state_ctx;
    fpi_errbuf why = {{0}};
    int rc = fpi_layout_resolve(s, desc->runtime_addr, desc->hexversion, desc->free_threaded, desc->debug, &why);
    if (rc) {
        s->rd = NULL;
        s->pid = 0;
        s->err = why;
        return rc;
    }
    finish_attach(s);
    s->async_debug_at = desc->asyncio_debug_addr;
    return FP_OK;
}

int fp_session_set_retry_hook(fp_session *s, fp_retry_hook hook, void *ctx)
{
    if (!s)
        return FP_E_INVALID_ARG;
    s->retry_hook = hook;
    s->retry_hook_ctx = hook ? ctx : NULL;
    return FP_OK;
}

int fp_session_get_retry_hook(const fp_session *s, fp_retry_hook *hook, void **ctx)
{
    if (!s || !hook || !ctx)
        return FP_E_INVALID_ARG;
    *hook = s->retry_hook;
    *ctx = s->retry_hook_ctx;
    return FP_OK;
}

/* The scheduler state a paused thread had before the stop. */
static char paused_state(void *ctx, uint64_t native_id)
{
    const fp_pause *p = ctx;
    for (size_t i = 0; i < fp_pause_get_thread_count(p); i++)
        if (fp_pause_get_thread_id(p, i) == native_id)
            return fp_pause_get_thread_state(p, i);
    return 0;
}

int fpi_session_walk_stopped(fp_session *s, fp_sample *sm, fp_pause *p)
{
    char (*saved)(void *, uint64_t) = s->thread_state;
    void *saved_ctx = s->thread_state_ctx;
    s->thread_state = paused_state;
    s->thread_state_ctx = p;
    s->all_stopped = true;
    int rc = fpi_walk_all(s, sm);
    s->all_stopped = false;
    s->thread_state = saved;
    s->thread_state_ctx = saved_ctx;
    return rc;
}

/* A blocking sample: every thread stopped for the walk, resumed on every
 * path (and by the kernel if this process dies meanwhile). */
static int sample_paused(fp_session *s, fp_sample *sm)
{
    if (s->pid <= 0)
        return fpi_err(&s->err, FP_E_INVALID_ARG, "blocking sample: the session has no live process to stop");
    fp_pause *p = NULL;
    int rc = fp_pause_new(s->pid, true, &p, s->err.msg, sizeof s->err.msg);
    if (rc)
        return rc;
    rc = fpi_session_walk_stopped(s, sm, p);
    fp_pause_free(p);
    return rc;
}

int fp_session_sample(fp_session *s, fp_sample *sm)
{
    if (!s || !sm)
        return FP_E_INVALID_ARG;
    if (!s->attached)
        return fpi_err(&s->err, FP_E_STATE, "session: not attached");
    s->err.msg[0] = 0;
    int rc = s->opts.blocking ? sample_paused(s, sm) : fpi_walk_all(s, sm);
    if (rc == FP_E_READ && s->pid > 0 && fpi_proc_is_gone(s->pid))
        rc = FP_E_PROCESS_GONE;
    if (rc == FP_E_PROCESS_GONE)
        fpi_err(&s->err, rc, "process %d: exited", s->pid);
    return rc;
}
