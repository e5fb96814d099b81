/* async_output.c — renders asyncio's task graph as the `dump --async --json`
 * schema (nodes in the graph's order, stacks innermost first, unknown values
 * null) or as a tree like `python -m asyncio pstree`: the nodes nobody
 * awaits at the top, under each node the nodes it awaits, each task with its
 * coroutine stack outermost first. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "async_output.h"
#include "json_writer.h"
#include "sample_output.h"

#define ASYNC_C_TABLE_HEX 0x030e0000u /* 3.14: asyncio's C module publishes its layout */

static const char *state_name(int state)
{
    switch (state) {
    case FP_FUTURE_CANCELLED: return "cancelled";
    case FP_FUTURE_FINISHED: return "finished";
    default: return "pending";
    }
}

/* The node index of nd's awaiter k, or n when the graph's awaiter list or
 * node table has no such entry (the accessors would answer 0, node 0). */
static size_t awaiter_of(const fp_async_graph *g, const fp_async_node *nd, size_t k, size_t n)
{
    size_t total = fp_async_graph_get_awaiter_count(g);
    if (nd->first_awaiter > total || k >= total - nd->first_awaiter)
        return n;
    size_t a = fp_async_graph_get_awaiter(g, nd->first_awaiter + k);
    return a < n ? a : n;
}

/* Node i's stack as printed, innermost first, in one run of *frames: a
 * running task's frames on its thread's stack in sm (what it runs now,
 * down to its coroutine), else the coroutine chain the graph holds. */
static size_t node_stack(const fp_async_graph *g, const fp_sample *sm, size_t i, const fp_frame **frames)
{
    size_t first, runs = fp_async_graph_get_running_frames(g, sm, i, &first);
    if (runs) {
        *frames = fp_sample_get_frame(sm, first);
        return runs;
    }
    const fp_async_node *nd = fp_async_graph_get_node(g, i);
    *frames = nd && nd->frame_count ? fp_async_graph_get_frame(g, nd->first_frame) : NULL;
    return *frames ? nd->frame_count : 0;
}

/* Why node i runs nothing in sm although it is a running task: its
 * thread's walk failed (the error's description), or the thread is not
 * in sm; NULL for any other node, and without sm. */
static const char *thread_failure(const fp_async_graph *g, const fp_sample *sm, size_t i)
{
    const fp_async_node *nd = fp_async_graph_get_node(g, i);
    if (!sm || !nd || !nd->running)
        return NULL;
    const fp_thread *th = fp_sample_get_thread_by_native_id(sm, nd->interp_id, nd->thread_native_id);
    if (!th)
        return "its thread was not reached";
    return th->error ? fp_error_describe(th->error) : NULL;
}

