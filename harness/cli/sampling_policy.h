/* sampling_policy.h — how `record` and `bench` turn their flags into a
 * sampling policy (sampler.h): by default the unbiased one (colocated,
 * a torn thread stopped alone); --blocking holds the running thread the
 * same way and stops every thread; the
 * --no-* flags and the self-test faults take plain reads. */
#ifndef CLI_SAMPLING_POLICY_H
#define CLI_SAMPLING_POLICY_H

#include <stdbool.h>

#include "frameproof/frameproof.h"
#include "sampler.h"

/* A flag's state: not given, or given on or off. */
enum { CLI_POLICY_UNSET = -1, CLI_POLICY_OFF = 0, CLI_POLICY_ON = 1 };

typedef struct cli_policy {
    bool blocking;   /* --blocking */
    int colocate;    /* --colocate / --no-colocate */
    int pause_torn;  /* --pause-torn / --no-pause-torn */
    int hold;        /* --hold / --no-hold */
    int realtime;    /* --realtime / --no-realtime (unset: real-time when the hold samples on a schedule
                        and the kernel grants it) */
    char realtime_refused[FPS_ERRMSG_MAX]; /* set by apply: why the default's real-time priority was not
                                              granted ("" when it was, or was not asked for) */
    int fault;       /* --inject-fault: enum fps_fault */
} cli_policy;

/* Nothing given: the default policy. */
void cli_policy_init(cli_policy *p);

/* Parses an --inject-fault value into p->fault; prints a message for cmd
 * and returns -1 when it is neither drop-torn nor retry-quiet. */
int cli_policy_fault(const char *cmd, const char *value, cli_policy *p);

/* Sets lib->blocking, lib->pause_torn, cfg->fault, cfg->hold, cfg->target_time, cfg->realtime
 * and cfg->colocate_pid (1 when colocated: the caller puts the target's
 * pid there once known) from p, cfg->rate_hz already set.  A held thread
 * waits on the sampler's CPU, where a fair scheduler soon hands it that
 * CPU back in the middle of a read: a run that holds on a schedule
 * samples at real-time priority unless --no-realtime says otherwise, when
 * the kernel grants it (p->realtime_refused says why not, the run going
 * on without).  0, or -1 after a one-line message for cmd when the flags
 * contradict each other. */
int cli_policy_apply(const char *cmd, cli_policy *p, fp_options *lib, fps_config *cfg);

/* The help of the policy flags, shared by record and bench. */
#define CLI_POLICY_HELP                                                                     \
    "  (default)        unbiased sampling: at each tick the target's running\n"      \
    "                   thread (the GIL holder, else the main thread) is held on\n"   \
    "                   the sampler's CPU while it is read (its CPU affinity\n"       \
    "                   narrowed to that CPU, the sampler at real-time priority\n"   \
    "                   when the kernel grants it), so that it stands still; a\n"    \
    "                   thread whose walk tore anyway is held too and walked\n"      \
    "                   again and, torn again, stopped alone (ptrace) and\n"        \
    "                   resumed.  Which ticks are kept does not depend on the\n"    \
    "                   stack.  On a schedule (record, bench --rate), ticks are\n"  \
    "                   spaced in the target's own time: each comes later by\n"      \
    "                   the time the samples before it held the target (here\n"     \
    "                   and with --blocking), so that a deep stack, slower to\n"     \
    "                   read, gets no extra ticks\n"                                  \
    "  --blocking       stop every thread (ptrace) for each sample and resume it,\n" \
    "                   the running thread held on the sampler's CPU first (as\n"   \
    "                   the default does; --no-colocate: stopped from afar, the\n"  \
    "                   stop landing late, at once at a system call): exact by\n"  \
    "                   construction, the target paused for each sample\n"          \
    "  --no-colocate    sample from wherever the scheduler puts the sampler\n"       \
    "  --no-hold        move the sampler to the CPU the thread last ran on\n"      \
    "                   instead of holding it there (the scheduler may run it\n"    \
    "                   on another CPU while it is read)\n"                           \
    "  --realtime       sample at real-time priority (SCHED_FIFO, restored at the\n" \
    "                   end; root or CAP_SYS_NICE): the default when the thread\n"   \
    "                   is held on a schedule and the kernel grants it, so that the\n" \
    "                   held thread cannot take the sampler's CPU back mid-read;\n"  \
    "                   given, a refusal is an error\n"                               \
    "  --no-realtime    never ask for real-time priority\n"                          \
    "  --no-pause-torn  never stop a thread: a walk torn on every retry is left\n"  \
    "                   out (with --no-colocate: the plain non-blocking sampler,\n"    \
    "                   which under-represents short-lived stacks)\n"                \
    "  --colocate, --hold, --pause-torn\n"                                            \
    "                   the default's parts, accepted for compatibility\n"          \
    "  --inject-fault KIND\n"                                                         \
    "                   self-test aid, a sampler biased on purpose that an\n"        \
    "                   accuracy verdict must fail (plain reads, no colocation,\n"   \
    "                   no stops): drop-torn leaves out every thread whose walk\n"   \
    "                   tore once; retry-quiet takes a torn sample again at once\n"  \
    "                   until nothing tears\n"

#endif
