/* async_graph.c — asyncio's task graph of a stopped target (frameproof/async.h):
 * the entry points, and the 3.14+ reader of asyncio's C module's lists
 * (3.11-3.13, and 3.14+'s pure-Python tasks: async_legacy.c).
 *
 * Every thread is stopped for the read, so the lists, tasks, coroutines and
 * sets read are one instant; what is read is still untrusted (any pointer
 * may be garbage in a corrupt or hostile process): every walk is bounded,
 * every value checked before it is followed, a task listed twice is an
 * error.  Two passes: the tasks on every thread's and interpreter's list
 * (asyncio keeps only pending tasks there), then, for each node, the
 * objects in its awaited_by (one object, or a set of them), where a future
 * that is no listed task becomes a node of its own. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "frameproof/async.h"
#include "frameproof/pause.h"
#include "async_build.h"
#include "async_offsets.h"
#include "grow.h"
#include "pyset.h"
#include "read.h"
#include "session.h"
#include "typed_load.h"
#include "walk.h"

#define GRAPH_INITIAL 64u
#define U(x) FPI_ASYNC_U(x)

/* One read: the session, the tables, and per node what pass 2 needs. */
typedef struct graph_read {
    fpi_async_build b;
    fp_session *s;
    const fpi_layout *l;
    fpi_async_offsets o;
    fp_async_graph *g;
    struct awaited_by { uint64_t obj; bool is_set; } *by; /* per node: its awaited_by (obj 0: none) */
    size_t by_cap;
    uint8_t obj[FPI_MAX_SMALL_STRUCT];
} graph_read;

static int read_u64(graph_read *r, uint64_t addr, uint64_t *out, const char *what)
{
    return fpi_async_read_u64(&r->b, addr, out, what);
}

/* A node for the task or future at addr (the object's bytes read into r->obj). */
static int add_node(graph_read *r, uint64_t addr, uint64_t thread, int64_t interp, bool running, bool listed)
{
    fp_session *s = r->s;
    fp_async_graph *g = r->g;
    const fpi_async_offsets *o = &r->o;
    if (fpi_async_node_find(&r->b, addr) != SIZE_MAX) /* before the read: its bytes stay in r->obj */
        return fpi_err(&s->err, FP_E_CORRUPT, "asyncio: task 0x%llx is listed twice", U(addr));
    int rc = fpi_read(s, addr, r->obj, o->task_size);
    if (rc)
        return fpi_err_code(&s->err, rc, "cannot read asyncio %s 0x%llx", listed ? "task" : "future", U(addr));
    uint8_t is_task = r->obj[o->task_is_task], by_set = r->obj[o->task_awaited_by_is_set];
    int32_t state = (int32_t)fpi_load_u32(r->obj, (int32_t)o->task_state);
    if (is_task > 1 || by_set > 1 || state < FP_FUTURE_PENDING || state > FP_FUTURE_FINISHED || (listed && !is_task))
        return fpi_err(&s->err, FP_E_CORRUPT, "asyncio: 0x%llx is no %s (state %d, is_task %u)", U(addr),
                       listed ? "task" : "future", state, is_task);
    struct awaited_by *nb = fpi_grow(r->by, &r->by_cap, g->nnodes + 1, sizeof *nb, GRAPH_INITIAL);
    if (!nb)
        return fpi_err(&s->err, FP_E_NOMEM, "out of memory: asyncio node %zu", g->nnodes + 1);
    r->by = nb;
    size_t i;
    if ((rc = fpi_async_node_push(&r->b, addr, &i)))
        return rc;
    fp_async_node *n = &g->nodes[i];
    n->is_task = is_task;
    n->state = state;
    n->thread_native_id = thread;
    n->interp_id = interp;
    n->running = running;
    r->by[i] = (struct awaited_by){fpi_load_u64(r->obj, (int32_t)o->task_awaited_by), by_set};
    if (!is_task)
        return FP_OK;
    return fpi_async_task_fill(&r->b, i, fpi_load_u64(r->obj, (int32_t)o->task_name),
                               fpi_load_u64(r->obj, (int32_t)o->task_coro));
}

