/* idle.h — which of the thread samples a profile kept were of threads off
 * a CPU (sleeping, waiting for I/O, a lock or the GIL), for the modes that
 * keep such threads (wall, gil).  Right after a sample is added, the
 * scheduler state of each thread it gave a point is read from
 * /proc/PID/task/TID/stat ('R', running or runnable, is on a CPU; any
 * other state is off).  The state is read outside the sample, not while
 * its stack is: a blocked thread stays blocked for far longer than the few
 * microseconds between the two.  Reading costs a few microseconds per
 * thread (each thread's file is kept open), so the reads of a run are held
 * to a share of its time (the budget); samples beyond it are counted as
 * not checked, and the share off a CPU is that of the checked ones. */
#ifndef FPR_IDLE_H
#define FPR_IDLE_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"

typedef struct fpr_idle fpr_idle;

typedef struct fpr_idle_counts {
    uint64_t checked;   /* kept thread samples whose thread's state was read */
    uint64_t off_cpu;   /* of those, threads in a state other than 'R' */
    uint64_t unknown;   /* kept thread samples whose thread's state could not be read (it had exited) */
    uint64_t unchecked; /* kept thread samples not read: the budget was spent */
} fpr_idle_counts;

/* Reads the threads of process pid, spending at most budget (a share, e.g.
 * 0.01) of the run's time.  FP_OK or FP_E_NOMEM. */
int fpr_idle_new(int pid, double budget, fpr_idle **out);
/* Closes its files; NULL is ignored. */
void fpr_idle_free(fpr_idle *idle);

/* After fpr_profile_add(p, sample, t_ns): reads the state of every thread
 * of p whose last point is at t_ns, when the time spent reading so far is
 * within the budget of t_ns.  FP_OK or FP_E_NOMEM. */
int fpr_idle_check(fpr_idle *idle, const fpr_profile *p, int64_t t_ns);

const fpr_idle_counts *fpr_idle_totals(const fpr_idle *idle);
/* Thread i of the profile: its checked samples and those off a CPU (0 for
 * a thread never checked). */
void fpr_idle_thread(const fpr_idle *idle, size_t i, uint64_t *checked, uint64_t *off_cpu);

#endif
