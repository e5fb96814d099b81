/* async_graph.c — asyncio's task graph of a stopped target (frameproof/async.h).
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
#include "async_offsets.h"
#include "grow.h"
#include "read.h"
#include "session.h"
#include "typed_load.h"
#include "walk.h"

#define TPFLAGS_LONG_SUBCLASS (1ull << 24)
#define TPFLAGS_UNICODE_SUBCLASS (1ull << 28)
#define LONG_DIGIT_BITS 30u
#define SET_ENTRY_SIZE 16u                 /* setentry: key, hash */
#define SET_DUMMY_HASH ((uint64_t)-1)      /* a deleted entry's hash; no live key hashes to -1 */
#define GRAPH_INITIAL 64u
#define U(x) ((unsigned long long)(x)) /* the messages' 0x%llx */

/* 3.14's and 3.15's generator frame states (pycore_frame.h). */
#define STATE314_YIELD_FROM (-1)
#define STATE314_COMPLETED 1
#define STATE315_YIELD_FROM 2
#define STATE315_YIELD_FROM_LOCKED 3
#define STATE315_CLEARED 5

struct fp_async_graph {
    bool loaded;
    uint64_t stopped_ns;     /* from before the stop to after the resume */
    fp_async_node *nodes;
    size_t nnodes, nodes_cap;
    fp_frame *frames;
    size_t nframes, frames_cap;
    size_t *awaiters;
    size_t nawaiters, awaiters_cap;
};

/* One read: the session, the tables, and per node what pass 2 needs. */
typedef struct graph_read {
    fp_session *s;
    const fpi_layout *l;
    fpi_async_offsets o;
    fp_async_graph *g;
    struct awaited_by { uint64_t obj; bool is_set; } *by; /* per node: its awaited_by (obj 0: none) */
    size_t by_cap;
    uint64_t *map_keys;      /* node addresses, open addressing; value index + 1 */
    size_t *map_vals;
    size_t map_cap;
    uint8_t obj[FPI_MAX_SMALL_STRUCT];
} graph_read;

static int read_u64(graph_read *r, uint64_t addr, uint64_t *out, const char *what)
{
    uint8_t b[8];
    *out = 0;
    int rc = fpi_read(r->s, addr, b, sizeof b);
    if (rc)
        return fpi_err_code(&r->s->err, rc, "cannot read asyncio's %s at 0x%llx", what, U(addr));
    *out = fpi_load_u64(b, 0);
    return FP_OK;
}

static size_t map_slot(const graph_read *r, uint64_t addr)
{
    uint64_t h = addr * 0x9e3779b97f4a7c15ull;
    size_t i = (size_t)(h >> 20) & (r->map_cap - 1);
    while (r->map_vals[i] && r->map_keys[i] != addr)
        i = (i + 1) & (r->map_cap - 1);
    return i;
}

/* The node of addr, or SIZE_MAX. */
static size_t map_find(const graph_read *r, uint64_t addr)
{
    if (!r->map_cap)
        return SIZE_MAX;
    size_t i = map_slot(r, addr);
    return r->map_vals[i] ? r->map_vals[i] - 1 : SIZE_MAX;
}

static int map_put(graph_read *r, uint64_t addr, size_t node)
{
    if ((r->g->nnodes + 1) * 2 > r->map_cap) {
        size_t ncap = r->map_cap ? r->map_cap * 2 : 2 * GRAPH_INITIAL;
        uint64_t *ok = r->map_keys;
        size_t *ov = r->map_vals, ocap = r->map_cap;
        r->map_keys = calloc(ncap, sizeof *r->map_keys);
        r->map_vals = calloc(ncap, sizeof *r->map_vals);
        if (!r->map_keys || !r->map_vals) {
            free(r->map_keys);
            free(r->map_vals);
            r->map_keys = ok;
            r->map_vals = ov;
            return fpi_err(&r->s->err, FP_E_NOMEM, "out of memory: asyncio graph of %zu nodes", r->g->nnodes + 1);
        }
        r->map_cap = ncap;
        for (size_t i = 0; i < ocap; i++)
            if (ov[i]) {
                size_t j = map_slot(r, ok[i]);
                r->map_keys[j] = ok[i];
                r->map_vals[j] = ov[i];
            }
        free(ok);
        free(ov);
    }
    size_t i = map_slot(r, addr);
    r->map_keys[i] = addr;
    r->map_vals[i] = node + 1;
    return FP_OK;
}

