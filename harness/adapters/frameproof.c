/* frameproof.c — libframeproof as an unwinder under test: its reader x
 * code-cache configurations, its blocking mode, sampling from the target
 * thread's CPU (colocate.h) and (named only) the stopping of torn threads,
 * declared as data, each one session kept across the checkpoints of a
 * case. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter.h"
#include "colocate.h"
#include "conform.h"
#include "registry.h"
#include "frameproof/frameproof.h"

#define INFO_LEN 160u

typedef struct frameproof_config {
    int reader;            /* enum fp_reader_kind */
    bool cache_code;
    bool blocking;         /* every thread stopped for each sample */
    bool pause_torn;       /* a thread whose walks keep tearing stopped alone */
    bool colocate;         /* each sample made from the CPU the target's running thread last ran on */
} frameproof_config;

typedef struct frameproof_state {
    fp_session *s;
    fp_sample *sm;
    bool colocating;
    bool have_last;        /* sm holds the last usable sample (the thread to follow) */
    fps_colocation col;
    char info[INFO_LEN];
} frameproof_state;

/* Everything libframeproof reports. */
#define FRAMEPROOF_FIELDS CF_FIELDS_ALL

static const frameproof_config CONFIGS[] = {
    {FP_READER_VM, true, false, false, false},
    {FP_READER_VM, false, false, false, false},
    {FP_READER_MEM, true, false, false, false},
    {FP_READER_MEM, false, false, false, false},
    {FP_READER_VM, true, true, false, false},
    {FP_READER_VM, true, false, true, false},
    {FP_READER_VM, true, false, false, true},
    {FP_READER_VM, true, false, true, true},
};

static void detach(void *state)
{
    frameproof_state *st = state;
    if (!st)
        return;
    if (st->colocating)
        fps_colocate_stop(&st->col);
    fp_sample_free(st->sm);
    fp_session_free(st->s);
    free(st);
}

static int attach(const cf_adapter_def *d, const cf_target *t, void **state, char *err, size_t errlen)
{
    const frameproof_config *cfg = d->data;
    frameproof_state *st = calloc(1, sizeof *st);
    if (!st)
        return CF_E_NOMEM;
    fp_options o;
    fp_options_init(&o);
    o.reader = cfg->reader;
    o.cache_code = cfg->cache_code;
    o.cache_frames = cfg->cache_code; /* "cache": the code and frame caches together */
    o.blocking = cfg->blocking;
    o.pause_torn = cfg->pause_torn;
    o.allow_untested = t->allow_untested;
    if (fp_session_new(&o, &st->s) != FP_OK || fp_sample_new(&st->sm) != FP_OK) {
        detach(st);
        return CF_E_NOMEM;
    }
    int rc = fp_session_attach_pid(st->s, t->pid);
    if (rc != FP_OK) {
        snprintf(err, errlen, "attach failed (%s): %s", fp_error_describe(rc), fp_session_get_errmsg(st->s));
        detach(st);
        return rc == FP_E_NOMEM ? CF_E_NOMEM : CF_E_UNWINDER;
    }
    if (cfg->colocate) {
        if (fps_colocate_start(&st->col, t->pid, err, errlen) != FP_OK) {
            detach(st);
            return CF_E_UNWINDER;
        }
        st->colocating = true;
        fp_session_set_retry_hook(st->s, fps_colocate_retry_hook, &st->col);
    }
    fp_python_info py;
    if (fp_session_get_python(st->s, &py) == FP_OK)
        snprintf(st->info, sizeof st->info, "libframeproof %s, %s, CPython %s%s", FP_VERSION_STRING,
                 fp_session_get_reader_name(st->s), py.version, py.untested ? " (untested version)" : "");
    *state = st;
    return CF_OK;
}

/* Copies the session's sample; strings stay the session's until its next
 * sample, which comes after the comparison. */
