/* async_legacy.c — asyncio's task graph on CPython 3.11-3.13, which keep no
 * list of tasks for a debugger and publish no layout of them: the tasks are
 * found where asyncio.all_tasks() finds them, in the registries of the
 * asyncio.tasks module of each interpreter (sys.modules), read through
 * pyobj.h; the C Task's fields are at the places this file's table gives
 * per version, checked against the Task type's own size at every read.
 *
 * Who awaits whom is what these versions record: the future a task waits
 * on (_fut_waiter: a task, or a gather() whose children it then awaits),
 * and the tasks' done callbacks (a TaskGroup's names its parent task,
 * shield()'s inner one the outer future a task waits on).  No future is a
 * node: no version before 3.14 links two futures.
 *
 * Only pending tasks are nodes (asyncio.all_tasks() leaves the done ones
 * out); a task of the pure-Python implementation (asyncio.tasks._PyTask)
 * is read from its __dict__. */
#include <stdlib.h>
#include <string.h>

#include "async_build.h"
#include "grow.h"
#include "pyobj.h"
#include "read.h"
#include "typed_load.h"

#define U(x) FPI_ASYNC_U(x)
#define TASK_TYPE "_asyncio.Task"
#define FUTURE_TYPE "_asyncio.Future"
#define PY_TASK_TYPE "Task"            /* asyncio.tasks._PyTask */
#define PY_FUTURE_TYPE "Future"        /* asyncio.futures._PyFuture */
#define GATHERING_TYPE "_GatheringFuture"
#define TASKGROUP_TYPE "TaskGroup"
#define SHIELD_CALLBACK "shield.<locals>._inner_done_callback"
#define FUTURE_PENDING 0
#define FUT_CALLBACK0 8        /* past the header, in every version: fut_loop, fut_callback0, fut_context0, */
#define FUT_CALLBACKS 24       /* fut_callbacks (a list of (callback, context) tuples) */
#define TYPE_NAME_MAX 64

/* The dict lookups whose finds the session keeps for the next read
 * (fp_session.async_hints): sys.modules' asyncio.tasks, then its
 * registries. */
enum { HINT_MODULE, HINT_TASKS, HINT_EAGER, HINT_CURRENT, HINT_COUNT };
_Static_assert(HINT_COUNT <= FPI_ASYNC_HINTS, "FPI_ASYNC_HINTS holds every hinted lookup");

/* The C Task (Modules/_asynciomodule.c, TaskObj) past the object header:
 * the fields this reader uses, and the structure's size. */
typedef struct task_table {
    uint32_t minor;
    int32_t loop, state, fut_waiter, coro, name, size; /* from the end of the object header */
    int32_t gen_iframe, gen_frame_state;               /* PyGenObject, likewise */
} task_table;

static const task_table TABLES[] = {
    /* 3.11, 3.12: ..., fut_cancel_msg, fut_state, fut_log_tb, fut_blocking,
     * dict, fut_weakreflist, fut_cancelled_exc, then the task's own */
    {11, .loop = 0, .state = 72, .fut_waiter = 112, .coro = 120, .name = 128, .size = 160, .gen_iframe = 64,
     .gen_frame_state = 59},
    {12, .loop = 0, .state = 72, .fut_waiter = 112, .coro = 120, .name = 128, .size = 160, .gen_iframe = 56,
     .gen_frame_state = 51},
    /* 3.13: dict and weak references managed, fut_cancelled_exc before
     * fut_state; the bit fields, then the task's counter, then its own */
    {13, .loop = 0, .state = 80, .fut_waiter = 96, .coro = 104, .name = 112, .size = 128, .gen_iframe = 56,
     .gen_frame_state = 51},
};

static const task_table *table_of(const fpi_layout *l)
{
    for (size_t i = 0; i < sizeof TABLES / sizeof *TABLES; i++)
        if (TABLES[i].minor == l->minor)
            return &TABLES[i];
    return NULL;
}