/* A task's name: a str, or the int an unnamed task keeps until asked
 * (rendered "Task-N", as get_name() would). */
static int task_name(graph_read *r, uint64_t obj, char **out)
{
    const fpi_layout *l = r->l;
    uint64_t type, flags = 0;
    int kind = FPI_TYPE_OTHER;
    int rc = read_u64(r, obj + (uint64_t)l->ob_type, &type, "a task name's type");
    if (!rc && (rc = fpi_type_kind(r->s, type, &kind)))
        rc = fpi_err_code(&r->s->err, rc, "cannot read the name of type 0x%llx", U(type));
    if (!rc && kind == FPI_TYPE_STR)
        flags = TPFLAGS_UNICODE_SUBCLASS;
    else if (!rc && kind == FPI_TYPE_INT)
        flags = TPFLAGS_LONG_SUBCLASS;
    else if (!rc) /* a subclass, told by its flags */
        rc = read_u64(r, type + (uint64_t)l->tp_flags, &flags, "a type's flags");
    if (rc)
        return rc;
    if (flags & TPFLAGS_UNICODE_SUBCLASS) {
        size_t len;
        if ((rc = fpi_read_str(r->s, obj, out, &len)))
            return fpi_err_code(&r->s->err, rc, "cannot read the name of an asyncio task at 0x%llx", U(obj));
        return FP_OK;
    }
    if (!(flags & TPFLAGS_LONG_SUBCLASS))
        return fpi_err(&r->s->err, FP_E_CORRUPT, "asyncio: a task's name at 0x%llx is neither str nor int", U(obj));
    uint64_t tag;
    if ((rc = read_u64(r, obj + (uint64_t)l->long_lv_tag, &tag, "an int's tag")))
        return rc;
    uint64_t ndigits = tag >> 3, value = 0;
    if ((tag & 3) == 2 || ndigits > FPI_ASYNC_MAX_LONG_DIGITS)
        return fpi_err(&r->s->err, FP_E_CORRUPT, "asyncio: an unnamed task's number (tag 0x%llx) is invalid", U(tag));
    uint8_t d[4 * FPI_ASYNC_MAX_LONG_DIGITS];
    if (ndigits && (rc = fpi_read(r->s, obj + (uint64_t)l->long_digits, d, 4 * (size_t)ndigits)))
        return fpi_err_code(&r->s->err, rc, "cannot read an unnamed asyncio task's number at 0x%llx", U(obj));
    for (uint64_t i = ndigits; i-- > 0;)
        value = (value << LONG_DIGIT_BITS) | (fpi_load_u32(d, (int32_t)(4 * i)) & ((1u << LONG_DIGIT_BITS) - 1));
    char buf[32];
    snprintf(buf, sizeof buf, "Task-%llu", U(value));
    *out = strdup(buf);
    return *out ? FP_OK : fpi_err(&r->s->err, FP_E_NOMEM, "out of memory: a task's name");
}

static bool state_finished(const fpi_layout *l, int8_t st)
{
    return l->minor >= 15 ? st == STATE315_CLEARED : st >= STATE314_COMPLETED;
}

static bool state_yield_from(const fpi_layout *l, int8_t st)
{
    return l->minor >= 15 ? st == STATE315_YIELD_FROM || st == STATE315_YIELD_FROM_LOCKED : st == STATE314_YIELD_FROM;
}

