/* colocate.h — sampling from the CPU the target's running thread is on,
 * or with that thread held on the sampler's CPU (fps_colocate_hold).
 *
 * A running target thread changes its stack every microsecond or less, and
 * a non-blocking sample that the thread changes under is torn (the library
 * proves each sample consistent and refuses the others).  A thread does
 * not run while another thread runs on its CPU: a sampler that moves to
 * the CPU on which the target's thread last ran takes that CPU from it
 * while it reads (the scheduler lets a woken sampler preempt it), and
 * reads a thread that stands still, without stopping it, signalling it or
 * writing anything into the target.  The thread followed is the one whose
 * stack matters most: the last usable sample's GIL holder, else its main
 * thread, else the process's first thread.  Threads that run Python at the
 * same time (free-threaded builds) keep running on their own CPUs. */
#ifndef FPS_COLOCATE_H
#define FPS_COLOCATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frameproof/frameproof.h"
#include "hold_guard.h"

#define FPS_COLOCATE_RECHECK_NS 1000000 /* recheck_ns's default: the followed thread's CPU read again at least this often */

typedef struct fps_colocation {
    int pid;
    int mover;             /* the task moved: 0 for the calling thread, else a reader's id (a helper process) */
    uint64_t tid;          /* the thread followed (0: none yet) */
    int stat_fd;           /* its /proc/PID/task/TID/stat, or -1 */
    int cpu;               /* the CPU the mover was last moved to, or -1 */
    unsigned char old_mask[FPS_COLOCATE_MAX_CPUS / 8]; /* the mover's affinity before the run */
    bool have_old;
    int64_t recheck_ns;    /* its CPU read again at least this often (set by start) */
    int64_t checked_ns;    /* when its CPU was last read (CLOCK_MONOTONIC) */
    uint64_t torn_seen;    /* the session's torn walks then */
    uint64_t checks;       /* reads of the followed thread's CPU */
    uint64_t moves;        /* moves to another CPU */
    uint64_t unknown;      /* attempts made where the followed thread's CPU could not be read */
    uint64_t retry_follows; /* torn walks whose retry the mover was moved for (fps_colocate_retry_hook) */
    uint64_t escapes;      /* walks of a thread that stood still on the mover's CPU and failed: the mover left that CPU */
    uint64_t escaped_tid;  /* the thread escaped from in this attempt (0: none): not followed back to its CPU */
    int hold_cpu;          /* hold: the CPU the mover is pinned to and the held threads are held on, or -1 */
    int home_cpu;          /* the last hold's CPU, where the next hold goes (the held thread ran on there), or -1 */
    bool aside;            /* between holds the mover's affinity is its own less home_cpu */
    fps_hold_guard guard;  /* the threads held there (guard.set->n, ->tid, ->mask: their affinity before the
                              hold), given back by a guard process if the caller dies mid-hold (hold_guard.h) */
    uint64_t unguarded;    /* holds made without a guard: its process could not be started (guard_error says why) */
    char guard_error[128];
    uint64_t holds;        /* attempts made with the followed thread held */
    uint64_t hold_refused; /* attempts whose followed thread the kernel refused to hold (a CPU outside its
                              cpuset, a thread gone) */
    fp_retry_hook chain;   /* a hook the run's replaced, called by fps_colocate_retry_hook after it moves (or NULL) */
    void *chain_ctx;
} fps_colocation;

/* Starts following process pid from the calling thread, whose affinity
 * it keeps for fps_colocate_stop.  FP_OK, or FP_E_INVALID_ARG (pid < 1),
 * FP_E_IO (the affinity cannot be read) or FP_E_NOMEM (no record of held
 * threads) with the reason in msg. */
int fps_colocate_start(fps_colocation *c, int pid, char *msg, size_t msglen);

/* The same, moving task `mover` (a reader in another process, such as a
 * foreign unwinder's helper) instead of the calling thread; 0 is the
 * calling thread. */
int fps_colocate_start_mover(fps_colocation *c, int pid, int mover, char *msg, size_t msglen);

