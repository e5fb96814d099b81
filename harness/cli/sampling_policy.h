/* sampling_policy.h — how `record` and `bench` turn their flags into a
 * sampling policy (sampler.h): by default the unbiased one (colocated,
 * a torn thread stopped alone); --blocking stops every thread; the
 * --no-* flags and the self-test faults take plain reads. */
#ifndef FP_CLI_SAMPLING_POLICY_H
#define FP_CLI_SAMPLING_POLICY_H

#include <stdbool.h>

#include "frameproof/frameproof.h"
#include "sampler.h"

/* A flag's state: not given, or given on or off. */
enum { FP_POLICY_UNSET = -1, FP_POLICY_OFF = 0, FP_POLICY_ON = 1 };

typedef struct fp_cli_policy {
    bool blocking;   /* --blocking */
    int colocate;    /* --colocate / --no-colocate */
    int pause_torn;  /* --pause-torn / --no-pause-torn */
    int hold;        /* --hold / --no-hold */
    int fault;       /* --inject-fault: enum fps_fault */
} fp_cli_policy;

/* Nothing given: the default policy. */
void fp_cli_policy_init(fp_cli_policy *p);

/* Parses an --inject-fault value into p->fault; prints a message for cmd
 * and returns -1 when it is neither drop-torn nor retry-quiet. */
int fp_cli_policy_fault(const char *cmd, const char *value, fp_cli_policy *p);

/* Sets lib->blocking, lib->pause_torn, cfg->fault, cfg->hold and cfg->colocate_pid
 * (1 when colocated: the caller puts the target's pid there once known)
 * from p.  0, or -1 after a one-line message for cmd when the flags
 * contradict each other. */
int fp_cli_policy_apply(const char *cmd, const fp_cli_policy *p, fp_options *lib, fps_config *cfg);

/* The help of the policy flags, shared by record and bench. */
#define FP_CLI_POLICY_HELP                                                                  \
    "  (default)        unbiased sampling: each sample is taken from the CPU the\n"       \
    "                   target's running thread (the GIL holder, else the main\n"       \
    "                   thread) last ran on, that thread held there (its CPU\n"       \
    "                   affinity narrowed to the sampler's CPU while it is read)\n"   \
    "                   so that it stands still; a thread whose walk tore anyway\n"  \
    "                   is walked again and, torn again, stopped alone (ptrace)\n"  \
    "                   and resumed.  Which ticks are kept does not depend on\n"    \
    "                   the stack\n"                                                  \
    "  --blocking       stop every thread (ptrace) for each sample and resume it:\n" \
    "                   exact by construction, the target paused for each sample\n"   \
    "  --no-colocate    sample from wherever the scheduler puts the sampler\n"       \
    "  --no-hold        colocate without holding the thread (the scheduler may\n"   \
    "                   run it on another CPU while it is read)\n"                    \
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