/* One coroutine's frame, appended to the graph's frames. */
static int push_coro_frame(graph_read *r, uint64_t frame, const uint8_t *fr)
{
    fp_session *s = r->s;
    const fpi_layout *l = r->l;
    uint64_t code = fpi_load_u64(fr, l->fr_executable) & ~l->executable_tag_mask;
    uint64_t instr = fpi_load_u64(fr, l->fr_instr_ptr);
    fpi_code_entry *ce;
    int rc = fpi_code_get(s, code, &ce);
    if (rc) {
        fpi_err_prefix(&s->err, "asyncio: coroutine frame 0x%llx", U(frame));
        return rc;
    }
    /* free-threaded 3.14+: the copy of the bytecode of the thread that
     * last ran the coroutine (its frame says which, with its instruction) */
    int32_t idx = l->fr_tlbc_index != FPI_OFF_NONE ? (int32_t)fpi_load_u32(fr, l->fr_tlbc_index) : 0;
    uint64_t start, arr;
    if ((rc = fpi_code_bytecode_start(s, code, idx, &start, &arr))) {
        fpi_err_prefix(&s->err, "asyncio: coroutine frame 0x%llx", U(frame));
        return rc;
    }
    int64_t delta = (int64_t)(instr - start);
    if (delta % 2 != 0 || delta < 0 || delta / 2 >= ce->code_units)
        return fpi_err(&s->err, FP_E_CORRUPT,
                       "asyncio: coroutine frame 0x%llx: instruction 0x%llx is outside the bytecode of %s",
                       U(frame), U(instr), ce->qualname);
    int32_t unit = (int32_t)(delta / 2);
    fpi_position pos;
    if ((rc = fpi_code_position(ce, unit, &pos)))
        return fpi_err(&s->err, rc, "line table of %s (%s): corrupt", ce->qualname, ce->filename);
    fp_async_graph *g = r->g;
    fp_frame *nf = fpi_grow(g->frames, &g->frames_cap, g->nframes + 1, sizeof *nf, GRAPH_INITIAL);
    if (!nf)
        return fpi_err(&s->err, FP_E_NOMEM, "out of memory: asyncio frame %zu", g->nframes + 1);
    g->frames = nf;
    nf[g->nframes++] = (fp_frame){
        .function = ce->qualname, .name = ce->name, .file = ce->filename, .line = pos.line,
        .end_line = pos.end_line, .column = pos.column, .end_column = pos.end_column, .code_addr = code,
        .frame_addr = frame, .instr_offset = unit, .kind = FP_FRAME_GENERATOR};
    return FP_OK;
}

/* The coroutine chain from a task's coroutine down what each awaits, while
 * that is a coroutine or an async generator (through the awaitable its
 * __anext__() returns): the node's frames, innermost first. */
