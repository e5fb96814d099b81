/* retry.c — a running thread changes under the walker: a walk of it that
 * fails is tried again (its retry read in one read: retry_read.c), the
 * caller's retry hook told first, and, with fp_options.pause_torn, a
 * thread that keeps tearing is stopped alone for one walk.  A retry is
 * not made through a link that now names another thread state: the
 * interpreter's list is walked again from its head instead (walk.c). */
#include <limits.h>

#include "pause_thread.h"
#include "read.h"
#include "retry.h"
#include "retry_read.h"
#include "thread.h"
#include "thread_list.h"

/* What a thread stopped by walk_thread_paused was doing before its stop
 * (its /proc state reads "traced" while stopped). */
static char paused_thread_state(void *ctx, uint64_t native_id)
{
    const fpi_paused_thread *t = ctx;
    return native_id == (uint64_t)t->tid ? t->state : 0;
}

/* The native id the last attempt read for the thread walked from entry
 * nthreads of sm (0 when it read none). */
static uint64_t walked_thread_id(const fp_sample *sm, size_t nthreads)
{
    return sm->nthreads > nthreads ? sm->threads[nthreads].native_id : 0;
}

/* fp_options.pause_torn: the thread whose walks keep tearing (its native
 * id as the last attempt read it) is stopped alone and walked once more,
 * every check on, then resumed.  False when it could not be stopped (not
 * one of the process's threads, another tracer, not permitted): the
 * caller retries as without the option. */
static bool walk_thread_paused(fp_session *s, fp_sample *sm, fpi_interp_info *ii, uint64_t link, uint64_t ts,
                               size_t nthreads, size_t nframes, uint64_t *next, int *rc)
{
    uint64_t tid = walked_thread_id(sm, nthreads);
    fpi_paused_thread pt;
    char why[FPI_ERRMSG_MAX];
    if (tid == 0 || tid > (uint64_t)LONG_MAX || fpi_pause_thread(s->pid, (long)tid, &pt, why, sizeof why) != FP_OK)
        return false;
    s->reads.paused++;
    char (*saved)(void *, uint64_t) = s->thread_state;
    void *saved_ctx = s->thread_state_ctx;
    s->thread_state = paused_thread_state;
    s->thread_state_ctx = &pt;
    sm->nthreads = nthreads;
    sm->nframes = nframes;
    fpi_thread_walk w = {.link = link, .ts = ts, .chain = &s->chain, .next = *next, .stopped = true, .alone = true};
    *rc = fpi_walk_thread_once(s, sm, ii, &w);
    *next = w.next;
    if (*rc == FP_E_INCOMPLETE)
        s->reads.torn++; /* the list changed around it, or another thread's generator */
    s->thread_state = saved;
    s->thread_state_ctx = saved_ctx;
    fpi_resume_thread(&pt);
    return true;
}

/* A running thread changes under the walker; a walk that fails for any
 * reason but the process vanishing is retried from its thread state
 * (with fp_options.pause_torn, after FPI_PAUSE_TORN_AFTER torn walks, with
 * the thread stopped).  *link_left: the retries ended because the link
 * that led to the thread state was read naming *link_now (fpi_walk_all then
 * walks the list again from its head without reading the link again). */
int fpi_walk_thread(fp_session *s, fp_sample *sm, fpi_interp_info *ii, const fpi_thread_at *at, uint64_t *next,
                    bool *link_left, uint64_t *link_now)
{
    const uint64_t link = at->link, ts = at->ts;
    size_t nthreads = sm->nthreads, nframes = sm->nframes;
    int rc = FP_OK;
    *link_left = false;
    *link_now = 0;
    for (unsigned attempt = 0; attempt < FPI_THREAD_WALK_ATTEMPTS; attempt++) {
        /* The read-backs the last attempt planned become the ones its
         * retry reads ahead (retry_read.c); this attempt's are recorded. */
        fpi_rb_ahead_begin_sample(&s->rb_retry);
        /* The caller hears of a torn walk before its retry (and may move
         * to the CPU the thread runs on: fp_session_set_retry_hook). */
        if (attempt > 0 && rc == FP_E_INCOMPLETE && s->retry_hook)
            s->retry_hook(s->retry_hook_ctx, walked_thread_id(sm, nthreads));
        /* Stopped, the thread is one instant; a walk that still fails
         * stopped it in the middle of an update (a frame or a chunk being
         * pushed or popped): it runs on a little, and is stopped again. */
        if (attempt >= FPI_PAUSE_TORN_AFTER && rc == FP_E_INCOMPLETE && s->opts.pause_torn && s->pid > 0 &&
            walk_thread_paused(s, sm, ii, link, ts, nthreads, nframes, next, &rc)) {
            if (rc != FP_E_INCOMPLETE)
                break;
            continue;
        }
        sm->nthreads = nthreads;
        sm->nframes = nframes;
        /* Retries read afresh, in one read (retry_read.c): the prefetched
         * copy is what failed.  So does the first walk of a thread that
         * the batched read-back found changed: the frame bytes it took
         * from the frame cache may be what changed. */
        fpi_thread_walk w = {
            .link = link,
            .ts = ts,
            .chain = &s->chain,
            .spec_frames = attempt == 0 && !at->fresh && s->opts.cache_frames && s->opts.cache_code,
            .alone = true,
            .next = *next,
        };
        fpi_thread_prefetch again;
        w.pre = attempt == 0 ? at->pre : fpi_retry_read(s, ts, &again) ? &again : NULL;
        rc = fpi_walk_thread_once(s, sm, ii, &w);
        *next = w.next;
        if (rc == FP_E_INCOMPLETE)
            s->reads.torn++;
        if (rc == FP_OK || fpi_walk_fatal(rc) || rc == FP_E_LIMIT)
            break;
        if (rc == FP_E_INCOMPLETE && w.link_moved && (*link_left = fpi_link_moved_from(s, link, ts, link_now)))
            break;
    }
    return rc;
}
