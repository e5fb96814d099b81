/* offload.c — the callback thread of an offloaded run (offload.h): one
 * slot, the run's sample and a copy of its outcome, handed over under one
 * mutex.  One, not a ring: a sample's strings belong to the session and
 * last only until its next fp_session_sample, so the callback must be done
 * with an attempt before the next is taken. */
#include "offload.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
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
    bool ending, stopped;
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
            pthread_cond_wait(&q->cv, &q->mu);
            continue;
        }
        bool stop = q->stopped;
        pthread_mutex_unlock(&q->mu);
        if (!stop)
            stop = q->fn(q->ctx, &q->o) != 0; /* the sampling thread leaves a posted slot alone */
        pthread_mutex_lock(&q->mu);
        q->stopped = stop;
        q->posted = false;
        if (q->waiting)
            pthread_cond_broadcast(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

int fps_offload_start(fps_offload **out, fp_sample *sm, fps_deliver fn, void *ctx, char *msg, size_t msglen)
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
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    pthread_attr_t attr;
    struct sched_param prio = {.sched_priority = 0};
    int e = pthread_attr_init(&attr);
    if (!e)
        e = pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
    if (!e)
        e = pthread_attr_setschedpolicy(&attr, SCHED_OTHER);
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
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

bool fps_offload_stopped(fps_offload *q)
{
    pthread_mutex_lock(&q->mu);
    bool stopped = q->stopped;
    pthread_mutex_unlock(&q->mu);
    return stopped;
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

void fps_offload_finish(fps_offload *q)
{
    if (!q)
        return;
    pthread_mutex_lock(&q->mu);
    q->ending = true;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    pthread_join(q->thread, NULL);
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
    free(q);
}