/* The tasks on one list (a thread's, or its interpreter's for exited threads). */
static int walk_list(graph_read *r, uint64_t head, uint64_t thread, int64_t interp, uint64_t running)
{
    uint64_t node;
    int rc = read_u64(r, head, &node, "a task list");
    for (uint32_t k = 0; !rc && node != head; k++) {
        if (k == FPI_ASYNC_MAX_NODES)
            return fpi_err(&r->s->err, FP_E_LIMIT, "asyncio: a task list longer than %u", FPI_ASYNC_MAX_NODES);
        if (node < r->o.task_node)
            return fpi_err(&r->s->err, FP_E_CORRUPT, "asyncio: task list 0x%llx breaks at 0x%llx", U(head), U(node));
        uint64_t task = node - r->o.task_node;
        if ((rc = add_node(r, task, thread, interp, task == running, true)))
            return rc;
        node = fpi_load_u64(r->obj, (int32_t)r->o.task_node); /* add_node left the task's bytes there */
    }
    return rc;
}

/* Pass 1: every interpreter's threads' lists, then its own. */
static int walk_lists(graph_read *r)
{
    fp_session *s = r->s;
    const fpi_layout *l = r->l;
    uint64_t interp;
    int rc = read_u64(r, s->info.runtime_addr + (uint64_t)l->rt_interpreters_head, &interp, "the interpreter list");
    uint8_t *ts = malloc(r->o.ts_size);
    if (!ts)
        return fpi_err(&s->err, FP_E_NOMEM, "out of memory: a thread state");
    for (uint32_t ni = 0; !rc && interp; ni++) {
        if (ni == s->opts.max_interpreters) {
            rc = fpi_err(&s->err, FP_E_LIMIT, "asyncio: more than %u interpreters", s->opts.max_interpreters);
            break;
        }
        uint64_t id, tstate, next;
        if ((rc = read_u64(r, interp + (uint64_t)l->interp_id, &id, "an interpreter's id")) ||
            (rc = read_u64(r, interp + (uint64_t)l->interp_threads_head, &tstate, "a thread list")) ||
            (rc = read_u64(r, interp + (uint64_t)l->interp_next, &next, "the interpreter list")))
            break;
        if ((int64_t)id < 0) { /* CPython numbers its interpreters from 0 */
            rc = fpi_err(&s->err, FP_E_CORRUPT, "asyncio: interpreter 0x%llx has id %lld", U(interp), (long long)id);
            break;
        }
        for (uint32_t nt = 0; !rc && tstate; nt++) {
            if (nt == s->opts.max_threads) {
                rc = fpi_err(&s->err, FP_E_LIMIT, "asyncio: more than %u threads", s->opts.max_threads);
                break;
            }
            if ((rc = fpi_read(s, tstate, ts, r->o.ts_size))) {
                rc = fpi_err_code(&s->err, rc, "cannot read thread state 0x%llx for its asyncio tasks", U(tstate));
                break;
            }
            uint64_t native = fpi_load_u64(ts, l->ts_native_thread_id);
            uint64_t running = fpi_load_u64(ts, (int32_t)r->o.ts_running_task);
            rc = walk_list(r, tstate + r->o.ts_tasks_head, native, (int64_t)id, running);
            tstate = fpi_load_u64(ts, l->ts_next);
        }
        if (!rc)
            rc = walk_list(r, interp + r->o.interp_tasks_head, 0, (int64_t)id, 0);
        interp = next;
    }
    free(ts);
    return rc;
}

static int add_awaiter(graph_read *r, size_t node, uint64_t obj)
{
    size_t a = fpi_async_node_find(&r->b, obj);
    int rc = FP_OK;
    if (a == SIZE_MAX) {
        a = r->g->nnodes;
        if ((rc = add_node(r, obj, 0, -1, false, false)))
            return rc;
    }
    return fpi_async_awaiter_push(&r->b, node, a);
}

/* Pass 2, one node: what its awaited_by holds. */
static int resolve_awaiters(graph_read *r, size_t i)
{
    const fpi_layout *l = r->l;
    r->g->nodes[i].first_awaiter = r->g->nawaiters;
    uint64_t by = r->by[i].obj;
    if (!by)
        return FP_OK;
    if (!r->by[i].is_set)
        return add_awaiter(r, i, by);
    const fpi_set_places at = {.used = l->set_used, .mask = l->set_mask, .table = l->set_table};
    uint64_t *members = NULL;
    size_t n = 0;
    int rc = fpi_set_members(r->s, by, &at, FPI_ASYNC_MAX_AWAITERS, false, "asyncio awaited_by set", &members,
                             &n);
    for (size_t k = 0; !rc && k < n; k++)
        rc = add_awaiter(r, i, members[k]);
    free(members);
    return rc;
}

/* 3.14+: the tasks of asyncio's pure-Python implementation, which are on
 * no list of its C module's but in the registries of asyncio.tasks, as
 * before 3.14 (async_legacy.c).  A program runs them on its own only when
 * asyncio's C module is not imported; beside C tasks (a task factory
 * making asyncio.tasks._PyTask) asyncio records who awaits them nowhere,
 * and the graph is refused rather than given without those edges. */
