/* pause.c — stopping every thread of a live process with ptrace and
 * resuming it (frameproof/pause.h). */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>

#include "frameproof/frameproof.h"
#include "frameproof/pause.h"
#include "fp_error.h"
#include "fpi_limits.h"
#include "pause_thread.h"
#include "proc_state.h"

#define DETACH_GRACE_MS 500L  /* a thread that missed its stop gets this long again */
#define SPIN_POLLS 256        /* polls that only yield the CPU before the first sleep (a stop takes microseconds);
                                 none for a real-time caller (fpi_pause_spin_polls) */
#define POLL_MIN_NS 10000L    /* then sleeps, the first this long, each next one twice as long ... */
#define POLL_MAX_NS 1000000L  /* ... up to this (a first sleep of 1 ms made stops of 16 threads overrun 1 kHz ticks) */
#define NS_PER_MS 1000000L
#define PATH_LEN 128

typedef fpi_paused_thread pause_task;

struct fp_pause {
    int pid;
    pause_task *t;
    size_t n, cap;
};

static pause_task *find_task(fp_pause *p, long tid)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->t[i].tid == tid)
            return &p->t[i];
    return NULL;
}

/* Adds every thread of /proc/PID/task not yet known; *added counts them. */
static int scan_tasks(fp_pause *p, size_t *added, char *err, size_t errlen)
{
    char path[PATH_LEN];
    snprintf(path, sizeof path, "/proc/%d/task", p->pid);
    DIR *d = opendir(path);
    if (!d) {
        int e = errno;
        if (e == ENOENT)
            return fpi_msg(err, errlen, FP_E_PROCESS_GONE, "process %d: does not exist or exited", p->pid);
        return fpi_msg(err, errlen, FP_E_IO, "cannot list %s: %s", path, strerror(e));
    }
    int rc = FP_OK;
    struct dirent *de;
    *added = 0;
    while ((de = readdir(d))) {
        char *end;
        long tid = strtol(de->d_name, &end, 10);
        if (*end || tid <= 0 || find_task(p, tid))
            continue;
        if (p->n >= FP_PAUSE_MAX_THREADS) {
            rc = fpi_msg(err, errlen, FP_E_LIMIT, "process %d: more threads than can be stopped (limit %u)", p->pid,
                         FP_PAUSE_MAX_THREADS);
            break;
        }
        if (p->n == p->cap) {
            size_t ncap = p->cap ? p->cap * 2 : 16;
            pause_task *nt = realloc(p->t, ncap * sizeof *nt);
            if (!nt) {
                rc = fpi_msg(err, errlen, FP_E_NOMEM, "out of memory: the list of %zu threads to stop", ncap);
                break;
            }
            p->t = nt;
            p->cap = ncap;
        }
        p->t[p->n++] = (pause_task){.tid = tid, .state = fpi_proc_thread_state(p->pid, tid)};
        (*added)++;
    }
    closedir(d);
    return rc;
}

static void sleep_poll(long ns)
{
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL);
}

long fpi_pause_spin_polls(void)
{
    /* A caller at real-time priority: its sched_yield() never hands its CPU
     * to the tracee (a thread of normal priority), which may need that very
     * CPU to enter its stop — a thread a sampler holds on its own CPU always
     * does — so it sleeps from the first poll instead of spinning. */
    const int policy = sched_getscheduler(0) & ~SCHED_RESET_ON_FORK; /* the flag rides on the policy */
    return policy == SCHED_FIFO || policy == SCHED_RR ? 0 : SPIN_POLLS;
}

/* Waits up to timeout_ms for a seized thread's stop, yielding the CPU on
 * the first spin_polls polls (fpi_pause_spin_polls, asked once per stop
 * by the caller, not once per thread): 1 when it is stopped, 0 when it is
 * gone, -1 on time-out. */