void cli_async_output_json(FILE *out, int pid, const fp_python_info *py, const fp_async_graph *g,
                           const fp_sample *sm, const fp_async_graph *edges)
{
    size_t n = fp_async_graph_get_node_count(g);
    jw_writer j;
    jw_init(&j, out);
    jw_begin_object(&j);
    jw_key(&j, "pid");
    jw_int(&j, pid);
    jw_key(&j, "python"); /* as `dump --json` */
    cli_json_python(&j, py);
    jw_key(&j, "asyncio_loaded");
    jw_bool(&j, fp_async_graph_get_asyncio_loaded(g));
    jw_key(&j, "stopped_ns");
    jw_uint(&j, fp_async_graph_get_stopped_ns(g));
    jw_key(&j, "tasks");
    jw_begin_array(&j);
    for (size_t i = 0; i < n; i++) {
        const fp_async_node *nd = fp_async_graph_get_node(g, i);
        if (!nd)
            continue;
        jw_begin_object(&j);
        jw_key(&j, "addr");
        jw_uint(&j, nd->addr);
        jw_key(&j, "task");
        jw_bool(&j, nd->is_task);
        jw_key(&j, "name");
        jw_string_or_null(&j, nd->name);
        jw_key(&j, "state");
        jw_string(&j, state_name(nd->state));
        jw_key(&j, "thread");
        jw_uint_or_null(&j, nd->thread_native_id);
        jw_key(&j, "interp");
        jw_int_or_null(&j, nd->interp_id < 0 ? -1 : nd->interp_id, -1);
        jw_key(&j, "running");
        jw_bool(&j, nd->running);
        jw_key(&j, "thread_error");
        jw_string_or_null(&j, thread_failure(g, sm, i));
        jw_key(&j, "stack");
        jw_begin_array(&j);
        const fp_frame *frames;
        size_t nf = node_stack(g, sm, i, &frames);
        for (size_t f = 0; f < nf; f++) {
            jw_begin_object(&j); /* as `dump --json`, without "kind": every frame is a Python function's */
            cli_json_frame_fields(&j, &frames[f]);
            jw_end_object(&j);
        }
        jw_end_array(&j);
        jw_key(&j, "awaited_by");
        jw_begin_array(&j);
        /* get_node of SIZE_MAX (not in edges) is NULL */
        const fp_async_node *en = edges ? fp_async_graph_get_node(edges, fp_async_graph_get_node_index(edges, nd->addr)) : NULL;
        const fp_async_graph *eg = en ? edges : g;
        if (!en)
            en = nd;
        size_t en_n = fp_async_graph_get_node_count(eg);
        for (size_t k = 0; k < en->awaiter_count; k++) {
            size_t a = awaiter_of(eg, en, k, en_n);
            if (a < en_n)
                jw_uint(&j, fp_async_graph_get_node(eg, a)->addr);
        }
        jw_end_array(&j);
        jw_end_object(&j);
    }
    jw_end_array(&j);
    jw_end_object(&j);
    fputc('\n', out);
}

void cli_async_output_json_error(FILE *out, int pid, int code, const char *message)
{
    jw_writer j;
    jw_init(&j, out);
    jw_begin_object(&j);
    jw_key(&j, "pid");
    jw_int(&j, pid);
    jw_key(&j, "error");
    jw_string(&j, message);
    jw_key(&j, "code");
    jw_int(&j, code);
    jw_end_object(&j);
    fputc('\n', out);
}

/* The text form's working state: the reverse of the awaiter lists (the
 * nodes node p awaits are child[child_start[p] .. child_start[p + 1]), in
 * the graph's order) and an explicit depth-first walk, so that a long chain
 * of awaiting tasks cannot exhaust the C stack.  A node is on the walk's
 * path at most once, so the path is at most n deep. */
typedef struct tree {
    FILE *out;
    const fp_async_graph *g;
    const fp_sample *sm;  /* the threads' stacks read with g, or NULL */
    size_t n;
    size_t *child_start;  /* n + 1 */
    size_t *child;        /* one per valid awaiter edge */
    bool *printed;        /* printed in full (label, stack, children) */
    bool *on_path;        /* an ancestor of the line being printed */
    size_t *path;         /* the walk: node at each depth */
    size_t *next;         /* its next child to print */
    bool *last;           /* the node at each depth is its parent's last child */
    size_t *starts;       /* the top-level nodes */
} tree;

static void tree_free(tree *t)
{
    free(t->child_start);
    free(t->child);
    free(t->printed);
    free(t->on_path);
    free(t->path);
    free(t->next);
    free(t->last);
    free(t->starts);
}

/* Every valid awaiter edge (node i awaited by node a): counted into
 * child_start[a + 1], or, with fill, put into a's run of child. */
static void each_edge(tree *t, bool fill)
{
    for (size_t i = 0; i < t->n; i++) {
        const fp_async_node *nd = fp_async_graph_get_node(t->g, i);
        for (size_t k = 0; nd && k < nd->awaiter_count; k++) {
            size_t a = awaiter_of(t->g, nd, k, t->n);
            if (a >= t->n)
                continue;
            if (fill)
                t->child[t->child_start[a]++] = i;
            else
                t->child_start[a + 1]++;
        }
    }
}

/* Builds the reverse map in O(nodes + edges): counts per awaiter, prefix
 * sums, then fills each slot's run, which leaves child_start shifted by
 * one entry, shifted back at the end. */