static int read_pure(graph_read *r)
{
    const size_t c_nodes = r->g->nnodes;
    bool imported = false;
    int rc = fpi_async_legacy_read(&r->b, &imported);
    if (rc)
        return rc;
    if (c_nodes && r->g->nnodes > c_nodes)
        return fpi_err(&r->s->err, FP_E_UNSUPPORTED,
                       "asyncio: %zu tasks of asyncio's pure-Python implementation beside %zu of its C module, which "
                       "records who awaits them nowhere (asyncio.all_tasks() and capture_call_graph() leave them "
                       "out too)", r->g->nnodes - c_nodes, c_nodes);
    r->g->loaded = r->g->loaded || imported;
    return FP_OK;
}

/* A live process is stopped for the read; a session attached to a reader
 * without one (an image) reads it as it is: on 3.14+ through the table
 * address its target description gave, before 3.14 through the runtime. */
static int check_target(fp_session *s)
{
    const fpi_layout *l = &s->layout;
    if (!s->attached)
        return fpi_err(&s->err, FP_E_STATE, "asyncio task graphs: the session is not attached");
    if (l->minor < 14) {
        fpi_async_objs objs;
        if (!fpi_async_legacy_objs(l, &objs))
            return fpi_err(&s->err, FP_E_UNSUPPORTED,
                           "asyncio task graphs: the target runs %s, whose asyncio layout frameproof does not know",
                           s->info.version);
        return FP_OK;
    }
    if (l->gen_iframe == FPI_OFF_NONE || l->tp_flags == FPI_OFF_NONE || l->set_table == FPI_OFF_NONE ||
        l->long_digits == FPI_OFF_NONE || l->fr_stackpointer == FPI_OFF_NONE)
        return fpi_err(&s->err, FP_E_UNSUPPORTED,
                       "asyncio task graphs: the target runs %s, whose debug offsets lack what asyncio's graph is "
                       "read through", s->info.version);
    if (s->pid <= 0 && !s->async_debug_at)
        return fpi_err(&s->err, FP_E_STATE,
                       "asyncio task graphs: no live process and no address of asyncio's table (an image holds one"
                       " when `snapshot --async` captured a task graph)");
    return FP_OK;
}

int fp_session_get_asyncio_table(fp_session *s, uint64_t *addr)
{
    if (!s || !addr)
        return FP_E_INVALID_ARG;
    *addr = 0;
    s->err.msg[0] = 0;
    if (!s->attached)
        return fpi_err(&s->err, FP_E_STATE, "asyncio task graphs: the session is not attached");
    if (s->async_debug_at || s->pid <= 0) {
        *addr = s->async_debug_at;
        return FP_OK;
    }
    bool found = false;
    int rc = fpi_async_offsets_locate(s->pid, &found, addr, &s->err);
    if (!rc && found)
        s->async_debug_at = *addr;
    return rc;
}

int fp_async_graph_read(fp_session *s, fp_async_graph **out)
{
    return fp_async_graph_read_sample(s, NULL, out);
}