bool fpi_async_legacy_objs(const fpi_layout *l, fpi_async_objs *out)
{
    const task_table *t = table_of(l);
    if (!t || l->tp_flags == FPI_OFF_NONE || l->interp_modules == FPI_OFF_NONE || l->fr_stacktop == FPI_OFF_NONE)
        return false;
    const int32_t h = l->ob_type + FPI_PTR_SIZE;
    *out = (fpi_async_objs){.gen_iframe = h + t->gen_iframe, .gen_frame_state = h + t->gen_frame_state,
                            .tp_flags = l->tp_flags, .long_lv_tag = l->minor >= 12 ? h : FPI_OFF_NONE,
                            .long_digits = l->minor >= 12 ? h + 8 : FPI_OFF_NONE};
    return true;
}

/* One read: the build, the objects' places, and what the edges need. */
typedef struct legacy_read {
    fpi_async_build *b;
    fpi_pyobj o;
    const task_table *t;
    int32_t h;
    uint64_t task_type;          /* the C Task type, once seen (its size checked) */
    struct legacy_node {
        uint64_t waiter;         /* the future it waits on (0: none) */
        uint64_t callback0, callbacks; /* its first done callback, the list of the others */
    } *nodes;                    /* per node */
    size_t nodes_cap;
    uint64_t (*threads)[2];      /* the interpreter's threads: thread id, native id */
    size_t nthreads, threads_cap;
    uint64_t (*loops)[2];        /* the interpreter's event loops met so far: loop, native id of its thread */
    size_t nloops, loops_cap;
    struct waiter_of {
        uint64_t waiter;         /* a future some task waits on */
        size_t node;             /* ... that task */
    } *by_waiter;                /* every node that waits on something, by (waiter, node): read_edges */
    size_t nby_waiter;
} legacy_read;

static int read_word(legacy_read *r, uint64_t addr, uint64_t *out, const char *what)
{
    return fpi_async_read_u64(r->b, addr, out, what);
}

/* What the type at type is (str, int, None, ...), with a message when its
 * name cannot be read. */
static int kind_of(legacy_read *r, uint64_t type, int *kind)
{
    int rc = fpi_type_kind(r->b->s, type, kind);
    return rc ? fpi_err_code(&r->b->s->err, rc, "cannot read the name of type 0x%llx", U(type)) : FP_OK;
}

/* Whether type is the C Task's or a subclass of it; the first time the
 * C Task type is met (itself or as a subclass's base), that its size is
 * the table's (a build whose TaskObj moved fails here, not with a wrong
 * graph; a subclass keeps its base's fields where they are). */
static int is_task_type(legacy_read *r, uint64_t type, bool *out)
{
    *out = false;
    if (r->task_type && type == r->task_type) {
        *out = true;
        return FP_OK;
    }
    uint64_t base;
    int rc = fpi_pyobj_type_base(&r->o, type, TASK_TYPE, &base);
    if (rc || !base || base == r->task_type) {
        *out = base != 0;
        return rc;
    }
    uint64_t size;
    if ((rc = read_word(r, base + (uint64_t)r->o.tp_basicsize, &size, "the Task type's size")))
        return rc;
    if (size != (uint64_t)(r->h + r->t->size))
        return fpi_err(&r->b->s->err, FP_E_UNSUPPORTED,
                       "asyncio: the C Task of this build is %llu bytes, not the %d this CPython %u.%u reader knows",
                       U(size), r->h + r->t->size, 3u, r->t->minor);
    r->task_type = base;
    *out = true;
    return FP_OK;
}

/* The native id of the thread whose threading id is ident, 0 if none. */
static uint64_t native_of(const legacy_read *r, uint64_t ident)
{
    for (size_t i = 0; ident && i < r->nthreads; i++)
        if (r->threads[i][0] == ident)
            return r->threads[i][1];
    return 0;
}

