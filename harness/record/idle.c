/* idle.c — the scheduler state of the threads a profile kept, read after
 * each sample within a time budget (idle.h). */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "idle.h"

#define IDLE_STAT_BUF 512        /* a stat line's state letter comes after the pid and a comm of at most 64 bytes */
#define IDLE_PATH_MAX 64
#define IDLE_MAX_OPEN 512        /* threads whose stat file stays open; the others are opened for each read */
#define IDLE_FIRST_THREADS 16u   /* per-thread entries at the first allocation */
#define IDLE_NS_PER_S 1000000000LL

typedef struct idle_thread {
    int fd;                      /* its stat file, -1 when not open */
    uint64_t checked, off_cpu;
} idle_thread;

struct fpr_idle {
    int pid;
    double budget;
    int64_t spent_ns;            /* time spent reading states */
    idle_thread *threads;        /* by the profile's thread index */
    size_t nthreads, cap;
    fpr_idle_counts totals;
};

static int64_t idle_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * IDLE_NS_PER_S + ts.tv_nsec;
}

int fpr_idle_new(int pid, double budget, fpr_idle **out)
{
    *out = calloc(1, sizeof **out);
    if (!*out)
        return FP_E_NOMEM;
    (*out)->pid = pid;
    (*out)->budget = budget;
    return FP_OK;
}

void fpr_idle_free(fpr_idle *idle)
{
    if (!idle)
        return;
    for (size_t i = 0; i < idle->nthreads; i++)
        if (idle->threads[i].fd >= 0)
            close(idle->threads[i].fd);
    free(idle->threads);
    free(idle);
}

/* Entries for the profile's first n threads. */
static int reserve(fpr_idle *idle, size_t n)
{
    if (n > idle->cap) {
        size_t ncap = idle->cap ? idle->cap : IDLE_FIRST_THREADS;
        while (ncap < n)
            ncap *= 2;
        idle_thread *t = realloc(idle->threads, ncap * sizeof *t);
        if (!t)
            return FP_E_NOMEM;
        idle->threads = t;
        idle->cap = ncap;
    }
    for (; idle->nthreads < n; idle->nthreads++)
        idle->threads[idle->nthreads] = (idle_thread){.fd = -1};
    return FP_OK;
}

/* The state letter of thread i (native id tid), 0 when it cannot be read.
 * A file that fails is closed, so that the next read opens it afresh. */
static char read_state(fpr_idle *idle, size_t i, uint64_t tid)
{
    idle_thread *t = &idle->threads[i];
    if (t->fd < 0) {
        char path[IDLE_PATH_MAX];
        snprintf(path, sizeof path, "/proc/%d/task/%" PRIu64 "/stat", idle->pid, tid);
        t->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (t->fd < 0)
            return 0;
    }
    char buf[IDLE_STAT_BUF];
    ssize_t n = pread(t->fd, buf, sizeof buf - 1, 0);
    char state = 0;
    if (n > 0) {
        buf[n] = '\0';
        /* The comm in parentheses may itself hold ") ": the last one ends it. */
        const char *paren = strrchr(buf, ')');
        if (paren && paren[1] == ' ')
            state = paren[2];
    }
    if (!state || i >= IDLE_MAX_OPEN) {
        close(t->fd);
        t->fd = -1;
    }
    return state;
}

int fpr_idle_check(fpr_idle *idle, const fpr_profile *p, int64_t t_ns)
{
    size_t n = fpr_profile_thread_count(p);
    if (reserve(idle, n))
        return FP_E_NOMEM;
    const bool within = (double)idle->spent_ns <= idle->budget * (double)t_ns;
    const int64_t start = within ? idle_clock_ns() : 0;
    for (size_t i = 0; i < n; i++) {
        const fpr_thread *th = fpr_profile_thread(p, i);
        if (!th->count || th->points[th->count - 1].t_ns != t_ns)
            continue; /* not in this sample */
        if (!within) {
            idle->totals.unchecked++;
            continue;
        }
        char state = read_state(idle, i, th->native_id);
        if (!state) {
            idle->totals.unknown++;
            continue;
        }
        idle->totals.checked++;
        idle->threads[i].checked++;
        if (state != 'R') {
            idle->totals.off_cpu++;
            idle->threads[i].off_cpu++;
        }
    }
    if (within)
        idle->spent_ns += idle_clock_ns() - start;
    return FP_OK;
}

const fpr_idle_counts *fpr_idle_totals(const fpr_idle *idle) { return &idle->totals; }

void fpr_idle_thread(const fpr_idle *idle, size_t i, uint64_t *checked, uint64_t *off_cpu)
{
    *checked = i < idle->nthreads ? idle->threads[i].checked : 0;
    *off_cpu = i < idle->nthreads ? idle->threads[i].off_cpu : 0;
}
