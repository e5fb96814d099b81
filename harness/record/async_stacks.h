/* async_stacks.h — `record --async`: the task stacks of one asyncio graph
 * read (frameproof/async.h) and the thread stacks taken at the same
 * instant, added to a profile as CPython's --async-aware profiles have
 * them.  A task stack is the task's own frames, innermost first, then a
 * marker frame for the task (function: its name, file "<task>", no line),
 * then the frames and marker of the task that awaits it, and so on up to
 * a task that nothing awaits.  A running task's own frames are its
 * thread's stack down to its coroutine's frame (what it runs now,
 * functions it calls included); a suspended task's are its coroutine
 * chain.  A running task whose coroutine is not on its thread's stack
 * (asyncio's C code is stepping it, about to enter the coroutine or just
 * back from it) has its chain under a pseudo-frame "<task step>" (file
 * "<task>"), which takes that instant's self time.  Where several nodes await a task, the first one asyncio lists is
 * followed (as CPython's profiler does); a future that is not a task adds
 * no frame and is passed through to what awaits it. */
#ifndef FPR_ASYNC_STACKS_H
#define FPR_ASYNC_STACKS_H

#include <stdbool.h>
#include <stdint.h>

#include "frameproof/async.h"
#include "profile.h"

/* Which tasks one read gives a stack (--async-mode). */
enum fpr_async_mode {
    FPR_ASYNC_RUNNING = 0, /* the task each thread is running, if any */
    FPR_ASYNC_ALL = 1,     /* every task that no task awaits through its first awaiter (a leaf), and every
                            * running task: where each chain of awaits stands, suspended or not */
};

/* "running" or "all" -> enum fpr_async_mode; -1 for anything else. */
int fpr_async_mode_parse(const char *s);
const char *fpr_async_mode_name(int mode);

/* What the reads gave, beyond the stacks added. */
typedef struct fpr_async_counts {
    uint64_t reads;          /* graph reads added */
    uint64_t no_asyncio;     /* of them, reads of a target whose asyncio C module was not loaded */
    uint64_t task_stacks;    /* stacks added */
    uint64_t idle_threads;   /* running mode: threads with a Python frame running no task (the event loop
                              * waiting, code outside asyncio), left out */
    uint64_t cut_chains;     /* chains of awaiters that came back to a task already on the stack (a cycle
                              * in the graph): cut there and counted */
    uint64_t failed_threads; /* running tasks left out: their thread's walk failed (deeper than
                              * --max-depth, a frame that failed its checks) or did not reach it */
} fpr_async_counts;

/* Scratch room reused across reads. */
typedef struct fpr_async_buf {
    fp_frame *frames;
    size_t cap;
    uint8_t *seen;           /* per node: already on the stack being built */
    size_t seen_cap;
    uint8_t *parent;         /* per node: some node's first awaiter */
    size_t parent_cap;
} fpr_async_buf;

void fpr_async_buf_free(fpr_async_buf *b);

/* Which task stacks a read gives, and how they are joined. */
typedef struct fpr_async_view {
    int mode;                      /* enum fpr_async_mode */
    const fp_async_graph *edges;   /* the graph whose awaiter edges join the stacks: NULL for the read's own;
                                    * a self-test gives the previous read's (the edge of a node at the same
                                    * address there, a stale edge the checks must catch) */
    bool no_task_step;             /* self-test: a task being stepped gets its waiting chain with no
                                    * "<task step>" over it, so the function it waits in takes the instant's
                                    * self time as if it ran (a bias the accuracy verdict must catch) */
} fpr_async_view;

/* Adds the task stacks of graph g and sample sm (read at one instant by
 * fp_async_graph_read_sample) taken at t_ns to p, as v says, counting
 * into *c.  FP_OK or FP_E_NOMEM. */
int fpr_async_add(fpr_profile *p, const fp_async_graph *g, const fp_sample *sm, const fpr_async_view *v,
                  int64_t t_ns, fpr_async_buf *b, fpr_async_counts *c);

#endif