static int read_threads(legacy_read *r, uint64_t interp)
{
    fp_session *s = r->b->s;
    const fpi_layout *l = r->b->l;
    uint64_t ts;
    r->nthreads = 0;
    int rc = read_word(r, interp + (uint64_t)l->interp_threads_head, &ts, "a thread list");
    for (uint32_t n = 0; !rc && ts; n++) {
        if (n == s->opts.max_threads)
            return fpi_err(&s->err, FP_E_LIMIT, "asyncio: more than %u threads", s->opts.max_threads);
        uint64_t ident, native;
        if ((rc = read_word(r, ts + (uint64_t)l->ts_thread_id, &ident, "a thread's id")) ||
            (rc = read_word(r, ts + (uint64_t)l->ts_native_thread_id, &native, "a thread's native id")))
            return rc;
        uint64_t (*nt)[2] = fpi_grow(r->threads, &r->threads_cap, r->nthreads + 1, sizeof *nt, 16);
        if (!nt)
            return fpi_err(&s->err, FP_E_NOMEM, "out of memory: the threads of an interpreter");
        r->threads = nt;
        r->threads[r->nthreads][0] = ident;
        r->threads[r->nthreads][1] = native;
        r->nthreads++;
        rc = read_word(r, ts + (uint64_t)l->ts_next, &ts, "a thread list");
    }
    return rc;
}

/* The thread running loop (its _thread_id, set while it runs), 0 if none. */
static int read_loop_thread(legacy_read *r, uint64_t loop, uint64_t *native)
{
    uint64_t type, ident = 0, v;
    bool ok = false;
    int kind = FPI_TYPE_OTHER;
    *native = 0;
    int rc = read_word(r, loop + (uint64_t)r->b->l->ob_type, &type, "an event loop's type");
    if (!rc)
        rc = fpi_pyobj_attr(&r->o, loop, type, "_thread_id", &ident);
    if (rc || !ident)
        return rc;
    if ((rc = read_word(r, ident + (uint64_t)r->b->l->ob_type, &type, "a thread id's type")) ||
        (rc = kind_of(r, type, &kind)))
        return rc;
    if (kind != FPI_TYPE_INT)
        return FP_OK; /* None: the loop is not running */
    if ((rc = fpi_pyobj_small_int(&r->o, ident, &v, &ok)))
        return rc;
    *native = ok ? native_of(r, v) : 0;
    return FP_OK;
}

/* read_loop_thread, once per loop and read (tasks share their loops). */
static int loop_thread(legacy_read *r, uint64_t loop, uint64_t *native)
{
    for (size_t k = 0; k < r->nloops; k++)
        if (r->loops[k][0] == loop) {
            *native = r->loops[k][1];
            return FP_OK;
        }
    int rc = read_loop_thread(r, loop, native);
    if (rc)
        return rc;
    uint64_t (*nl)[2] = fpi_grow(r->loops, &r->loops_cap, r->nloops + 1, sizeof *nl, 4);
    if (!nl)
        return fpi_err(&r->b->s->err, FP_E_NOMEM, "out of memory: the event loops of an interpreter");
    r->loops = nl;
    r->loops[r->nloops][0] = loop;
    r->loops[r->nloops][1] = *native;
    r->nloops++;
    return FP_OK;
}

/* What a task holds that its node and edges need, from either
 * implementation: waiter, callback0 and name 0 when it has none. */
typedef struct task_fields {
    int32_t state;
    uint64_t loop, waiter, coro, name, callback0, callbacks;
} task_fields;

/* A C Task's fields (its type checked by is_task_type). */
static int c_task_fields(legacy_read *r, uint64_t addr, task_fields *f)
{
    uint8_t obj[FPI_MAX_SMALL_STRUCT];
    size_t len = (size_t)(r->h + r->t->size);
    int rc = fpi_read(r->b->s, addr, obj, len);
    if (rc)
        return fpi_err_code(&r->b->s->err, rc, "cannot read asyncio task 0x%llx", U(addr));
    *f = (task_fields){.state = (int32_t)fpi_load_u32(obj, r->h + r->t->state),
                       .loop = fpi_load_u64(obj, r->h + r->t->loop),
                       .waiter = fpi_load_u64(obj, r->h + r->t->fut_waiter),
                       .coro = fpi_load_u64(obj, r->h + r->t->coro), .name = fpi_load_u64(obj, r->h + r->t->name),
                       .callback0 = fpi_load_u64(obj, r->h + FUT_CALLBACK0),
                       .callbacks = fpi_load_u64(obj, r->h + FUT_CALLBACKS)};
    return FP_OK;
}