static int tree_init(tree *t, FILE *out, const fp_async_graph *g, const fp_sample *sm)
{
    memset(t, 0, sizeof *t);
    t->out = out;
    t->g = g;
    t->sm = sm;
    size_t n = t->n = fp_async_graph_get_node_count(g);
    t->child_start = calloc(n + 1, sizeof *t->child_start);
    t->printed = calloc(n + 1, sizeof *t->printed);
    t->on_path = calloc(n + 1, sizeof *t->on_path);
    t->path = calloc(n + 1, sizeof *t->path);
    t->next = calloc(n + 1, sizeof *t->next);
    t->last = calloc(n + 1, sizeof *t->last);
    t->starts = calloc(n + 1, sizeof *t->starts);
    if (!t->child_start || !t->printed || !t->on_path || !t->path || !t->next || !t->last || !t->starts)
        goto fail;
    each_edge(t, false);
    for (size_t p = 0; p < n; p++)
        t->child_start[p + 1] += t->child_start[p];
    t->child = calloc(t->child_start[n] + 1, sizeof *t->child);
    if (!t->child)
        goto fail;
    each_edge(t, true);
    for (size_t p = n; p > 0; p--)
        t->child_start[p] = t->child_start[p - 1];
    t->child_start[0] = 0;
    return 0;
fail:
    tree_free(t);
    return FP_E_NOMEM;
}

/* Marks in seen every node reachable from s (s and what it awaits, and so
 * on), using path as a work list: each node enters it once. */
static void mark_reachable(tree *t, size_t s, bool *seen)
{
    size_t sp = 0;
    seen[s] = true;
    t->path[sp++] = s;
    while (sp) {
        size_t p = t->path[--sp];
        for (size_t e = t->child_start[p]; e < t->child_start[p + 1]; e++) {
            size_t c = t->child[e];
            if (!seen[c]) {
                seen[c] = true;
                t->path[sp++] = c;
            }
        }
    }
}

/* The top-level nodes, in the order printed: every node nobody awaits, in
 * the graph's order, then for each node still unreached (one awaited only
 * within a cycle) the first such node.  Printing in full what a top-level
 * node reaches prints exactly the nodes marked here, so the starts are
 * known before printing (the last one takes └──). */
static size_t find_starts(tree *t)
{
    size_t ns = 0;
    bool *seen = t->printed; /* borrowed; cleared before printing */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < t->n; i++) {
            const fp_async_node *nd = fp_async_graph_get_node(t->g, i);
            if (seen[i] || (pass == 0 && (!nd || nd->awaiter_count != 0)))
                continue;
            t->starts[ns++] = i;
            mark_reachable(t, i, seen);
        }
    }
    memset(seen, 0, (t->n + 1) * sizeof *seen);
    return ns;
}

/* A task name between quotes; quotes, backslashes and control characters
 * escaped, so that a name cannot break the tree's lines. */
