/* async_stacks.c — task stacks of an asyncio graph and its sample, joined
 * through their awaiters, into a profile (async_stacks.h). */
#include "async_stacks.h"

#include <stdlib.h>
#include <string.h>

#define FIRST_FRAMES 256u
#define TASK_FILE "<task>"
#define UNNAMED_TASK "<unnamed task>"
#define STEP_FUNCTION "<task step>"

int fpr_async_mode_parse(const char *s)
{
    if (strcmp(s, "running") == 0)
        return FPR_ASYNC_RUNNING;
    if (strcmp(s, "all") == 0)
        return FPR_ASYNC_ALL;
    return -1;
}

const char *fpr_async_mode_name(int mode)
{
    return mode == FPR_ASYNC_ALL ? "all" : "running";
}

void fpr_async_buf_free(fpr_async_buf *b)
{
    free(b->frames);
    free(b->seen);
    free(b->parent);
    memset(b, 0, sizeof *b);
}

/* Room for n entries of size sz in *arr (capacity *cap); 0 or -1. */
static int reserve(void *arr, size_t *cap, size_t n, size_t sz)
{
    void **a = arr;
    if (n <= *cap)
        return 0;
    size_t c = *cap ? *cap : FIRST_FRAMES;
    while (c < n)
        c *= 2;
    void *na = realloc(*a, c * sz);
    if (!na)
        return -1;
    *a = na;
    *cap = c;
    return 0;
}

/* The node of g that node i's first awaiter is, by edges (see
 * fpr_async_view); SIZE_MAX when nothing awaits it. */
static size_t first_awaiter(const fp_async_graph *g, const fp_async_graph *edges, size_t i)
{
    const fp_async_node *n = fp_async_graph_get_node(g, i);
    if (edges != g) {
        size_t j = fp_async_graph_get_node_index(edges, n->addr);
        if (j != SIZE_MAX) {
            const fp_async_node *e = fp_async_graph_get_node(edges, j);
            if (!e->awaiter_count)
                return SIZE_MAX;
            const fp_async_node *a = fp_async_graph_get_node(edges, fp_async_graph_get_awaiter(edges, e->first_awaiter));
            return a ? fp_async_graph_get_node_index(g, a->addr) : SIZE_MAX;
        }
    }
    return n->awaiter_count ? fp_async_graph_get_awaiter(g, n->first_awaiter) : SIZE_MAX;
}

/* Whether task t's thread is in sm, walked (a failed walk is there
 * without frames, with its error). */
static bool thread_walked(const fp_sample *sm, const fp_async_node *t)
{
    const fp_thread *th = fp_sample_get_thread_by_native_id(sm, t->interp_id, t->thread_native_id);
    return th && !th->error;
}

/* A frame of the task stack that is no Python frame: a task's own (named
 * after it), or a task's step. */
static fp_frame pseudo_frame(const char *name, uint64_t addr)
{
    return (fp_frame){.function = name, .name = name, .file = TASK_FILE, .line = FP_POS_NONE,
                      .end_line = FP_POS_NONE, .column = FP_POS_NONE, .end_column = FP_POS_NONE,
                      .code_addr = 0, .frame_addr = addr, .instr_offset = 0, .kind = FP_FRAME_PYTHON};
}

static int append(fpr_async_buf *b, size_t *n, const fp_frame *f, size_t count)
{
    if (reserve(&b->frames, &b->cap, *n + count, sizeof *b->frames))
        return FP_E_NOMEM;
    memcpy(b->frames + *n, f, count * sizeof *f);
    *n += count;
    return FP_OK;
}

/* Task node's own frames: a running task's thread stack down to its
 * coroutine's frame, else its coroutine chain as the graph read it.  A
 * task marked running whose frame is not on its thread's stack is being
 * stepped by asyncio's C code, about to resume its coroutine or just back
 * from it: its chain is where it stands, under a pseudo-frame
 * STEP_FUNCTION that takes the instant's self time (else the function it
 * waits in would, as if it ran). */
static int own_frames(const fp_async_graph *g, const fp_sample *sm, size_t node, bool no_task_step,
                      fpr_async_buf *b, size_t *n)
{
    const fp_async_node *t = fp_async_graph_get_node(g, node);
    const fp_frame *chain = t->frame_count ? fp_async_graph_get_frame(g, t->first_frame) : NULL;
    size_t first, runs = fp_async_graph_get_running_frames(g, sm, node, &first);
    if (runs)
        return append(b, n, fp_sample_get_frame(sm, first), runs);
    if (t->running && !no_task_step) {
        fp_frame step = pseudo_frame(STEP_FUNCTION, 0);
        int rc = append(b, n, &step, 1);
        if (rc)
            return rc;
    }
    return chain ? append(b, n, chain, t->frame_count) : FP_OK;
}

