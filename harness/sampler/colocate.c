/* colocate.c — sampling from the CPU the target's running thread is on
 * (colocate.h): which thread to follow, where it last ran (field 39 of
 * /proc/PID/task/TID/stat, kept open and read again with pread), and the
 * calling thread's move there with sched_setaffinity. */
#include "colocate.h"
#include "clock.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STAT_BYTES 1024    /* a /proc stat line; the comm field is at most 16 bytes */
#define STAT_CPU_FIELD 39  /* "processor": the CPU the thread last ran on (proc(5)) */
#define STAT_FIRST_AFTER_COMM 3 /* the field that follows "(comm) " */

_Static_assert(sizeof(cpu_set_t) >= sizeof(((fps_colocation *)0)->old_mask), "a cpu_set_t holds the kept mask");

int fps_colocate_start(fps_colocation *c, int pid, char *msg, size_t msglen)
{
    return fps_colocate_start_mover(c, pid, 0, msg, msglen);
}

int fps_colocate_start_mover(fps_colocation *c, int pid, int mover, char *msg, size_t msglen)
{
    memset(c, 0, sizeof *c);
    c->guard = (fps_hold_guard){.set = NULL, .pid = -1, .fd = -1};
    c->mover = mover < 0 ? 0 : mover;
    c->stat_fd = -1;
    c->cpu = -1;
    c->hold_cpu = -1;
    c->home_cpu = -1;
    c->recheck_ns = FPS_COLOCATE_RECHECK_NS;
    if (pid < 1) {
        snprintf(msg, msglen, "colocation needs a process id, not %d", pid);
        return FP_E_INVALID_ARG;
    }
    c->pid = pid;
    int rc = fps_hold_guard_open(&c->guard, pid, msg, msglen);
    if (rc != FP_OK)
        return rc;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(c->mover, sizeof set, &set) != 0) {
        snprintf(msg, msglen, "cannot read the sampler's CPU affinity: %s", strerror(errno));
        fps_hold_guard_close(&c->guard);
        return FP_E_IO;
    }
    memcpy(c->old_mask, &set, sizeof c->old_mask);
    c->have_old = true;
    return FP_OK;
}

/* The thread of last to follow: its GIL holder, else its main thread;
 * the process's first thread when last has neither. */
static uint64_t pick(const fps_colocation *c, const fp_sample *last)
{
    uint64_t main_tid = 0;
    size_t n = last ? fp_sample_get_thread_count(last) : 0;
    for (size_t i = 0; i < n; i++) {
        const fp_thread *th = fp_sample_get_thread(last, i);
        if (th->holds_gil == FP_YES && th->native_id)
            return th->native_id;
        if (th->main && th->native_id && !main_tid)
            main_tid = th->native_id;
    }
    return main_tid ? main_tid : (uint64_t)c->pid;
}

/* The CPU thread c->tid last ran on, or -1; *running: its state is R
 * (running or runnable, not waiting). */
static int thread_cpu(fps_colocation *c, bool *running)
{
    char buf[STAT_BYTES];
    *running = false;
    ssize_t got = pread(c->stat_fd, buf, sizeof buf - 1, 0);
    if (got <= 0)
        return -1;
    buf[got] = 0;
    const char *p = strrchr(buf, ')'); /* comm may hold spaces and parentheses */
    if (!p)
        return -1;
    p++;
    while (*p == ' ')
        p++;
    *running = *p == 'R';
    for (int field = STAT_FIRST_AFTER_COMM; field < STAT_CPU_FIELD; field++) {
        while (*p == ' ')
            p++;
        while (*p && *p != ' ')
            p++;
        if (!*p)
            return -1;
    }
    char *end;
    long cpu = strtol(p, &end, 10);
    return end != p && cpu >= 0 && cpu < FPS_COLOCATE_MAX_CPUS ? (int)cpu : -1;
}

void fps_colocate_follow(fps_colocation *c, const fp_session *s, const fp_sample *last)
{
    c->escaped_tid = 0;
    uint64_t tid = pick(c, last);
    fp_read_stats rs = {0};
    fp_session_get_read_stats(s, &rs);
    int64_t now = fps_clock_ns();
    if (last && tid == c->tid && c->stat_fd >= 0 && rs.torn == c->torn_seen && c->cpu >= 0 &&
        now - c->checked_ns < c->recheck_ns)
        return; /* nothing suggests the thread moved: no /proc read on the steady path */
    c->checked_ns = now;
    c->torn_seen = rs.torn;
    fps_colocate_follow_tid(c, tid);
}