/* obj's attribute name, 0 when it has none or it is None. */
static int attr_or_none(legacy_read *r, uint64_t obj, uint64_t type, const char *name, uint64_t *value)
{
    uint64_t vtype;
    int kind = FPI_TYPE_OTHER;
    int rc = fpi_pyobj_attr(&r->o, obj, type, name, value);
    if (rc || !*value)
        return rc;
    if ((rc = read_word(r, *value + (uint64_t)r->b->l->ob_type, &vtype, "an attribute's type")) ||
        (rc = kind_of(r, vtype, &kind)))
        return rc;
    if (kind == FPI_TYPE_NONE)
        *value = 0;
    return FP_OK;
}

/* Whether type is asyncio's pure-Python Task (asyncio.tasks._PyTask, its
 * tp_name "Task", on the pure-Python Future) or a subclass of it. */
static int is_py_task_type(legacy_read *r, uint64_t type, bool *out)
{
    uint64_t task, base;
    *out = false;
    int rc = fpi_pyobj_type_base(&r->o, type, PY_TASK_TYPE, &task);
    if (rc || !task || (rc = read_word(r, task + (uint64_t)r->o.tp_base, &base, "a type's base")) || !base)
        return rc;
    char name[TYPE_NAME_MAX];
    if ((rc = fpi_pyobj_type_name(&r->o, base, name, sizeof name)))
        return rc;
    *out = strcmp(name, PY_FUTURE_TYPE) == 0;
    return FP_OK;
}

/* A pure-Python Task's fields, from its __dict__ (asyncio/futures.py and
 * tasks.py: _state a str, absent while the class's "PENDING" stands, which
 * only a change of state overrides; _fut_waiter and _name perhaps None;
 * the done callbacks one list of (callback, context) tuples). */
static int py_task_fields(legacy_read *r, uint64_t addr, uint64_t type, task_fields *f)
{
    static const char *const STATES[] = {"PENDING", "CANCELLED", "FINISHED"}; /* enum fp_future_state's order */
    uint64_t state;
    bool is = false;
    int rc;
    *f = (task_fields){.state = -1};
    if ((rc = fpi_pyobj_attr(&r->o, addr, type, "_state", &state)) || (rc = attr_or_none(r, addr, type, "_loop", &f->loop)) ||
        (rc = attr_or_none(r, addr, type, "_fut_waiter", &f->waiter)) ||
        (rc = attr_or_none(r, addr, type, "_coro", &f->coro)) || (rc = attr_or_none(r, addr, type, "_name", &f->name)) ||
        (rc = attr_or_none(r, addr, type, "_callbacks", &f->callbacks)))
        return rc;
    if (!state)
        f->state = FP_FUTURE_PENDING;
    for (int32_t k = 0; state && !is && k < 3; k++)
        if ((rc = fpi_pyobj_str_is(&r->o, state, STATES[k], &is)) == FP_OK && is)
            f->state = k;
        else if (rc)
            return rc;
    return FP_OK;
}

/* A node for the pending task at addr (its type checked: the C Task, a
 * subclass, or the pure-Python Task), with its stack; type: its type word
 * as the caller read it (0: read here). */