static int coro_stack(graph_read *r, fp_async_node *n, uint64_t coro)
{
    const fpi_layout *l = r->l;
    fp_async_graph *g = r->g;
    n->first_frame = g->nframes;
    /* One read per object: its header, state and embedded frame header
     * (all inside any generator-like object the type check then accepts). */
    size_t len = (size_t)l->gen_iframe + (size_t)l->fr_size;
    uint8_t obj[FPI_MAX_SMALL_STRUCT];
    if (len > sizeof obj)
        return fpi_err(&r->s->err, FP_E_CORRUPT, "asyncio: a coroutine's frame ends at %zu bytes", len);
    /* Each coroutine is reached through at most one async generator's
     * awaitable, and the chain ends in one more object: a longer walk is a
     * cycle of awaitables. */
    const uint64_t max_hops = 2 * (uint64_t)r->s->opts.max_depth + 1;
    for (uint64_t hops = 0; coro; hops++) {
        if (hops > max_hops)
            return fpi_err(&r->s->err, FP_E_CORRUPT, "asyncio: task 0x%llx: a cycle of awaitables", U(n->addr));
        int rc = fpi_read(r->s, coro, obj, len), kind = FPI_TYPE_OTHER;
        bool whole = rc == FP_OK;
        if (!whole) /* an awaited object smaller than a coroutine, at the end of its mapping: its type alone */
            rc = fpi_read(r->s, coro + (uint64_t)l->ob_type, obj + l->ob_type, 8);
        if (rc)
            return fpi_err_code(&r->s->err, rc, "cannot read asyncio coroutine 0x%llx", U(coro));
        uint64_t type = fpi_load_u64(obj, l->ob_type);
        if ((rc = fpi_type_kind(r->s, type, &kind)))
            return fpi_err_code(&r->s->err, rc, "cannot read the name of type 0x%llx", U(type));
        if (kind == FPI_TYPE_ASYNC_GEN_AWAIT) {
            /* `async for`'s __anext__() (or asend(), athrow(), aclose()):
             * the stack goes on in its async generator, which the object
             * holds right after its header. */
            uint64_t at = coro + (uint64_t)l->ob_type + 8;
            if (whole)
                coro = fpi_load_u64(obj, l->ob_type + 8);
            else if ((rc = read_u64(r, at, &coro, "an async generator's awaitable")))
                return rc;
            continue;
        }
        if (kind != FPI_TYPE_COROUTINE && kind != FPI_TYPE_ASYNC_GEN)
            break; /* a future, a task, another awaitable: the stack ends here */
        if (!whole)
            return fpi_err(&r->s->err, FP_E_CORRUPT, "asyncio: coroutine 0x%llx ends before its frame", U(coro));
        int8_t st = (int8_t)obj[l->gen_frame_state];
        if (state_finished(l, st))
            break; /* no frame left, and nothing awaited */
        if (g->nframes - n->first_frame == r->s->opts.max_depth)
            return fpi_err(&r->s->err, FP_E_LIMIT, "asyncio: task 0x%llx awaits more than %u coroutines deep",
                           U(n->addr), r->s->opts.max_depth);
        uint64_t frame = coro + (uint64_t)l->gen_iframe;
        const uint8_t *fr = obj + l->gen_iframe;
        if ((rc = push_coro_frame(r, frame, fr)))
            return rc;
        if (!state_yield_from(l, st))
            break;
        /* Suspended in `await`: SEND keeps the awaited object on the stack,
         * under the value sent in 3.15 (two slots down), on top in 3.14. */
        uint64_t sp = fpi_load_u64(fr, l->fr_stackpointer), below = l->minor >= 15 ? 16 : 8;
        if (sp < frame + (uint64_t)l->fr_localsplus + below)
            return fpi_err(&r->s->err, FP_E_CORRUPT, "asyncio: coroutine frame 0x%llx has no awaited object", U(frame));
        uint64_t ref;
        if ((rc = read_u64(r, sp - below, &ref, "an awaited object")))
            return rc;
        coro = ref & ~l->executable_tag_mask;
    }
    n->frame_count = g->nframes - n->first_frame;
    for (size_t i = 0, j = n->frame_count; i + 1 < j; i++, j--) { /* outermost was read first */
        fp_frame t = g->frames[n->first_frame + i];
        g->frames[n->first_frame + i] = g->frames[n->first_frame + j - 1];
        g->frames[n->first_frame + j - 1] = t;
    }
    return FP_OK;
}

