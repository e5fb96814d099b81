/* proc_state.h — small /proc queries shared by the live-process backends. */
#ifndef FPI_PROC_STATE_H
#define FPI_PROC_STATE_H

#include <stdbool.h>

/* True if the process no longer exists or is a zombie (its memory is gone). */
bool fpi_proc_is_gone(int pid);

/* Scheduler state letter of a thread ('R', 'S', ...) from
 * /proc/PID/task/TID/stat, or 0 if it cannot be read. */
char fpi_proc_thread_state(int pid, long tid);

/* True if thread TID of process PID is exiting (the kernel's PF_EXITING,
 * a zombie) or gone: ptrace refuses to attach to it with EPERM, which is
 * then no lack of permission. */
bool fpi_proc_thread_exiting(int pid, long tid);

#endif
