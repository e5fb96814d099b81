/* hold_guard.h — the held threads' affinity given back when the sampler
 * dies mid-hold.
 *
 * A hold (colocate.h) narrows a target thread's CPU affinity to one CPU for
 * the length of a read and gives it back after.  A sampler killed in
 * between (SIGKILL, a crash) would leave the target running on one CPU for
 * the rest of its life.  So the threads held and their affinity before the
 * hold are kept in a page shared with a guard: a child process, out of the
 * sampler's process group, that waits on a pipe whose only writer is the
 * sampler, and when that pipe closes — the sampler's end, however it
 * comes — gives every thread still listed its affinity back and exits. */
#ifndef FPS_HOLD_GUARD_H
#define FPS_HOLD_GUARD_H

#include <stddef.h>
#include <stdint.h>

#define FPS_COLOCATE_MAX_CPUS 1024 /* CPUs a colocated run can follow a thread onto (CPU ids below this) */
#define FPS_HOLD_MAX 16            /* threads held at once in one attempt (the followed one and those that tore) */

/* The threads held now.  The writer adds an entry (tid, mask) before it
 * narrows the thread and counts it in n only then; it sets n to 0 once
 * every listed thread has its mask back.  A thread listed but not (or no
 * longer) narrowed is given its own mask again: harmless. */
typedef struct fps_held_set {
    int pid;                 /* the target: a listed tid is given back only while it is a thread of pid */
    size_t n;
    uint64_t tid[FPS_HOLD_MAX];
    unsigned char mask[FPS_HOLD_MAX][FPS_COLOCATE_MAX_CPUS / 8]; /* affinity before the hold */
} fps_held_set;

typedef struct fps_hold_guard {
    fps_held_set *set;       /* shared with the guard process (NULL: not open) */
    int pid;                 /* the guard process, or -1 (none started) */
    int fd;                  /* the pipe's write end it waits on, or -1 */
} fps_hold_guard;

/* Maps an empty set for target pid (FP_OK), or FP_E_NOMEM with the reason
 * in msg.  No guard runs yet: holds recorded in the set are guarded once
 * fps_hold_guard_watch has started one. */
int fps_hold_guard_open(fps_hold_guard *g, int pid, char *msg, size_t msglen);

/* Starts the guard process if none runs: FP_OK, or FP_E_IO (no pipe, no
 * fork) or FP_E_INVALID_ARG (g not opened) with the reason in msg.  It holds no descriptor of the caller's
 * but its pipe, ignores the signals a terminal or a kill of a process
 * group sends, and never touches a thread that is not one of the target's. */
int fps_hold_guard_watch(fps_hold_guard *g, char *msg, size_t msglen);

/* Ends the guard (closes its pipe and waits for it) and unmaps the set;
 * the caller has given back every listed thread's affinity first (the
 * guard gives back what is still listed).  Safe on a guard never opened. */
void fps_hold_guard_close(fps_hold_guard *g);

#endif