/* The stack of task i joined through its awaiters (v->edges set), added to p. */
static int add_task(fpr_profile *p, const fp_async_graph *g, const fp_sample *sm, const fpr_async_view *v,
                    size_t i, int64_t t_ns, fpr_async_buf *b, fpr_async_counts *c)
{
    size_t nnodes = fp_async_graph_get_node_count(g), n = 0;
    memset(b->seen, 0, nnodes);
    int rc = FP_OK;
    for (size_t cur = i; cur != SIZE_MAX && rc == FP_OK; cur = first_awaiter(g, v->edges, cur)) {
        if (b->seen[cur]) {
            c->cut_chains++;
            break;
        }
        b->seen[cur] = 1;
        const fp_async_node *t = fp_async_graph_get_node(g, cur);
        if (!t->is_task)
            continue;
        if (cur == i)
            rc = own_frames(g, sm, cur, v->no_task_step, b, &n);
        else if (t->frame_count)
            rc = append(b, &n, fp_async_graph_get_frame(g, t->first_frame), t->frame_count);
        fp_frame marker = pseudo_frame(t->name ? t->name : UNNAMED_TASK, t->addr);
        if (rc == FP_OK)
            rc = append(b, &n, &marker, 1);
    }
    if (rc)
        return rc;
    const fp_async_node *t = fp_async_graph_get_node(g, i);
    const fp_thread *th = fp_sample_get_thread_by_native_id(sm, t->interp_id, t->thread_native_id);
    fp_thread as = th ? *th : (fp_thread){.native_id = t->thread_native_id, .interp_id = t->interp_id};
    as.error = 0;
    as.first_frame = 0;
    as.frame_count = n;
    if ((rc = fpr_profile_add_thread(p, &as, b->frames, t_ns)) == FP_OK)
        c->task_stacks++;
    return rc;
}

int fpr_async_add(fpr_profile *p, const fp_async_graph *g, const fp_sample *sm, const fpr_async_view *v,
                  int64_t t_ns, fpr_async_buf *b, fpr_async_counts *c)
{
    fpr_async_view w = *v; /* edges resolved once, for add_task too */
    if (!w.edges)
        w.edges = g;
    const fp_async_graph *edges = w.edges;
    size_t nnodes = fp_async_graph_get_node_count(g);
    c->reads++;
    if (!fp_async_graph_get_asyncio_loaded(g))
        c->no_asyncio++;
    if (reserve(&b->seen, &b->seen_cap, nnodes, 1) || reserve(&b->parent, &b->parent_cap, nnodes, 1))
        return FP_E_NOMEM;
    if (nnodes) /* no task yet: the arrays may not exist */
        memset(b->parent, 0, nnodes);
    for (size_t i = 0; i < nnodes; i++) {
        size_t a = first_awaiter(g, edges, i);
        if (a != SIZE_MAX)
            b->parent[a] = 1;
    }
    for (size_t i = 0; i < nnodes; i++) {
        const fp_async_node *t = fp_async_graph_get_node(g, i);
        bool take = t->is_task && (t->running || (v->mode == FPR_ASYNC_ALL && !b->parent[i]));
        if (take && t->running && !thread_walked(sm, t)) {
            /* what it runs now is unknown: its coroutine alone would be a
             * shorter stack than the truth's, not a lost sample */
            c->failed_threads++;
            take = false;
        }
        int rc = take ? add_task(p, g, sm, &w, i, t_ns, b, c) : FP_OK;
        if (rc)
            return rc;
    }
    if (v->mode != FPR_ASYNC_RUNNING)
        return FP_OK;
    size_t nth = fp_sample_get_thread_count(sm);
    for (size_t k = 0; k < nth; k++) {
        const fp_thread *th = fp_sample_get_thread(sm, k);
        bool runs = false;
        for (size_t i = 0; i < nnodes && !runs; i++) {
            const fp_async_node *t = fp_async_graph_get_node(g, i);
            runs = t->running && t->thread_native_id == th->native_id;
        }
        if (!runs && th->frame_count)
            c->idle_threads++;
    }
    return FP_OK;
}