/* Before an attempt of session s: picks the thread to follow from last
 * (the last usable sample, or NULL) and moves the mover to the
 * CPU that thread last ran on.  That CPU is read (a /proc read, several
 * microseconds) only when it may have changed: another thread to follow,
 * no usable last sample, a walk torn since it was read (the thread ran
 * under the sampler, so elsewhere), or c->recheck_ns since;
 * otherwise the mover stays where it is.  Best effort: a thread gone or a
 * CPU the mover may not run on only leaves it where it is
 * (counted in c->unknown). */
void fps_colocate_follow(fps_colocation *c, const fp_session *s, const fp_sample *last);

/* Reads the CPU thread tid of the target (0: its first thread) last ran
 * on, now, and moves the mover there: for a reader whose samples are not
 * fp_samples, which picks the thread itself. */
void fps_colocate_follow_tid(fps_colocation *c, uint64_t tid);

/* An fp_retry_hook (fp_session_set_retry_hook) for a colocated run, its
 * ctx the fps_colocation.  A walk of thread native_id failed.  When that
 * thread last ran on another CPU than the mover's, it ran while it was
 * read (a GIL passed to it, or it runs beside the followed one in a
 * free-threaded build): the mover goes to that CPU before the walk is
 * retried (a /proc read and a move, on failed walks only).  When it last
 * ran on the mover's own CPU, it stood still while it was read and stands
 * in the middle of an update of its own (a frame half pushed or popped),
 * which it cannot finish while the mover holds its CPU: the mover leaves
 * for another CPU of its affinity (counted in c->escapes) and does not
 * follow that thread back within the attempt, so that the thread finishes
 * the update and the retry (or, with fp_options.pause_torn, the stop)
 * sees it an instant later.  The next attempt follows its pick again.
 * During a hold (fps_colocate_hold) a torn walk's thread is held on the
 * mover's CPU too (up to FPS_HOLD_MAX) and nothing moves.
 * Native id 0 (not read) changes nothing.  Then it calls c->chain (the
 * hook the caller's session had, which a colocated run keeps), when set,
 * with the same id. */
void fps_colocate_retry_hook(void *ctx, uint64_t native_id);

/* The hold, an alternative to fps_colocate_follow: before an attempt,
 * narrows the affinity of the thread picked from last (as
 * fps_colocate_follow picks it) to one CPU and pins the mover there, which
 * it occupies, so that the thread can run neither there nor anywhere else
 * while it is read.  The CPU is the last hold's (the thread ran on there
 * since, its caches are there, and a thread still there is preempted,
 * not moved), else the one the mover woke on.  The thread is narrowed
 * before the mover arrives: no idle CPU can then be handed it once
 * preempted.  A thread running on another CPU is taken off it before the
 * call returns.  Either way the hold stops it at whatever instant the call
 * lands, set by the schedule, not by its stack.  Each thread's affinity
 * is read first and given back by fps_colocate_release — or, should the
 * caller die before, by the guard process the first hold starts
 * (hold_guard.h; one that cannot be started leaves the holds unguarded,
 * counted in c->unguarded).  Best effort: a
 * refusal (a CPU outside the thread's cpuset, a thread gone) leaves it
 * free, counted in c->hold_refused, and the next hold starts from the CPU
 * the mover wakes on.  While held, the narrowed mask is what another
 * thread of the target would read for it. */
void fps_colocate_hold(fps_colocation *c, const fp_sample *last);

/* Ends a hold (nothing when nothing is held): the mover steps aside to
 * the CPUs of its own affinity other than the hold's (when it has any),
 * so that the held thread runs again at once while the mover finishes
 * the sample elsewhere, and then the held threads get their affinity
 * back.  fps_colocate_stop gives the mover all of its own. */
void fps_colocate_release(fps_colocation *c);

/* Ends a hold as fps_colocate_release does, but the mover stays pinned to
 * the hold's CPU, where the next hold finds it without a move: for a
 * mover that sleeps until its next hold and leaves what it does with a
 * sample to another thread (fps_config.offload).  The held thread runs
 * again as soon as the mover sleeps. */
void fps_colocate_release_stay(fps_colocation *c);

/* Gives the mover its affinity back and closes what it opened (the guard
 * process ends). */
void fps_colocate_stop(fps_colocation *c);

#endif
