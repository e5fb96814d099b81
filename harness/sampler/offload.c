/* offload.c — the callback thread of an offloaded run (offload.h): a ring
 * of slots, each a sample and a copy of its outcome, handed over in order
 * under one mutex.  The thread is not woken for each attempt (a wake-up
 * costs the sampling thread microseconds on the held CPU): it drains the
 * ring every FPS_OFFLOAD_PERIOD_NS, and is woken early only when half the
 * ring is taken or the sampling thread waits for a slot. */
#include "offload.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SLOTS FPS_OFFLOAD_SLOTS

typedef struct slot {
    fp_sample *sm;
    bool posted;                       /* handed over, not yet delivered */
    fps_outcome o;
    char errmsg[FPS_ERRMSG_MAX];
    uint64_t skip[FPS_TORN_IDS_MAX];
} slot;

struct fps_offload {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;                 /* a slot posted, a slot freed, or the end */
    slot slots[SLOTS];
    unsigned next_fill, next_deliver;  /* slot indexes, modulo SLOTS */
    unsigned posted;                   /* slots handed over and not yet delivered */
    bool ending, stopped;
    bool waiting;                      /* the sampling thread waits for a slot */
    int avoided;                       /* the CPU the thread is kept off, or -1 */
    fps_deliver fn;
    void *ctx;
};

static void *deliver_loop(void *arg)
{
    fps_offload *q = arg;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        slot *sl = &q->slots[q->next_deliver % SLOTS];
        if (!sl->posted) {
            if (q->ending)
                break;
            struct timespec until;
            clock_gettime(CLOCK_MONOTONIC, &until);
            until.tv_nsec += FPS_OFFLOAD_PERIOD_NS;
            until.tv_sec += until.tv_nsec / 1000000000L;
            until.tv_nsec %= 1000000000L;
            pthread_cond_timedwait(&q->cv, &q->mu, &until);
            continue;
        }
        bool stop = q->stopped;
        pthread_mutex_unlock(&q->mu);
        if (!stop)
            stop = q->fn(q->ctx, &sl->o) != 0; /* the sampling thread leaves a posted slot alone */
        pthread_mutex_lock(&q->mu);
        q->stopped = stop;
        sl->posted = false;
        q->posted--;
        q->next_deliver++;
        if (q->waiting)
            pthread_cond_broadcast(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

/* Frees q and the samples it allocated (every slot's but the first). */
static void free_samples(fps_offload *q)
{
    for (size_t i = 1; q && i < SLOTS; i++)
        fp_sample_free(q->slots[i].sm);
    free(q);
}

int fps_offload_start(fps_offload **out, fp_sample *first, fps_deliver fn, void *ctx, char *msg, size_t msglen)
{
    *out = NULL;
    fps_offload *q = calloc(1, sizeof *q);
    bool ok = q != NULL;
    for (size_t i = 1; ok && i < SLOTS; i++)
        ok = fp_sample_new(&q->slots[i].sm) == FP_OK;
    if (!ok) {
        free_samples(q);
        snprintf(msg, msglen, "out of memory for the callback thread's samples");
        return FP_E_NOMEM;
    }
    q->slots[0].sm = first;
    q->fn = fn;
    q->ctx = ctx;
    q->avoided = -1;
    pthread_mutex_init(&q->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* the drain period's deadlines are on this clock */
    pthread_cond_init(&q->cv, &ca);
    pthread_condattr_destroy(&ca);
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
        free_samples(q);
        return FP_E_IO;
    }
    *out = q;
    return FP_OK;
}

fp_sample *fps_offload_next(fps_offload *q)
{
    slot *sl = &q->slots[q->next_fill % SLOTS];
    pthread_mutex_lock(&q->mu);
    while (sl->posted) {
        q->waiting = true;
        pthread_cond_broadcast(&q->cv);
        pthread_cond_wait(&q->cv, &q->mu);
    }
    q->waiting = false;
    pthread_mutex_unlock(&q->mu);
    return sl->sm;
}

void fps_offload_post(fps_offload *q, const fps_outcome *o)
{
    slot *sl = &q->slots[q->next_fill % SLOTS];
    sl->o = *o;
    snprintf(sl->errmsg, sizeof sl->errmsg, "%s", o->errmsg ? o->errmsg : "");
    sl->o.errmsg = sl->errmsg;
    size_t n = o->nskip < FPS_TORN_IDS_MAX ? o->nskip : FPS_TORN_IDS_MAX;
    if (n)
        memcpy(sl->skip, o->skip_ids, n * sizeof *sl->skip);
    sl->o.skip_ids = n ? sl->skip : NULL;
    sl->o.nskip = n;
    pthread_mutex_lock(&q->mu);
    sl->posted = true;
    q->next_fill++;
    if (++q->posted >= SLOTS / 2)
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
    free_samples(q);
}