/* Moves the mover to cpu; false when the kernel refused (a CPU it may
 * not run on, or the mover is gone), counted in c->unknown. */
static bool move_to(fps_colocation *c, int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(c->mover, sizeof set, &set) != 0) {
        c->unknown++; /* not a CPU the mover may run on (or the mover is gone) (cgroup cpusets): it stays where it is */
        return false;
    }
    c->cpu = cpu;
    c->moves++;
    return true;
}

/* Moves the mover off its CPU to the next one of its own affinity (the
 * one it had before the run); stays when there is none. */
static void escape(fps_colocation *c)
{
    cpu_set_t own;
    memcpy(&own, c->old_mask, sizeof c->old_mask);
    for (int k = 1; k < FPS_COLOCATE_MAX_CPUS; k++) {
        int cpu = (c->cpu + k) % FPS_COLOCATE_MAX_CPUS;
        if (CPU_ISSET(cpu, &own)) {
            if (move_to(c, cpu))
                c->escapes++;
            return;
        }
    }
}

/* The CPU thread tid of the target last ran on (0: its first thread), or
 * -1, with c's stat file following tid; *running as thread_cpu says. */
static int cpu_of(fps_colocation *c, uint64_t tid, bool *running)
{
    if (tid == 0)
        tid = (uint64_t)c->pid;
    c->checks++;
    if (tid != c->tid || c->stat_fd < 0) {
        if (c->stat_fd >= 0)
            close(c->stat_fd);
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/task/%llu/stat", c->pid, (unsigned long long)tid);
        c->stat_fd = open(path, O_RDONLY | O_CLOEXEC);
        c->tid = tid;
    }
    *running = false;
    int cpu = c->stat_fd >= 0 ? thread_cpu(c, running) : -1;
    if (cpu < 0) {
        c->unknown++;
        if (c->stat_fd >= 0)
            close(c->stat_fd);
        c->stat_fd = -1; /* the thread may be gone: open it again next time */
    }
    return cpu;
}

void fps_colocate_follow_tid(fps_colocation *c, uint64_t tid)
{
    bool running;
    int cpu = cpu_of(c, tid, &running);
    if (cpu >= 0 && cpu != c->cpu)
        move_to(c, cpu);
}

/* Holds thread tid on c->hold_cpu (see fps_colocate_hold); false when
 * the kernel refused or FPS_HOLD_MAX threads are held already.  The
 * thread is listed in the guard's set before it is narrowed. */
static bool hold_thread(fps_colocation *c, uint64_t tid)
{
    fps_held_set *h = c->guard.set;
    for (size_t i = 0; i < h->n; i++)
        if (h->tid[i] == tid)
            return true;
    if (c->guard.pid < 0 && !c->guard_error[0]) /* started once; a failure is not retried on every hold */
        (void)fps_hold_guard_watch(&c->guard, c->guard_error, sizeof c->guard_error);
    if (c->guard.pid < 0)
        c->unguarded++;
    cpu_set_t old, one;
    CPU_ZERO(&old);
    CPU_ZERO(&one);
    CPU_SET(c->hold_cpu, &one);
    if (h->n == FPS_HOLD_MAX || sched_getaffinity((pid_t)tid, sizeof old, &old) != 0 || !CPU_ISSET(c->hold_cpu, &old))
        return false;
    memcpy(h->mask[h->n], &old, sizeof h->mask[0]);
    h->tid[h->n] = tid;
    __atomic_store_n(&h->n, h->n + 1, __ATOMIC_RELEASE); /* listed, with its mask, before it is narrowed */
    if (sched_setaffinity((pid_t)tid, sizeof one, &one) != 0) {
        __atomic_store_n(&h->n, h->n - 1, __ATOMIC_RELEASE);
        return false;
    }
    return true;
}

/* Gives the held threads their affinity back, then empties the guard's set. */
static void unhold_all(fps_colocation *c)
{
    fps_held_set *h = c->guard.set;
    for (size_t i = 0; i < h->n; i++) {
        cpu_set_t old;
        CPU_ZERO(&old);
        memcpy(&old, h->mask[i], sizeof h->mask[0]);
        (void)sched_setaffinity((pid_t)h->tid[i], sizeof old, &old); /* a thread gone needs nothing back */
    }
    __atomic_store_n(&h->n, 0, __ATOMIC_RELEASE);
}

