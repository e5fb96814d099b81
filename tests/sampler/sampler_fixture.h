/* sampler_fixture.h — what the sampling-API tests share (test_sampler*.c):
 * the target programs, a running interpreter with a session attached
 * (sampler_fixture.c), recording callbacks and CPU-mask helpers. */
#ifndef SAMPLER_FIXTURE_H
#define SAMPLER_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <linux/capability.h>
#include <linux/sched.h>
#include <linux/sched/types.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "colocate.h"
#include "sampler.h"

#define READY_TIMEOUT_MS 30000 /* interpreter start-up, slow under sanitizers */
#define MAX_RECORDED 1024      /* attempts a test callback records */
#define NS_PER_MS 1000000
#define TARGET_PROGRAM "import sys, time\nprint('ready', flush=True)\nwhile True: time.sleep(0.001)\n"
/* A worker thread spinning with the GIL while the main thread waits for it
 * without the GIL: the thread a colocated run follows is the worker. */
#define SPIN_PROGRAM                                                                                        \
    "import threading\ndef spin():\n    while True: pass\n"                                                  \
    "t = threading.Thread(target=spin, daemon=True)\nt.start()\nprint('ready', flush=True)\nt.join()\n"
/* A worker switching between two short call chains for ever: its walks
 * tear now and then under a sampler on another CPU. */
#define CHURN_PROGRAM                                                                                      \
    "import threading\ndef leaf(): return 1\ndef mid(): return leaf()\ndef other(): return 2\n"           \
    "def churn():\n    while True: mid(); other()\n"                                                      \
    "t = threading.Thread(target=churn, daemon=True)\nt.start()\nprint('ready', flush=True)\nt.join()\n"
/* A worker making code objects without pause and calling them: a
 * session's strings for their frames change from one sample to the next. */
#define CODEGEN_PROGRAM                                                                                    \
    "import threading\ndef make():\n    n = 0\n    while True:\n        n += 1\n        ns = {}\n"            \
    "        exec('def f%d():\\n    return g%d()\\ndef g%d():\\n    return 1\\n' % (n, n, n), ns)\n"        \
    "        ns['f%d' % n]()\n"                                                                             \
    "t = threading.Thread(target=make, daemon=True)\nt.start()\nprint('ready', flush=True)\nt.join()\n"
/* The main thread stopped in the return of `leaf`, in a C profile
 * function (cProfile's, whose timer, SimpleQueue.get, blocks on its second
 * call: the first is leaf's call event).  `leaf` is then the top frame,
 * its stack depth saved at its return, not at a call. */
#define RETURNING_PROGRAM                                                                                  \
    "import _queue, cProfile\nq = _queue.SimpleQueue()\ndef leaf():\n    return 1\n"                    \
    "p = cProfile.Profile(q.get, builtins=False)\nq.put(0)\nprint('ready', flush=True)\n"               \
    "p.enable()\nleaf()\n"
#define BLOCKED_TRIES 500   /* polls, BLOCKED_PAUSE_NS apart, before the thread must be blocked */
#define BLOCKED_PAUSE_NS 10000000L
#define FAULT_SAMPLES 4000 /* back-to-back attempts of a fault test: enough to see walks torn */
#define COLOCATE_SAMPLES 30
#define CPU_READ_TRIES 20   /* a running thread may move between two reads of its CPU */
#define HOLDER_TRIES 300    /* samples, HOLDER_PAUSE_NS apart, before the worker must have been seen with the GIL */
#define HOLDER_PAUSE_NS 10000000L /* on a loaded machine the worker may wait for a CPU, the GIL free meanwhile */

/* The interpreter the tests run (test_sampler.c: its argument). */
extern const char *sampler_python;

/* A running interpreter with a session attached to it. */
typedef struct target {
    pid_t pid;
    fp_session *s;
    fp_sample *sm;
} target;

/* Starts program and waits for its "ready" line. */
pid_t spawn_program(const char *program);

void reap(pid_t pid);

int setup_program(void **state, const char *program);

int setup(void **state);

int setup_churn(void **state);

int setup_codegen(void **state);

int setup_spin(void **state);

int setup_returning(void **state);

int teardown(void **state);

/* What the test callback saw. */
typedef struct record {
    uint64_t calls;
    uint64_t stop_at;        /* return nonzero at this index (UINT64_MAX: never) */
    uint64_t stall_at;       /* sleep stall_ns in the callback at this index */
    int64_t stall_ns;
    bool in_order;           /* every index was the previous one plus one */
    bool sample_ok;          /* the sample pointer was set exactly when it should be */
    int slack_ns;            /* the thread's timer slack during the first callback */
    struct sched_attr sched; /* its scheduling attributes then */
    int child_policy;        /* the policy a child forked then started with (-1: none forked) */
    bool fork_child;         /* fork that child */
    int64_t t_ns[MAX_RECORDED];
} record;

void get_sched(struct sched_attr *a);

/* The calling thread's scheduling policy, or -1 (no cmocka assertion:
 * also called in forked children). */
int policy_now(void);

/* The scheduling policy a child forked now starts with. */
int child_policy(void);

int on_sample(void *ctx, const fps_outcome *o);

fps_config config(double rate_hz, double duration_s, uint64_t count);

/* Runs c on t with the recording callback; fps_run must return `expect`. */
void run(target *t, const fps_config *c, record *r, fps_stats *st, int expect);

/* The calling thread's affinity mask, as the kernel gives it (the cpu_set_t
 * of <sched.h> would clash with <linux/sched/types.h>). */
#define MASK_WORDS (FPS_COLOCATE_MAX_CPUS / 64)
typedef struct cpu_mask {
    unsigned long w[MASK_WORDS];
} cpu_mask;

bool get_mask_of(pid_t task, cpu_mask *m);

bool get_mask(cpu_mask *m);

int only_cpu(const cpu_mask *m);

int mask_count(const cpu_mask *m);

/* A caller's own retry hook: what it heard. */
typedef struct own_hook {
    unsigned calls;
    uint64_t native_id;
} own_hook;

void on_own_retry(void *ctx, uint64_t native_id);

/* What the colocation callback saw of the calling thread's affinity and
 * of the session's retry hook. */
typedef struct colocated {
    uint64_t calls, one_cpu;   /* attempts, and those made with a one-CPU mask */
    fp_session *s;
    uint64_t tid;              /* the id the callback calls the run's hook with, once (0: not) */
    uint64_t other_hook;       /* attempts during which the session's hook was not the run's */
} colocated;

/* The native id of the spin program's worker, seen holding the GIL in a
 * sample of t (t->sm then holds that sample). */
uint64_t spinning_holder(target *t);

#endif