static int add_task(legacy_read *r, uint64_t addr, uint64_t type, int64_t interp, const uint64_t *running,
                    size_t nrunning)
{
    fpi_async_build *b = r->b;
    fp_session *s = b->s;
    bool task, py = false;
    task_fields f;
    int rc = type ? FP_OK : read_word(r, addr + (uint64_t)b->l->ob_type, &type, "a task's type");
    if (!rc)
        rc = is_task_type(r, type, &task);
    if (!rc && !task)
        rc = is_py_task_type(r, type, &py);
    if (rc)
        return rc;
    if (!task && !py)
        return fpi_err(&s->err, FP_E_CORRUPT, "asyncio: 0x%llx among the tasks is no task", U(addr));
    if ((rc = py ? py_task_fields(r, addr, type, &f) : c_task_fields(r, addr, &f)))
        return rc;
    if (f.state < FP_FUTURE_PENDING || f.state > FP_FUTURE_FINISHED)
        return fpi_err(&s->err, FP_E_CORRUPT, "asyncio: task 0x%llx is in state %d", U(addr), f.state);
    if (f.state != FUTURE_PENDING || fpi_async_node_find(b, addr) != SIZE_MAX)
        return FP_OK; /* done (all_tasks() leaves it out), or met in the other registry already (an eager
                       * task moving to the scheduled ones) */
    size_t i;
    if ((rc = fpi_async_node_push(b, addr, &i)))
        return rc;
    struct legacy_node *nl = fpi_grow(r->nodes, &r->nodes_cap, i + 1, sizeof *nl, 64);
    if (!nl)
        return fpi_err(&s->err, FP_E_NOMEM, "out of memory: asyncio node %zu", i + 1);
    r->nodes = nl;
    r->nodes[i] = (struct legacy_node){f.waiter, f.callback0, f.callbacks};
    fp_async_node *n = &b->g->nodes[i];
    n->is_task = true;
    n->state = f.state;
    n->interp_id = interp;
    for (size_t k = 0; k < nrunning; k++)
        if (running[2 * k] == f.loop && running[2 * k + 1] == addr)
            n->running = true;
    uint64_t native = 0;
    if (f.loop && (rc = loop_thread(r, f.loop, &native)))
        return rc;
    if (b->g->nodes[i].running && !native)
        return fpi_err(&s->err, FP_E_CORRUPT, "asyncio: task 0x%llx: running, on a loop no thread runs", U(addr));
    for (size_t k = 0; b->g->nodes[i].running && k < i; k++)
        if (b->g->nodes[k].running && b->g->nodes[k].thread_native_id == native)
            return fpi_err(&s->err, FP_E_CORRUPT, "asyncio: tasks 0x%llx and 0x%llx: both running on thread %llu",
                           U(b->g->nodes[k].addr), U(addr), U(native));
    b->g->nodes[i].thread_native_id = native;
    char *nm = NULL;
    if (f.name && (rc = fpi_async_task_name(b, f.name, &nm)))
        return rc;
    b->g->nodes[i].name = nm;
    return fpi_async_coro_stack(b, i, f.coro);
}

