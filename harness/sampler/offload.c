/* offload.c — the callback thread of an offloaded run (offload.h): one
 * slot, the run's sample and a copy of its outcome, handed over under one
 * mutex.  One, not a ring: a sample's strings belong to the session and
 * last only until its next fp_session_sample, so the callback must be done
 * with an attempt before the next is taken.  Waking the thread from the
 * sampling thread would cost the held CPU a futex wake and an IPI per
 * tick, so when the sampling thread says when it expects to hand the next
 * attempt over (fps_offload_expect) the thread sleeps until then on a
 * timer of its own CPU, and is signalled only when it waits already.
 * Per attempt the sampling thread takes the mutex twice (the slot free,
 * the slot posted); the expected time and the stop are atomics it reads
 * or writes without it. */
#include "offload.h"

#include "clock.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fps_offload {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;                 /* the slot posted, the slot freed, or the end */
    fp_sample *sm;                     /* the run's sample */
    bool posted;                       /* an attempt handed over, not yet delivered */
    bool waiting;                      /* the sampling thread waits for the slot */
    bool ending;
    atomic_bool stopped;               /* the callback asked to stop */
    bool idle;                         /* the thread waits for the condition (to be signalled) */
    _Atomic int64_t due_ns;            /* fps_clock_ns time the next hand-over is expected by (0: none) */
    uint64_t signals;                  /* hand-overs that woke the thread */
    fps_outcome o;
    char errmsg[FPS_ERRMSG_MAX];
    uint64_t skip[FPS_TORN_IDS_MAX];
    int avoided;                       /* the CPU the thread is kept off, or -1 */
    fps_deliver fn;
    void *ctx;
};

static void *deliver_loop(void *arg)
{
    fps_offload *q = arg;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        if (!q->posted) {
            if (q->ending)
                break;
            const int64_t due = atomic_load_explicit(&q->due_ns, memory_order_relaxed);
            if (due > fps_clock_ns()) {
                pthread_mutex_unlock(&q->mu);
                (void)fps_sleep_until(due); /* fails only for a time out of range, which fps_clock_ns never gives */
                pthread_mutex_lock(&q->mu);
                continue;
            }
            q->idle = true; /* not handed over when expected (or no time said): the hand-over signals */
            pthread_cond_wait(&q->cv, &q->mu);
            q->idle = false;
            continue;
        }
        pthread_mutex_unlock(&q->mu);
        if (!atomic_load(&q->stopped) && q->fn(q->ctx, &q->o) != 0) /* the sampling thread leaves a posted slot alone */
            atomic_store(&q->stopped, true);
        pthread_mutex_lock(&q->mu);
        q->posted = false;
        if (q->waiting)
            pthread_cond_broadcast(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

int fps_offload_start(fps_offload **out, fp_sample *sm, int rt_priority, fps_deliver fn, void *ctx, char *msg,
                      size_t msglen)
{
    *out = NULL;
    fps_offload *q = calloc(1, sizeof *q);
    if (!q) {
        snprintf(msg, msglen, "out of memory for the callback thread");
        return FP_E_NOMEM;
    }
    q->sm = sm;
    q->fn = fn;
    q->ctx = ctx;
    q->avoided = -1;
    atomic_init(&q->stopped, false);
    atomic_init(&q->due_ns, 0);
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    pthread_attr_t attr;
    struct sched_param prio = {.sched_priority = rt_priority};
    int e = pthread_attr_init(&attr);
    if (!e)
        e = pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
    if (!e)
        e = pthread_attr_setschedpolicy(&attr, rt_priority > 0 ? SCHED_FIFO : SCHED_OTHER);
    if (!e)
        e = pthread_attr_setschedparam(&attr, &prio);
    if (!e)
        e = pthread_create(&q->thread, &attr, deliver_loop, q);
    pthread_attr_destroy(&attr);
    if (e) {
        snprintf(msg, msglen, "cannot start the callback thread: %s", strerror(e));
        pthread_cond_destroy(&q->cv);
        pthread_mutex_destroy(&q->mu);
        free(q);
        return FP_E_IO;
    }
    *out = q;
    return FP_OK;
}

fp_sample *fps_offload_next(fps_offload *q)
{
    pthread_mutex_lock(&q->mu);
    while (q->posted) {
        q->waiting = true;
        pthread_cond_wait(&q->cv, &q->mu);
    }
    q->waiting = false;
    pthread_mutex_unlock(&q->mu);
    return q->sm;
}

void fps_offload_post(fps_offload *q, const fps_outcome *o)
{
    q->o = *o;
    snprintf(q->errmsg, sizeof q->errmsg, "%s", o->errmsg ? o->errmsg : "");
    q->o.errmsg = q->errmsg;
    size_t n = o->nskip < FPS_TORN_IDS_MAX ? o->nskip : FPS_TORN_IDS_MAX;
    if (n)
        memcpy(q->skip, o->skip_ids, n * sizeof *q->skip);
    q->o.skip_ids = n ? q->skip : NULL;
    q->o.nskip = n;
    pthread_mutex_lock(&q->mu);
    q->posted = true;
    if (q->idle) {
        q->signals++;
        pthread_cond_broadcast(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
}

void fps_offload_expect(fps_offload *q, int64_t at_ns)
{
    atomic_store_explicit(&q->due_ns, at_ns, memory_order_relaxed); /* read again by the thread at its next look */
}

bool fps_offload_stopped(fps_offload *q)
{
    return atomic_load(&q->stopped);
}

void fps_offload_avoid(fps_offload *q, int cpu, const void *mask, size_t len)
{
    if (cpu == q->avoided)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    memcpy(&set, mask, len < sizeof set ? len : sizeof set);
    if (cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET(cpu, &set) && CPU_COUNT(&set) > 1)
        CPU_CLR(cpu, &set);
    if (pthread_setaffinity_np(q->thread, sizeof set, &set) == 0) /* refused: it runs where the kernel puts it */
        q->avoided = cpu;
}

uint64_t fps_offload_finish(fps_offload *q)
{
    if (!q)
        return 0;
    pthread_mutex_lock(&q->mu);
    q->ending = true;
    atomic_store(&q->due_ns, 0);
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    pthread_join(q->thread, NULL); /* a timed sleep ends by its time, at most one tick away */
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
    const uint64_t signals = q->signals;
    free(q);
    return signals;
}