static void put_name(FILE *out, const char *s)
{
    if (!s) { /* a task whose name slot is empty (frameproof/async.h) */
        fputs("(no name)", out);
        return;
    }
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(out, "\\x%02x", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

/* `Task "name" 0x...` or `future 0x...`: how later lines refer to a node. */
static void put_ref(FILE *out, const fp_async_node *nd)
{
    if (nd->is_task) {
        fputs("Task ", out);
        put_name(out, nd->name);
        fprintf(out, " 0x%" PRIx64, nd->addr);
    } else {
        fprintf(out, "future 0x%" PRIx64, nd->addr);
    }
}

/* The continuation of the levels above depth: a bar where a later sibling
 * follows. */
static void put_prefix(const tree *t, size_t depth)
{
    for (size_t i = 0; i < depth; i++)
        fputs(t->last[i] ? "    " : "│   ", t->out);
}

static void put_branch(const tree *t, size_t depth)
{
    put_prefix(t, depth);
    fputs(t->last[depth] ? "└── " : "├── ", t->out);
}

/* Node i's label and stack (outermost first) at depth; its children follow
 * the stack, so the stack's lines carry a bar down to them when it has
 * any. */
static void put_node(tree *t, size_t i, size_t depth)
{
    FILE *out = t->out;
    const fp_async_node *nd = fp_async_graph_get_node(t->g, i);
    put_branch(t, depth);
    if (nd->is_task) {
        fputs("Task ", out);
        put_name(out, nd->name);
        fprintf(out, " (0x%" PRIx64, nd->addr);
        if (nd->thread_native_id)
            fprintf(out, ", thread %" PRIu64, nd->thread_native_id);
        /* the interpreter when not the main one, or when it is the list's
         * holder (the task's thread exited) */
        if (nd->interp_id > 0 || (nd->interp_id == 0 && !nd->thread_native_id))
            fprintf(out, ", interpreter %" PRId64, nd->interp_id);
        fputc(')', out);
    } else {
        fprintf(out, "future 0x%" PRIx64, nd->addr);
    }
    if (nd->running)
        fputs(" [running]", out);
    const char *why = thread_failure(t->g, t->sm, i);
    if (why)
        fprintf(out, " [its thread's stack: %s]", why);
    if (nd->state != FP_FUTURE_PENDING)
        fprintf(out, " [%s]", state_name(nd->state));
    fputc('\n', out);
    bool has_children = t->child_start[i + 1] > t->child_start[i];
    const fp_frame *frames;
    for (size_t f = node_stack(t->g, t->sm, i, &frames); f-- > 0;) {
        const fp_frame *fr = &frames[f];
        put_prefix(t, depth + 1);
        fputs(has_children ? "│   " : "    ", out);
        if (fr->line == FP_POS_NONE)
            fprintf(out, "%s (%s)\n", fr->function, fr->file);
        else
            fprintf(out, "%s (%s:%d)\n", fr->function, fr->file, fr->line);
    }
    t->printed[i] = true;
}

int cli_async_output_text(FILE *out, int pid, const fp_python_info *py, const fp_async_graph *g,
                          const fp_sample *sm)
{
    tree t;
    if (tree_init(&t, out, g, sm))
        return FP_E_NOMEM;
    fprintf(out, "Process %d: CPython %s%s%s%s ", pid, py->version, py->free_threaded ? ", free-threaded" : "",
            py->debug ? ", debug build" : "", py->untested ? ", untested version" : "");
    if (!fp_async_graph_get_asyncio_loaded(g)) {
        fputs(py->hexversion >= ASYNC_C_TABLE_HEX ? "(neither asyncio's C module nor asyncio.tasks is loaded: no tasks)\n"
                                                  : "(asyncio.tasks is not imported: no tasks)\n", out);
        goto out;
    }
    size_t tasks = 0;
    for (size_t i = 0; i < t.n; i++)
        tasks += fp_async_graph_get_node(g, i)->is_task;
    fprintf(out, "(asyncio: %zu task%s, %zu other future%s", tasks, tasks == 1 ? "" : "s", t.n - tasks,
            t.n - tasks == 1 ? "" : "s");
    uint64_t stopped = fp_async_graph_get_stopped_ns(g);
    if (stopped) /* a memory image is read without stopping anything */
        fprintf(out, "; read with the target stopped for %.3f ms", (double)stopped / 1e6);
    fputs(")\n", out);
    size_t ns = find_starts(&t);
    for (size_t s = 0; s < ns; s++) {
        size_t sp = 0;
        t.last[0] = s == ns - 1;
        put_node(&t, t.starts[s], 0);
        t.on_path[t.starts[s]] = true;
        t.path[sp] = t.starts[s];
        t.next[sp++] = 0;
        while (sp) {
            size_t d = sp - 1, p = t.path[d];
            size_t first = t.child_start[p], count = t.child_start[p + 1] - first;
            if (t.next[d] == count) {
                t.on_path[p] = false;
                sp--;
                continue;
            }
            size_t k = t.next[d]++, c = t.child[first + k];
            t.last[d + 1] = k == count - 1;
            if (t.on_path[c] || t.printed[c]) {
                /* a cycle is not followed; a node awaited by several is
                 * printed in full under the first only */
                put_branch(&t, d + 1);
                fputs(t.on_path[c] ? "(cycle: " : "(see above: ", out);
                put_ref(out, fp_async_graph_get_node(g, c));
                fputs(")\n", out);
                continue;
            }
            put_node(&t, c, d + 1);
            t.on_path[c] = true;
            t.path[sp] = c;
            t.next[sp++] = 0;
        }
    }
out:
    tree_free(&t);
    return 0;
}