static int wait_stop(pause_task *t, long timeout_ms, long spin_polls)
{
    long sleep_ns = POLL_MIN_NS;
    for (long waited = 0, polls = 0; waited <= timeout_ms * NS_PER_MS; polls++) {
        int status;
        pid_t r = waitpid((pid_t)t->tid, &status, __WALL | WNOHANG);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return 0; /* ECHILD: no longer traced by us (it exited) */
        if (r == (pid_t)t->tid) {
            if (WIFEXITED(status) || WIFSIGNALED(status))
                return 0;
            if (WIFSTOPPED(status)) {
                if ((status >> 16) != PTRACE_EVENT_STOP)
                    t->pending_sig = WSTOPSIG(status); /* signal-delivery stop */
                t->stopped = true;
                return 1;
            }
        }
        if (polls < spin_polls) {
            sched_yield();
        } else {
            sleep_poll(sleep_ns);
            waited += sleep_ns;
            sleep_ns = sleep_ns < POLL_MAX_NS / 2 ? sleep_ns * 2 : POLL_MAX_NS;
        }
    }
    return -1;
}

static bool any_seized(const fp_pause *p)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->t[i].seized)
            return true;
    return false;
}

/* Seizes and interrupts every thread, passing until the set is stable. */
static int stop_all(fp_pause *p, char *err, size_t errlen)
{
    for (int pass = 0; pass < FPI_PAUSE_MAX_PASSES; pass++) {
        size_t added;
        int rc = scan_tasks(p, &added, err, errlen);
        if (rc)
            return rc;
        if (added == 0 && pass > 0)
            return FP_OK;
        for (size_t i = 0; i < p->n; i++) {
            pause_task *t = &p->t[i];
            if (t->seized)
                continue;
            if (ptrace(PTRACE_SEIZE, (pid_t)t->tid, NULL, NULL) != 0) {
                int e = errno;
                if (e == ESRCH)
                    continue; /* exited meanwhile */
                /* Permission is the process's, not a thread's: with another
                 * thread already seized, EPERM means this one is exiting
                 * (past its last Python code); the next pass retries it.
                 * So does a thread the kernel shows exiting (a process
                 * whose last thread exits: gone, not forbidden). */
                if ((e == EPERM || e == EACCES) && (any_seized(p) || fpi_proc_thread_exiting(p->pid, t->tid)))
                    continue;
                return fpi_msg(err, errlen, e == EPERM || e == EACCES ? FP_E_PERMISSION : FP_E_IO,
                               "cannot stop thread %ld of process %d (PTRACE_SEIZE): %s", t->tid, p->pid,
                               strerror(e));
            }
            t->seized = true;
            if (ptrace(PTRACE_INTERRUPT, (pid_t)t->tid, NULL, NULL) != 0) {
                if (errno == ESRCH)
                    continue;
                return fpi_msg(err, errlen, FP_E_IO, "cannot interrupt thread %ld: %s", t->tid, strerror(errno));
            }
            t->interrupted = true;
        }
        /* Every thread is interrupted before any is waited for: a thread
         * that must be scheduled to enter its stop then finds the CPUs of
         * those already stopped free. */
        const long spin_polls = fpi_pause_spin_polls();
        for (size_t i = 0; i < p->n; i++) {
            pause_task *t = &p->t[i];
            if (t->interrupted && !t->stopped && wait_stop(t, FP_PAUSE_STOP_TIMEOUT_MS, spin_polls) < 0)
                return fpi_msg(err, errlen, FP_E_IO, "thread %ld of process %d: not stopped within %ld ms", t->tid,
                               p->pid, FP_PAUSE_STOP_TIMEOUT_MS);
        }
    }
    return fpi_msg(err, errlen, FP_E_LIMIT, "process %d: kept creating threads while being stopped", p->pid);
}