int fp_async_graph_read_sample(fp_session *s, fp_sample *sm, fp_async_graph **out)
{
    if (!s || !out)
        return FP_E_INVALID_ARG;
    *out = NULL;
    s->err.msg[0] = 0;
    int rc = check_target(s);
    if (rc)
        return rc;
    graph_read *r = calloc(1, sizeof *r);
    fp_async_graph *g = calloc(1, sizeof *g);
    fp_pause *p = NULL;
    fpi_errbuf threads_err = {{0}}; /* why a thread's own walk failed, the graph read all the same */
    if (!r || !g) {
        rc = fpi_err(&s->err, FP_E_NOMEM, "out of memory: an asyncio graph");
        goto out;
    }
    r->s = s;
    r->l = &s->layout;
    r->g = g;
    r->b = (fpi_async_build){.s = s, .l = r->l, .g = g};
    const bool legacy = r->l->minor < 14;
    uint64_t at = 0;
    if (legacy)
        (void)fpi_async_legacy_objs(r->l, &r->b.objs);
    else
        r->b.objs = (fpi_async_objs){.gen_iframe = r->l->gen_iframe, .gen_frame_state = r->l->gen_frame_state,
                                     .tp_flags = r->l->tp_flags, .long_lv_tag = r->l->long_lv_tag,
                                     .long_digits = r->l->long_digits};
    if (!legacy && (rc = fp_session_get_asyncio_table(s, &at)))
        goto out;
    /* before 3.14 whether asyncio is loaded is known only once its modules are read */
    bool found = legacy || at != 0;
    if (!legacy && found) {
        /* The table is read and validated at every read still. */
        uint8_t table[FPI_ASYNC_TABLE_SIZE];
        if ((rc = fpi_read(s, at, table, sizeof table))) {
            rc = fpi_err_code(&s->err, rc, "cannot read asyncio's debug offsets at 0x%llx", U(at));
            goto out;
        }
        if ((rc = fpi_async_offsets_parse(table, sizeof table, r->l, &r->o, &s->err)))
            goto out;
        g->loaded = true;
    }
    char msg[256];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (s->pid > 0 && (rc = fp_pause_new(s->pid, true, &p, msg, sizeof msg))) {
        rc = fpi_err(&s->err, rc, "asyncio: cannot stop the target: %s", msg);
        goto out;
    }
    if (sm) {
        /* The threads' stacks first: the walk checks the code generation,
         * after which every cached code object is one of this instant.
         * Without a process (an image) the walk is fp_session_sample's,
         * which reads what `snapshot` recorded. */
        rc = p ? fpi_session_walk_stopped(s, sm, p) : fpi_walk_all(s, sm);
        if (rc && !sm->threads_failed_alone)
            goto out;
        if (rc) {
            /* Some threads' own walks failed (each says why in sm): the
             * graph does not need their stacks and is read all the same,
             * every code object afresh (the failed walk may not have
             * checked the generation). */
            threads_err = s->err;
            rc = FP_OK;
            s->have_generation = false;
        }
        if (!s->have_generation)
            fpi_code_cache_invalidate(&s->cc); /* retired, not freed: the sample's strings stay valid */
    } else {
        /* Code objects freed since the session last looked may have had
         * their addresses reused: read every one afresh (the next sample
         * checks the generation again). */
        fpi_code_cache_begin_sample(&s->cc);
        fpi_code_cache_invalidate(&s->cc);
        s->have_generation = false;
    }
    /* The target cannot change until it is resumed: the graph's many small
     * objects are read a block at a time (block_cache.h).  Without memory
     * for the blocks the same bytes are read one object at a time, and so
     * they are without a stop of this call's: an image's reads cost no
     * system call, and a recorder (`snapshot --async`) then keeps only
     * the bytes the graph is made of. */
    if (p)
        (void)fpi_block_cache_begin(&s->blocks);
    if (legacy && (rc = fpi_async_legacy_read(&r->b, &g->loaded)))
        goto out;
    if (!legacy && found && (rc = walk_lists(r)))
        goto out;
    for (size_t i = 0; !legacy && i < g->nnodes; i++)
        if ((rc = resolve_awaiters(r, i)))
            goto out;
    if (!legacy && (rc = read_pure(r)))
        goto out;
out:
    fpi_block_cache_end(&s->blocks); /* before the target may change */
    if (p) {
        /* Timed up to the resume, not past it: once the first thread runs
         * again this process may wait for a CPU, which is no stop. */
        clock_gettime(CLOCK_MONOTONIC, &t1);
        g->stopped_ns = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000u + (uint64_t)t1.tv_nsec - (uint64_t)t0.tv_nsec;
        fp_pause_free(p); /* resumes every thread it stopped */
    }
    if (r) {
        free(r->by);
        fpi_async_build_free(&r->b);
        free(r);
    }
    if (rc) {
        fp_async_graph_free(g);
        return rc;
    }
    s->err = threads_err; /* why the first failed thread's walk failed, if one did */
    *out = g;
    return FP_OK;
}

size_t fp_async_graph_get_running_frames(const fp_async_graph *g, const fp_sample *sm, size_t node, size_t *first)
{
    const fp_async_node *t = fp_async_graph_get_node(g, node);
    if (first)
        *first = 0;
    if (!t || !sm || !t->running || !t->frame_count || !t->thread_native_id)
        return 0;
    const fp_frame *root = fp_async_graph_get_frame(g, t->first_frame + t->frame_count - 1);
    if (!root)
        return 0;
    const fp_thread *th = fp_sample_get_thread_by_native_id(sm, t->interp_id, t->thread_native_id);
    if (!th || th->error)
        return 0;
    for (size_t k = 0; k < th->frame_count; k++) {
        const fp_frame *f = fp_sample_get_frame(sm, th->first_frame + k);
        if (f && f->frame_addr == root->frame_addr) {
            if (first)
                *first = th->first_frame;
            return k + 1;
        }
    }
    return 0;
}