static int convert(const fp_session *s, const fp_sample *sm, cf_sample *out)
{
    size_t nt = fp_sample_get_thread_count(sm);
    bool first_error = true; /* the session's message is the first failed thread's */
    for (size_t i = 0; i < nt; i++) {
        const fp_thread *th = fp_sample_get_thread(sm, i);
        const char *why = th->error ? (first_error ? fp_session_get_errmsg(s) : fp_error_describe(th->error)) : NULL;
        first_error &= !th->error;
        cf_thread proto = {
            .native_id = th->native_id,
            .thread_id = th->thread_id,
            .interp_id = th->interp_id,
            .main = th->main,
            .exception = th->exception == FP_YES ? CF_YES : th->exception == FP_NO ? CF_NO : CF_UNKNOWN,
            .error = why && *why ? why : th->error ? fp_error_describe(th->error) : NULL,
        };
        if (cf_sample_add_thread(out, &proto, NULL))
            return CF_E_NOMEM;
        for (size_t k = 0; k < th->frame_count; k++) {
            const fp_frame *f = fp_sample_get_frame(sm, th->first_frame + k);
            cf_frame cf = {
                .function = f->function ? f->function : "",
                .name = f->name ? f->name : "",
                .file = f->file ? f->file : "",
                .line = f->line,
                .end_line = f->end_line,
                .column = f->column,
                .end_column = f->end_column,
                .kind = f->kind == FP_FRAME_GENERATOR ? CF_KIND_GENERATOR : CF_KIND_PYTHON,
                .frame_addr = f->frame_addr,
                .instr_offset = f->instr_offset,
            };
            if (cf_sample_add_frame(out, &cf))
                return CF_E_NOMEM;
        }
    }
    return CF_OK;
}

static int sample(void *state, cf_sample *out, char *err, size_t errlen)
{
    frameproof_state *st = state;
    if (st->colocating)
        fps_colocate_follow(&st->col, st->s, st->have_last ? st->sm : NULL);
    int rc = fp_session_sample(st->s, st->sm);
    st->have_last = fp_sample_is_usable(st->sm, rc);
    /* An incomplete sample holds the threads reached; the failed ones carry
     * their error and are reported per thread (fp_session_sample). */
    if (!fp_sample_is_usable(st->sm, rc)) {
        /* Incomplete with no thread to blame (the thread list itself, or
         * the main thread missing from it): nothing of it can be judged. */
        snprintf(err, errlen, "sample failed (%s): %s", fp_error_describe(rc), fp_session_get_errmsg(st->s));
        return rc == FP_E_NOMEM ? CF_E_NOMEM : CF_E_UNWINDER;
    }
    return convert(st->s, st->sm, out);
}

static const char *info(void *state)
{
    const frameproof_state *st = state;
    return st && st->info[0] ? st->info : NULL;
}

#define FRAMEPROOF_DEF_SEL(label, idx, named)                                                          \
    {                                                                                                  \
        .unwinder = "frameproof", .config = label, .fields = FRAMEPROOF_FIELDS,                        \
        .samples_per_checkpoint = CF_SAMPLES_PER_CHECKPOINT, .applies = NULL, .attach = attach,        \
        .sample = sample, .detach = detach, .info = info, .data = &CONFIGS[idx], .named_only = named,  \
    }
#define FRAMEPROOF_DEF(label, idx) FRAMEPROOF_DEF_SEL(label, idx, false)

static const cf_adapter_def DEFS[] = {
    FRAMEPROOF_DEF("vm+cache", 0),
    FRAMEPROOF_DEF("vm+nocache", 1),
    FRAMEPROOF_DEF("mem+cache", 2),
    FRAMEPROOF_DEF("mem+nocache", 3),
    FRAMEPROOF_DEF("vm+cache+blocking", 4),
    FRAMEPROOF_DEF_SEL("vm+cache+pause-torn", 5, true), /* stops target threads: only when asked for by name */
    FRAMEPROOF_DEF("vm+cache+colocate", 6),
    /* record's and bench's default policy (harness/sampler/sampler.h); stops threads: only by name */
    FRAMEPROOF_DEF_SEL("vm+cache+colocate+pause-torn", 7, true),
};

size_t cf_frameproof_defs(cf_adapter_def *out, size_t cap)
{
    size_t n = sizeof DEFS / sizeof DEFS[0];
    for (size_t i = 0; i < n && i < cap; i++)
        out[i] = DEFS[i];
    return n < cap ? n : cap;
}
