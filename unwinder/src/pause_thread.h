/* pause_thread.h — stopping one thread of a live process with ptrace and
 * resuming it: what fp_options.pause_torn does to a thread whose walk keeps
 * tearing.  Implemented in pause.c, beside the whole-process stop. */
#ifndef FPI_PAUSE_THREAD_H
#define FPI_PAUSE_THREAD_H

#include <stdbool.h>
#include <stddef.h>

/* A stopped thread's wait for its interrupt stop: a sampler's fallback
 * gives up long before the whole-process stop does. */
#define FPI_PAUSE_THREAD_TIMEOUT_MS 100L

/* Torn walks of one thread in a row before fp_options.pause_torn stops it. */
#define FPI_PAUSE_TORN_AFTER 2u

typedef struct fpi_paused_thread {
    long tid;
    char state;       /* scheduler state before the stop, 0 if unknown */
    bool seized;
    bool interrupted; /* the interrupt was sent (whole-process stop: waited for after all are sent) */
    bool stopped;
    int pending_sig;  /* signal to re-inject at detach */
} fpi_paused_thread;

/* Stops thread tid of process pid (refused when /proc does not list it as
 * one of pid's threads).  FP_OK: stopped, resume with fpi_resume_thread;
 * otherwise nothing stays stopped and err holds why (FP_E_INVALID_ARG,
 * FP_E_PERMISSION, FP_E_PROCESS_GONE, FP_E_IO). */
int fpi_pause_thread(int pid, long tid, fpi_paused_thread *t, char *err, size_t errlen);
void fpi_resume_thread(fpi_paused_thread *t);

/* How many polls of a wait for a stop only yield the CPU before the first
 * sleep, for the calling thread: none at real-time priority (SCHED_FIFO or
 * SCHED_RR, with SCHED_RESET_ON_FORK or without), whose sched_yield() never
 * lets the tracee, of normal priority, run on its CPU. */
long fpi_pause_spin_polls(void);

#endif