/* Detaches a seized thread, re-injecting a signal it was stopped by. */
static void resume_task(pause_task *t)
{
    if (!t->seized)
        return;
    /* Gone, or still running, it is not detached: a running tracee cannot
     * be, and the kernel releases it when this process exits. */
    if (t->stopped || wait_stop(t, DETACH_GRACE_MS, fpi_pause_spin_polls()) == 1)
        ptrace(PTRACE_DETACH, (pid_t)t->tid, NULL, (void *)(intptr_t)t->pending_sig);
    t->seized = t->stopped = t->interrupted = false;
}

static void resume_all(fp_pause *p)
{
    for (size_t i = 0; i < p->n; i++)
        resume_task(&p->t[i]);
}

int fp_pause_new(int pid, bool stop, fp_pause **out, char *err, size_t errlen)
{
    *out = NULL;
    if (pid <= 0)
        return fpi_msg(err, errlen, FP_E_INVALID_ARG, "pause: invalid pid %d", pid);
    fp_pause *p = calloc(1, sizeof *p);
    if (!p)
        return fpi_msg(err, errlen, FP_E_NOMEM, "out of memory: stopping process %d", pid);
    p->pid = pid;
    size_t added;
    int rc = stop ? stop_all(p, err, errlen) : scan_tasks(p, &added, err, errlen);
    if (rc) {
        fp_pause_free(p);
        return rc;
    }
    *out = p;
    return FP_OK;
}

size_t fp_pause_get_thread_count(const fp_pause *p)
{
    return p ? p->n : 0;
}

uint64_t fp_pause_get_thread_id(const fp_pause *p, size_t i)
{
    return p && i < p->n ? (uint64_t)p->t[i].tid : 0;
}

char fp_pause_get_thread_state(const fp_pause *p, size_t i)
{
    return p && i < p->n ? p->t[i].state : 0;
}

void fp_pause_resume(fp_pause *p)
{
    if (p)
        resume_all(p);
}

void fp_pause_free(fp_pause *p)
{
    if (!p)
        return;
    resume_all(p);
    free(p->t);
    free(p);
}

int fpi_pause_thread(int pid, long tid, fpi_paused_thread *t, char *err, size_t errlen)
{
    *t = (fpi_paused_thread){.tid = tid, .state = pid > 0 && tid > 0 ? fpi_proc_thread_state(pid, tid) : 0};
    if (!t->state)
        return fpi_msg(err, errlen, FP_E_INVALID_ARG, "pause: thread %ld: not a thread of process %d", tid, pid);
    if (ptrace(PTRACE_SEIZE, (pid_t)tid, NULL, NULL) != 0) {
        int e = errno;
        return fpi_msg(err, errlen,
                       e == ESRCH ? FP_E_PROCESS_GONE : e == EPERM || e == EACCES ? FP_E_PERMISSION : FP_E_IO,
                       "cannot stop thread %ld of process %d (PTRACE_SEIZE): %s", tid, pid, strerror(e));
    }
    t->seized = true;
    int rc = FP_OK;
    if (ptrace(PTRACE_INTERRUPT, (pid_t)tid, NULL, NULL) != 0)
        rc = fpi_msg(err, errlen, errno == ESRCH ? FP_E_PROCESS_GONE : FP_E_IO, "cannot interrupt thread %ld: %s",
                     tid, strerror(errno));
    else if ((rc = wait_stop(t, FPI_PAUSE_THREAD_TIMEOUT_MS, fpi_pause_spin_polls())) == 0)
        rc = fpi_msg(err, errlen, FP_E_PROCESS_GONE, "thread %ld of process %d: exited while being stopped", tid, pid);
    else if (rc < 0)
        rc = fpi_msg(err, errlen, FP_E_IO, "thread %ld of process %d: not stopped within %ld ms", tid, pid,
                     FPI_PAUSE_THREAD_TIMEOUT_MS);
    else
        rc = FP_OK;
    if (rc)
        resume_task(t);
    return rc;
}

void fpi_resume_thread(fpi_paused_thread *t)
{
    resume_task(t);
}