/* The tasks of one interpreter's asyncio, if it imported asyncio.tasks. */
static int read_interp(legacy_read *r, uint64_t interp, int64_t id, bool *loaded)
{
    const fpi_layout *l = r->b->l;
    uint64_t modules, mod, md, reg, eager = 0, current, type, data;
    uint64_t *running = NULL, *items = NULL;
    size_t nrunning = 0, nitems = 0;
    fpi_dict_hint *hints = r->b->s->async_hints;
    r->nloops = 0;
    int rc = read_word(r, interp + (uint64_t)l->interp_modules, &modules, "sys.modules");
    if (rc || !modules ||
        (rc = fpi_pyobj_dict_get_hinted(&r->o, modules, "asyncio.tasks", &hints[HINT_MODULE], &mod)) || !mod)
        return rc;
    *loaded = true;
    if ((rc = read_threads(r, interp)) || (rc = read_word(r, mod + (uint64_t)r->h, &md, "a module's dict")) ||
        (rc = fpi_pyobj_dict_get_hinted(&r->o, md, l->minor == 11 ? "_all_tasks" : "_scheduled_tasks",
                                        &hints[HINT_TASKS], &reg)) ||
        (l->minor >= 12 && (rc = fpi_pyobj_dict_get_hinted(&r->o, md, "_eager_tasks", &hints[HINT_EAGER], &eager))) ||
        (rc = fpi_pyobj_dict_get_hinted(&r->o, md, "_current_tasks", &hints[HINT_CURRENT], &current)))
        goto out;
    if (!reg || !current) {
        rc = fpi_err(&r->b->s->err, FP_E_CORRUPT, "asyncio: asyncio.tasks at 0x%llx lacks its registries", U(mod));
        goto out;
    }
    if ((rc = fpi_pyobj_dict_items(&r->o, current, &running, &nrunning)) ||
        (rc = read_word(r, reg + (uint64_t)l->ob_type, &type, "a WeakSet's type")) ||
        (rc = fpi_pyobj_attr(&r->o, reg, type, "data", &data)))
        goto out;
    if (!data) {
        rc = fpi_err(&r->b->s->err, FP_E_CORRUPT, "asyncio: the WeakSet of tasks at 0x%llx has no data", U(reg));
        goto out;
    }
    /* scheduled tasks: weak references to them */
    if ((rc = fpi_pyobj_set_items(&r->o, data, &items, &nitems)))
        goto out;
    uint64_t weakref_type = 0; /* proven once per read: the target is stopped */
    for (size_t k = 0; !rc && k < nitems; k++) {
        uint64_t task, ttype;
        int kind = FPI_TYPE_OTHER;
        if ((rc = fpi_pyobj_weakref(&r->o, items[k], &weakref_type, &task)) ||
            (rc = read_word(r, task + (uint64_t)l->ob_type, &ttype, "a task's type")) ||
            (rc = kind_of(r, ttype, &kind)))
            break;
        if (kind != FPI_TYPE_NONE) /* a task that died: its reference is cleared to None */
            rc = add_task(r, task, ttype, id, running, nrunning);
    }
    free(items);
    items = NULL;
    /* eager tasks (3.12+): the tasks themselves */
    if (!rc && eager && !(rc = fpi_pyobj_set_items(&r->o, eager, &items, &nitems)))
        for (size_t k = 0; !rc && k < nitems; k++)
            rc = add_task(r, items[k], 0, id, running, nrunning);
out:
    free(items);
    free(running);
    return rc;
}

typedef struct edge { size_t node, awaiter; } edge;
typedef struct edges { edge *e; size_t n, cap; } edges;

static int edge_order(const void *a, const void *b)
{
    const edge *x = a, *y = b;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    return x->awaiter < y->awaiter ? -1 : x->awaiter > y->awaiter;
}

/* Records that the task at awaiter awaits the object at addr, when both
 * are nodes (a done task, a plain future: none). */
static int add_edge(legacy_read *r, edges *es, uint64_t addr, size_t awaiter)
{
    size_t node = fpi_async_node_find(r->b, addr);
    if (node == SIZE_MAX || awaiter == SIZE_MAX)
        return FP_OK;
    edge *ne = fpi_grow(es->e, &es->cap, es->n + 1, sizeof *ne, 64);
    if (!ne)
        return fpi_err(&r->b->s->err, FP_E_NOMEM, "out of memory: asyncio edge %zu", es->n + 1);
    es->e = ne;
    es->e[es->n++] = (edge){node, awaiter};
    return FP_OK;
}

static int type_named(legacy_read *r, uint64_t obj, const char *want, uint64_t *type, bool *out)
{
    char name[TYPE_NAME_MAX];
    int rc = read_word(r, obj + (uint64_t)r->b->l->ob_type, type, "an object's type");
    if (!rc)
        rc = fpi_pyobj_type_name(&r->o, *type, name, sizeof name);
    *out = !rc && strcmp(name, want) == 0;
    return rc;
}

/* Task i waits on a future: that future, if a task, or the children of
 * a gather() it is. */
static int waiter_edges(legacy_read *r, edges *es, size_t i)
{
    uint64_t w = r->nodes[i].waiter, type, children = 0, *kids = NULL;
    size_t nkids = 0;
    bool gathering, future;
    if (!w)
        return FP_OK;
    if (fpi_async_node_find(r->b, w) != SIZE_MAX)
        return add_edge(r, es, w, i);
    int rc = type_named(r, w, GATHERING_TYPE, &type, &gathering);
    if (!rc && gathering && !(rc = fpi_pyobj_type_is(&r->o, type, FUTURE_TYPE, &future)) && future &&
        !(rc = fpi_pyobj_attr(&r->o, w, type, "_children", &children)) && children)
        rc = fpi_pyobj_list_items(&r->o, children, &kids, &nkids);
    for (size_t k = 0; !rc && k < nkids; k++)
        rc = add_edge(r, es, kids[k], i);
    free(kids);
    return rc;
}