/* A node for the task or future at addr (the object's bytes read into r->obj). */
static int add_node(graph_read *r, uint64_t addr, uint64_t thread, int64_t interp, bool running, bool listed)
{
    fp_session *s = r->s;
    fp_async_graph *g = r->g;
    const fpi_async_offsets *o = &r->o;
    if (g->nnodes >= FPI_ASYNC_MAX_NODES)
        return fpi_err(&s->err, FP_E_LIMIT, "asyncio: more than %u tasks and futures", FPI_ASYNC_MAX_NODES);
    if (map_find(r, addr) != SIZE_MAX)
        return fpi_err(&s->err, FP_E_CORRUPT, "asyncio: task 0x%llx is listed twice", U(addr));
    int rc = fpi_read(s, addr, r->obj, o->task_size);
    if (rc)
        return fpi_err_code(&s->err, rc, "cannot read asyncio %s 0x%llx", listed ? "task" : "future", U(addr));
    uint8_t is_task = r->obj[o->task_is_task], by_set = r->obj[o->task_awaited_by_is_set];
    int32_t state = (int32_t)fpi_load_u32(r->obj, (int32_t)o->task_state);
    if (is_task > 1 || by_set > 1 || state < FP_FUTURE_PENDING || state > FP_FUTURE_FINISHED || (listed && !is_task))
        return fpi_err(&s->err, FP_E_CORRUPT, "asyncio: 0x%llx is no %s (state %d, is_task %u)", U(addr),
                       listed ? "task" : "future", state, is_task);
    fp_async_node *nn = fpi_grow(g->nodes, &g->nodes_cap, g->nnodes + 1, sizeof *nn, GRAPH_INITIAL);
    if (!nn)
        return fpi_err(&s->err, FP_E_NOMEM, "out of memory: asyncio node %zu", g->nnodes + 1);
    g->nodes = nn;
    struct awaited_by *nb = fpi_grow(r->by, &r->by_cap, g->nnodes + 1, sizeof *nb, GRAPH_INITIAL);
    if (!nb)
        return fpi_err(&s->err, FP_E_NOMEM, "out of memory: asyncio node %zu", g->nnodes + 1);
    r->by = nb;
    size_t i = g->nnodes;
    if ((rc = map_put(r, addr, i)))
        return rc;
    fp_async_node *n = &g->nodes[g->nnodes++];
    *n = (fp_async_node){.addr = addr, .is_task = is_task, .state = state, .thread_native_id = thread,
                         .interp_id = interp, .running = running, .first_frame = g->nframes,
                         .first_awaiter = 0};
    r->by[i] = (struct awaited_by){fpi_load_u64(r->obj, (int32_t)o->task_awaited_by), by_set};
    if (!is_task)
        return FP_OK;
    uint64_t name = fpi_load_u64(r->obj, (int32_t)o->task_name), coro = fpi_load_u64(r->obj, (int32_t)o->task_coro);
    char *nm = NULL;
    if (name && (rc = task_name(r, name, &nm)))
        return rc;
    g->nodes[i].name = nm;
    return coro_stack(r, &g->nodes[i], coro);
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
    size_t a = map_find(r, obj);
    int rc = FP_OK;
    if (a == SIZE_MAX) {
        a = r->g->nnodes;
        if ((rc = add_node(r, obj, 0, -1, false, false)))
            return rc;
    }
    fp_async_graph *g = r->g;
    size_t *na = fpi_grow(g->awaiters, &g->awaiters_cap, g->nawaiters + 1, sizeof *na, GRAPH_INITIAL);
    if (!na)
        return fpi_err(&r->s->err, FP_E_NOMEM, "out of memory: asyncio edge %zu", g->nawaiters + 1);
    g->awaiters = na;
    na[g->nawaiters++] = a;
    g->nodes[node].awaiter_count++;
    return FP_OK;
}

/* Pass 2, one node: what its awaited_by holds. */
static int resolve_awaiters(graph_read *r, size_t i)
{
    const fpi_layout *l = r->l;
    fp_async_graph *g = r->g;
    g->nodes[i].first_awaiter = g->nawaiters;
    uint64_t by = r->by[i].obj;
    if (!by)
        return FP_OK;
    if (!r->by[i].is_set)
        return add_awaiter(r, i, by);
    uint64_t table, mask, used;
    int rc;
    if ((rc = read_u64(r, by + (uint64_t)l->set_table, &table, "an awaited_by set")) ||
        (rc = read_u64(r, by + (uint64_t)l->set_mask, &mask, "an awaited_by set")) ||
        (rc = read_u64(r, by + (uint64_t)l->set_used, &used, "an awaited_by set")))
        return rc;
    if (mask >= FPI_ASYNC_MAX_AWAITERS || (mask & (mask + 1)) || used > mask + 1)
        return fpi_err(&r->s->err, FP_E_CORRUPT, "asyncio: awaited_by set 0x%llx (mask %llu, %llu"
                       " used) is invalid", U(by), U(mask), U(used));
    size_t len = (size_t)(mask + 1) * SET_ENTRY_SIZE;
    uint8_t *ent = malloc(len);
    if (!ent)
        return fpi_err(&r->s->err, FP_E_NOMEM, "out of memory: an awaited_by set");
    if ((rc = fpi_read(r->s, table, ent, len)))
        rc = fpi_err_code(&r->s->err, rc, "cannot read asyncio awaited_by set 0x%llx", U(by));
    uint64_t seen = 0;
    for (size_t k = 0; !rc && k <= mask; k++) {
        uint64_t key = fpi_load_u64(ent, (int32_t)(k * SET_ENTRY_SIZE));
        uint64_t hash = fpi_load_u64(ent, (int32_t)(k * SET_ENTRY_SIZE + 8));
        if (!key || hash == SET_DUMMY_HASH)
            continue;
        seen++;
        rc = add_awaiter(r, i, key);
    }
    free(ent);
    if (!rc && seen != used)
        rc = fpi_err(&r->s->err, FP_E_CORRUPT, "asyncio: awaited_by set 0x%llx holds %llu of its %llu"
                     " entries", U(by), U(seen), U(used));
    return rc;
}