void fps_colocate_hold(fps_colocation *c, const fp_sample *last)
{
    c->escaped_tid = 0;
    int cpu = c->home_cpu >= 0 ? c->home_cpu : sched_getcpu();
    if (cpu < 0 || cpu >= FPS_COLOCATE_MAX_CPUS) {
        c->unknown++;
        return;
    }
    c->hold_cpu = cpu;
    c->tid = pick(c, last);
    /* The thread first: narrowed to a CPU it runs on, it runs on there
     * undisturbed until the mover arrives, and once the mover has taken
     * that CPU no idle CPU can be handed the preempted thread. */
    bool held = hold_thread(c, c->tid);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (c->cpu != cpu && sched_setaffinity(c->mover, sizeof one, &one) != 0) { /* c->cpu: pinned there already */
        unhold_all(c); /* a CPU the mover may no longer run on: nothing held, the next tick starts afresh */
        c->hold_cpu = -1;
        c->home_cpu = -1;
        c->unknown++;
        return;
    }
    c->cpu = cpu;
    if (held) {
        c->holds++;
    } else {
        c->hold_refused++;
        c->home_cpu = -1; /* a CPU the thread may not run on: next time the one the mover wakes on */
    }
}

/* The end of a hold, however the mover leaves: the held threads run
 * free again, and no hold is on. */
static void end_hold(fps_colocation *c)
{
    unhold_all(c);
    c->hold_cpu = -1;
}

void fps_colocate_release(fps_colocation *c)
{
    if (c->hold_cpu < 0)
        return; /* nothing held (fps_colocate_follow's moves stay) */
    if (c->have_old) {
        /* The mover steps aside first, to a CPU of its own affinity other
         * than the hold's, so that the held thread runs again at once,
         * where its caches are, while the mover finishes the sample
         * elsewhere; the next hold comes back to this CPU. */
        cpu_set_t away;
        CPU_ZERO(&away);
        memcpy(&away, c->old_mask, sizeof c->old_mask);
        CPU_CLR(c->hold_cpu, &away);
        if (CPU_COUNT(&away) > 0 && sched_setaffinity(c->mover, sizeof away, &away) == 0) {
            c->home_cpu = c->hold_cpu;
            c->aside = true;
        } else {
            cpu_set_t own;
            CPU_ZERO(&own);
            memcpy(&own, c->old_mask, sizeof c->old_mask);
            (void)sched_setaffinity(c->mover, sizeof own, &own); /* its only CPU: it stays */
            c->home_cpu = -1;
            c->aside = false;
        }
    }
    end_hold(c);
    c->cpu = -1;
}

void fps_colocate_release_stay(fps_colocation *c)
{
    if (c->hold_cpu < 0)
        return;
    c->home_cpu = c->hold_cpu; /* the mover stays pinned there (c->cpu), for the next hold */
    c->aside = false;
    end_hold(c);
}

void fps_colocate_retry_hook(void *ctx, uint64_t native_id)
{
    fps_colocation *c = ctx;
    if (!c)
        return;
    if (native_id != 0 && c->hold_cpu >= 0) {
        /* Held threads stand still on the mover's CPU (unless the
         * scheduler gave it to them); another thread that tore ran
         * elsewhere: it is held there too, and the retry reads both. */
        c->retry_follows++;
        (void)hold_thread(c, native_id); /* refused: it runs free, and a torn retry is stopped (pause_torn) */
    } else if (native_id != 0 && native_id != c->escaped_tid) {
        bool running;
        int cpu = cpu_of(c, native_id, &running);
        if (cpu >= 0 && cpu == c->cpu && running) {
            c->escaped_tid = native_id;
            escape(c);
        } else if (cpu >= 0) {
            c->retry_follows++;
            if (cpu != c->cpu)
                move_to(c, cpu);
        }
    }
    if (c->chain)
        c->chain(c->chain_ctx, native_id);
}

void fps_colocate_stop(fps_colocation *c)
{
    fps_colocate_release(c);
    if (c->stat_fd >= 0)
        close(c->stat_fd);
    c->stat_fd = -1;
    if (c->have_old && (c->cpu >= 0 || c->aside)) {
        cpu_set_t set;
        CPU_ZERO(&set);
        memcpy(&set, c->old_mask, sizeof c->old_mask);
        (void)sched_setaffinity(c->mover, sizeof set, &set); /* a mover gone needs nothing back */
    }
    c->have_old = false;
    c->aside = false;
    c->cpu = -1;
    fps_hold_guard_close(&c->guard);
}