static int waiter_order(const void *a, const void *b)
{
    const struct waiter_of *x = a, *y = b;
    if (x->waiter != y->waiter)
        return x->waiter < y->waiter ? -1 : 1;
    return x->node < y->node ? -1 : x->node > y->node;
}

/* r->by_waiter: the nodes that wait on a future, sorted by it. */
static int index_waiters(legacy_read *r)
{
    size_t n = r->b->g->nnodes;
    r->nby_waiter = 0;
    if (n && !(r->by_waiter = malloc(n * sizeof *r->by_waiter)))
        return fpi_err(&r->b->s->err, FP_E_NOMEM, "out of memory: the waiters of %zu asyncio tasks", n);
    for (size_t k = 0; k < n; k++)
        if (r->nodes[k].waiter)
            r->by_waiter[r->nby_waiter++] = (struct waiter_of){r->nodes[k].waiter, k};
    if (r->nby_waiter)
        qsort(r->by_waiter, r->nby_waiter, sizeof *r->by_waiter, waiter_order);
    return FP_OK;
}

/* Records that every task waiting on the future at addr awaits node i. */
static int waiting_on_edges(legacy_read *r, edges *es, uint64_t addr, size_t i)
{
    size_t lo = 0, hi = r->nby_waiter;
    while (lo < hi) { /* the first entry not below addr */
        size_t mid = lo + (hi - lo) / 2;
        if (r->by_waiter[mid].waiter < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    int rc = FP_OK;
    for (size_t k = lo; !rc && k < r->nby_waiter && r->by_waiter[k].waiter == addr; k++)
        rc = add_edge(r, es, r->b->g->nodes[i].addr, r->by_waiter[k].node);
    return rc;
}

/* One done callback of task i: a TaskGroup's (its parent task awaits i),
 * or shield()'s (the tasks waiting on the shield's outer future await i). */
static int callback_edges(legacy_read *r, edges *es, size_t i, uint64_t cb)
{
    uint64_t type, self, ttype, parent = 0, qualname, closure, *cells = NULL;
    size_t ncells = 0;
    bool is, future;
    int rc = type_named(r, cb, "method", &type, &is);
    if (rc)
        return rc;
    if (is) {
        if ((rc = read_word(r, cb + (uint64_t)r->o.meth_self, &self, "a bound method's self")) ||
            (rc = type_named(r, self, TASKGROUP_TYPE, &ttype, &is)) || !is ||
            (rc = fpi_pyobj_attr(&r->o, self, ttype, "_parent_task", &parent)))
            return rc;
        return add_edge(r, es, r->b->g->nodes[i].addr, fpi_async_node_find(r->b, parent));
    }
    if ((rc = type_named(r, cb, "function", &type, &is)) || !is ||
        (rc = read_word(r, cb + (uint64_t)r->o.func_qualname, &qualname, "a function's name")) ||
        (rc = fpi_pyobj_str_is(&r->o, qualname, SHIELD_CALLBACK, &is)) || !is ||
        (rc = read_word(r, cb + (uint64_t)r->o.func_closure, &closure, "a function's closure")) || !closure ||
        (rc = fpi_pyobj_tuple_items(&r->o, closure, &cells, &ncells)))
        return rc;
    for (size_t k = 0; !rc && k < ncells; k++) {
        uint64_t v, vtype;
        if ((rc = read_word(r, cells[k] + (uint64_t)r->o.cell_ref, &v, "a cell")) || !v ||
            (rc = read_word(r, v + (uint64_t)r->b->l->ob_type, &vtype, "an object's type")) ||
            (rc = fpi_pyobj_type_is(&r->o, vtype, FUTURE_TYPE, &future)) || !future)
            continue;
        rc = waiting_on_edges(r, es, v, i);
    }
    free(cells);
    return rc;
}

/* Task i's done callbacks: the first, and those of the list (tuples of
 * the callback and its context). */
static int callbacks_edges(legacy_read *r, edges *es, size_t i)
{
    uint64_t *list = NULL, *pair = NULL;
    size_t nlist = 0, npair = 0;
    int rc = FP_OK;
    if (r->nodes[i].callback0)
        rc = callback_edges(r, es, i, r->nodes[i].callback0);
    if (!rc && r->nodes[i].callbacks)
        rc = fpi_pyobj_list_items(&r->o, r->nodes[i].callbacks, &list, &nlist);
    for (size_t k = 0; !rc && k < nlist; k++) {
        if (!(rc = fpi_pyobj_tuple_items(&r->o, list[k], &pair, &npair)) && npair)
            rc = callback_edges(r, es, i, pair[0]);
        free(pair);
        pair = NULL;
    }
    free(list);
    return rc;
}

/* Who awaits whom, as 3.11-3.13 record it: each task's waited-on future
 * (a task, or a gather() whose children it then awaits), a TaskGroup's
 * tasks awaited by its parent task, shield()'s inner task by the task
 * waiting on its outer future; pushed in node order. */
static int read_edges(legacy_read *r)
{
    edges es = {0};
    int rc = index_waiters(r);
    for (size_t i = 0; !rc && i < r->b->g->nnodes; i++)
        if (!(rc = waiter_edges(r, &es, i)))
            rc = callbacks_edges(r, &es, i);
    if (!rc && es.n)
        qsort(es.e, es.n, sizeof *es.e, edge_order);
    /* every node's awaiters from where the previous node's end, none or some */
    fp_async_graph *g = r->b->g;
    for (size_t i = 0, k = 0; !rc && i < g->nnodes; i++) {
        g->nodes[i].first_awaiter = g->nawaiters;
        for (; !rc && k < es.n && es.e[k].node == i; k++)
            if (k == 0 || es.e[k].node != es.e[k - 1].node || es.e[k].awaiter != es.e[k - 1].awaiter)
                rc = fpi_async_awaiter_push(r->b, es.e[k].node, es.e[k].awaiter);
    }
    free(es.e);
    return rc;
}

int fpi_async_legacy_read(fpi_async_build *b, bool *loaded)
{
    fp_session *s = b->s;
    const fpi_layout *l = b->l;
    legacy_read r = {.b = b, .t = table_of(l), .h = l->ob_type + FPI_PTR_SIZE};
    *loaded = false;
    if (!r.t || !fpi_pyobj_init(&r.o, s))
        return fpi_err(&s->err, FP_E_UNSUPPORTED, "asyncio task graphs: no reader for CPython %u.%u", 3u, l->minor);
    uint64_t interp;
    int rc = read_word(&r, s->info.runtime_addr + (uint64_t)l->rt_interpreters_head, &interp, "the interpreter list");
    for (uint32_t ni = 0; !rc && interp; ni++) {
        if (ni == s->opts.max_interpreters) {
            rc = fpi_err(&s->err, FP_E_LIMIT, "asyncio: more than %u interpreters", s->opts.max_interpreters);
            break;
        }
        uint64_t id, next;
        if ((rc = read_word(&r, interp + (uint64_t)l->interp_id, &id, "an interpreter's id")) ||
            (rc = read_word(&r, interp + (uint64_t)l->interp_next, &next, "the interpreter list")))
            break;
        if ((int64_t)id < 0) {
            rc = fpi_err(&s->err, FP_E_CORRUPT, "asyncio: interpreter 0x%llx has id %lld", U(interp), (long long)id);
            break;
        }
        rc = read_interp(&r, interp, (int64_t)id, loaded);
        interp = next;
    }
    if (!rc)
        rc = read_edges(&r);
    free(r.nodes);
    free(r.threads);
    free(r.loops);
    free(r.by_waiter);
    return rc;
}