/* A live process is stopped for the read; a session attached to a reader
 * without one (an image) reads it as it is, through the table address its
 * target description gave. */
static int check_target(fp_session *s)
{
    const fpi_layout *l = &s->layout;
    if (!s->attached)
        return fpi_err(&s->err, FP_E_STATE, "asyncio task graphs: the session is not attached");
    if (l->minor < 14 || l->gen_iframe == FPI_OFF_NONE || l->tp_flags == FPI_OFF_NONE || l->set_table == FPI_OFF_NONE ||
        l->long_digits == FPI_OFF_NONE || l->fr_stackpointer == FPI_OFF_NONE)
        return fpi_err(&s->err, FP_E_UNSUPPORTED,
                       "asyncio task graphs: CPython 3.14+ only (the target runs %s, whose asyncio publishes no layout)",
                       s->info.version);
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
    uint64_t at;
    if ((rc = fp_session_get_asyncio_table(s, &at)))
        goto out;
    bool found = at != 0;
    if (found) {
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
    if (!found && !sm)
        goto out; /* asyncio's C module is not loaded: an empty graph, nothing stopped */
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
    if (found && p)
        (void)fpi_block_cache_begin(&s->blocks);
    if (found && (rc = walk_lists(r)))
        goto out;
    for (size_t i = 0; i < g->nnodes; i++)
        if ((rc = resolve_awaiters(r, i)))
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
        free(r->map_keys);
        free(r->map_vals);
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

bool fp_async_graph_get_asyncio_loaded(const fp_async_graph *g) { return g && g->loaded; }
uint64_t fp_async_graph_get_stopped_ns(const fp_async_graph *g) { return g ? g->stopped_ns : 0; }
size_t fp_async_graph_get_node_count(const fp_async_graph *g) { return g ? g->nnodes : 0; }
size_t fp_async_graph_get_frame_count(const fp_async_graph *g) { return g ? g->nframes : 0; }
size_t fp_async_graph_get_awaiter_count(const fp_async_graph *g) { return g ? g->nawaiters : 0; }

const fp_async_node *fp_async_graph_get_node(const fp_async_graph *g, size_t i)
{
    return g && i < g->nnodes ? &g->nodes[i] : NULL;
}

const fp_frame *fp_async_graph_get_frame(const fp_async_graph *g, size_t i)
{
    return g && i < g->nframes ? &g->frames[i] : NULL;
}

size_t fp_async_graph_get_node_index(const fp_async_graph *g, uint64_t addr)
{
    for (size_t i = 0; g && i < g->nnodes; i++)
        if (g->nodes[i].addr == addr)
            return i;
    return SIZE_MAX;
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

size_t fp_async_graph_get_awaiter(const fp_async_graph *g, size_t i)
{
    return g && i < g->nawaiters ? g->awaiters[i] : SIZE_MAX;
}

void fp_async_graph_free(fp_async_graph *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->nnodes; i++)
        free((char *)(uintptr_t)g->nodes[i].name);
    free(g->nodes);
    free(g->frames);
    free(g->awaiters);
    free(g);
}
