/* async_legacy.c — asyncio's task graph on CPython 3.11-3.13, which keep no
 * list of tasks for a debugger and publish no layout of them, and the tasks
 * of asyncio's pure-Python implementation on 3.14+, which are on no list of
 * its C module's (async_graph.c reads those lists): the tasks are
 * found where asyncio.all_tasks() finds them, in the registries of the
 * asyncio.tasks module of each interpreter (sys.modules), read through
 * pyobj.h; the C Task's fields are at the places this file's table gives
 * per version, checked against the Task type's own size at every read.
 *
 * Who awaits whom is what these versions record (async_legacy_edges.c).
 *
 * Only pending tasks are nodes (asyncio.all_tasks() leaves the done ones
 * out); a task of the pure-Python implementation (asyncio.tasks._PyTask)
 * is read from its __dict__.  On 3.14+ the registries hold only such tasks
 * (no table of the C Task here), and who awaits whom is what 3.14+
 * records, every future's awaited_by (async_pure.c), which the pure-Python
 * implementation keeps only where asyncio's C module is not imported:
 * beside that module, such tasks are refused. */
#include <stdlib.h>
#include <string.h>

#include "async_registry.h"
#include "grow.h"
#include "pyobj.h"
#include "read.h"
#include "typed_load.h"

#define U(x) FPI_ASYNC_U(x)
#define TASK_TYPE "_asyncio.Task"
#define FUTURE_PENDING 0
#define FUT_CALLBACK0 8        /* past the header, in every version: fut_loop, fut_callback0, fut_context0, */
#define FUT_CALLBACKS 24       /* fut_callbacks (a list of (callback, context) tuples) */

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

/* Whether type is the C Task's or a subclass of it; the first time the
 * C Task type is met (itself or as a subclass's base), that its size is
 * the table's (a build whose TaskObj moved fails here, not with a wrong
 * graph; a subclass keeps its base's fields where they are). */
static int is_task_type(fpi_reg_read *r, uint64_t type, bool *out)
{
    *out = false;
    if (!r->t)
        return FP_OK;
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
    if ((rc = fpi_reg_word(r, base + (uint64_t)r->o.tp_basicsize, &size, "the Task type's size")))
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
static uint64_t native_of(const fpi_reg_read *r, uint64_t ident)
{
    for (size_t i = 0; ident && i < r->nthreads; i++)
        if (r->threads[i][0] == ident)
            return r->threads[i][1];
    return 0;
}

static int read_threads(fpi_reg_read *r, uint64_t interp)
{
    fp_session *s = r->b->s;
    const fpi_layout *l = r->b->l;
    uint64_t ts;
    r->nthreads = 0;
    int rc = fpi_reg_word(r, interp + (uint64_t)l->interp_threads_head, &ts, "a thread list");
    for (uint32_t n = 0; !rc && ts; n++) {
        if (n == s->opts.max_threads)
            return fpi_err(&s->err, FP_E_LIMIT, "asyncio: more than %u threads", s->opts.max_threads);
        uint64_t ident, native;
        if ((rc = fpi_reg_word(r, ts + (uint64_t)l->ts_thread_id, &ident, "a thread's id")) ||
            (rc = fpi_reg_word(r, ts + (uint64_t)l->ts_native_thread_id, &native, "a thread's native id")))
            return rc;
        uint64_t (*nt)[2] = fpi_grow(r->threads, &r->threads_cap, r->nthreads + 1, sizeof *nt, 16);
        if (!nt)
            return fpi_err(&s->err, FP_E_NOMEM, "out of memory: the threads of an interpreter");
        r->threads = nt;
        r->threads[r->nthreads][0] = ident;
        r->threads[r->nthreads][1] = native;
        r->nthreads++;
        rc = fpi_reg_word(r, ts + (uint64_t)l->ts_next, &ts, "a thread list");
    }
    return rc;
}

/* The thread running loop (its _thread_id, set while it runs), 0 if none. */
static int read_loop_thread(fpi_reg_read *r, uint64_t loop, uint64_t *native)
{
    uint64_t type, ident = 0, v;
    bool ok = false;
    int kind = FPI_TYPE_OTHER;
    *native = 0;
    int rc = fpi_reg_word(r, loop + (uint64_t)r->b->l->ob_type, &type, "an event loop's type");
    if (!rc)
        rc = fpi_pyobj_attr(&r->o, loop, type, "_thread_id", &ident);
    if (rc || !ident)
        return rc;
    if ((rc = fpi_reg_word(r, ident + (uint64_t)r->b->l->ob_type, &type, "a thread id's type")) ||
        (rc = fpi_reg_kind(r, type, &kind)))
        return rc;
    if (kind != FPI_TYPE_INT)
        return FP_OK; /* None: the loop is not running */
    if ((rc = fpi_pyobj_small_int(&r->o, ident, &v, &ok)))
        return rc;
    *native = ok ? native_of(r, v) : 0;
    return FP_OK;
}

/* read_loop_thread, once per loop and read (tasks share their loops). */
static int loop_thread(fpi_reg_read *r, uint64_t loop, uint64_t *native)
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

/* A C Task's fields (its type checked by is_task_type). */
static int c_task_fields(fpi_reg_read *r, uint64_t addr, fpi_reg_task_fields *f)
{
    uint8_t obj[FPI_MAX_SMALL_STRUCT];
    size_t len = (size_t)(r->h + r->t->size);
    int rc = fpi_read(r->b->s, addr, obj, len);
    if (rc)
        return fpi_err_code(&r->b->s->err, rc, "cannot read asyncio task 0x%llx", U(addr));
    *f = (fpi_reg_task_fields){.state = (int32_t)fpi_load_u32(obj, r->h + r->t->state),
                               .loop = fpi_load_u64(obj, r->h + r->t->loop),
                               .waiter = fpi_load_u64(obj, r->h + r->t->fut_waiter),
                               .coro = fpi_load_u64(obj, r->h + r->t->coro),
                               .name = fpi_load_u64(obj, r->h + r->t->name),
                               .callback0 = fpi_load_u64(obj, r->h + FUT_CALLBACK0),
                               .callbacks = fpi_load_u64(obj, r->h + FUT_CALLBACKS)};
    return FP_OK;
}

/* A node for the pending task at addr (its type checked: the C Task, a
 * subclass, or the pure-Python Task), with its stack; type: its type word
 * as the caller read it (0: read here). */
static int add_task(fpi_reg_read *r, uint64_t addr, uint64_t type, int64_t interp, const uint64_t *running,
                    size_t nrunning)
{
    fpi_async_build *b = r->b;
    fp_session *s = b->s;
    bool task, py = false;
    fpi_reg_task_fields f;
    int rc = type ? FP_OK : fpi_reg_word(r, addr + (uint64_t)b->l->ob_type, &type, "a task's type");
    if (!rc)
        rc = is_task_type(r, type, &task);
    if (!rc && !task)
        rc = fpi_reg_is_py_task(r, type, &py);
    if (rc)
        return rc;
    if (!task && !py)
        return fpi_err(&s->err, FP_E_CORRUPT, "asyncio: 0x%llx among the tasks is no task%s", U(addr),
                       r->t ? "" : " of asyncio's pure-Python implementation");
    if ((rc = py ? fpi_reg_py_task_fields(r, addr, type, &f) : c_task_fields(r, addr, &f)))
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
    return fpi_async_task_fill(b, i, f.name, f.coro);
}

/* The tasks of one interpreter's asyncio, if it imported asyncio.tasks. */
static int read_interp(fpi_reg_read *r, uint64_t interp, int64_t id, bool *loaded)
{
    const fpi_layout *l = r->b->l;
    uint64_t modules, mod, md, reg, eager = 0, current, type, data;
    uint64_t *running = NULL, *items = NULL;
    size_t nrunning = 0, nitems = 0;
    fpi_dict_hint *hints = r->b->s->async_hints;
    r->nloops = 0;
    int rc = fpi_reg_word(r, interp + (uint64_t)l->interp_modules, &modules, "sys.modules");
    if (rc || !modules ||
        (rc = fpi_pyobj_dict_get_hinted(&r->o, modules, "asyncio.tasks", &hints[HINT_MODULE], &mod)) || !mod)
        return rc;
    *loaded = true;
    if ((rc = read_threads(r, interp)) || (rc = fpi_reg_word(r, mod + (uint64_t)r->h, &md, "a module's dict")) ||
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
        (rc = fpi_reg_word(r, reg + (uint64_t)l->ob_type, &type, "a WeakSet's type")) ||
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
            (rc = fpi_reg_word(r, task + (uint64_t)l->ob_type, &ttype, "a task's type")) ||
            (rc = fpi_reg_kind(r, ttype, &kind)))
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

int fpi_async_legacy_read(fpi_async_build *b, bool *loaded)
{
    fp_session *s = b->s;
    const fpi_layout *l = b->l;
    fpi_reg_read r = {.b = b, .t = table_of(l), .h = l->ob_type + FPI_PTR_SIZE};
    const size_t first = b->g->nnodes; /* 3.14+: the C reader's nodes come before */
    *loaded = false;
    if ((!r.t && l->minor < 14) || !fpi_pyobj_init(&r.o, s))
        return fpi_err(&s->err, FP_E_UNSUPPORTED, "asyncio task graphs: no reader for CPython %u.%u", 3u, l->minor);
    uint64_t interp;
    int rc = fpi_reg_word(&r, s->info.runtime_addr + (uint64_t)l->rt_interpreters_head, &interp, "the interpreter list");
    for (uint32_t ni = 0; !rc && interp; ni++) {
        if (ni == s->opts.max_interpreters) {
            rc = fpi_err(&s->err, FP_E_LIMIT, "asyncio: more than %u interpreters", s->opts.max_interpreters);
            break;
        }
        uint64_t id, next;
        if ((rc = fpi_reg_word(&r, interp + (uint64_t)l->interp_id, &id, "an interpreter's id")) ||
            (rc = fpi_reg_word(&r, interp + (uint64_t)l->interp_next, &next, "the interpreter list")))
            break;
        if ((int64_t)id < 0) {
            rc = fpi_err(&s->err, FP_E_CORRUPT, "asyncio: interpreter 0x%llx has id %lld", U(interp), (long long)id);
            break;
        }
        size_t before = b->g->nnodes;
        rc = read_interp(&r, interp, (int64_t)id, loaded);
        bool recorded = true; /* 3.14+, pure-Python tasks found: who awaits them */
        if (!rc && !r.t && b->g->nnodes > before)
            rc = fpi_reg_py_records_awaiters(&r, interp, &recorded);
        if (!rc && !recorded)
            rc = fpi_err(&s->err, FP_E_UNSUPPORTED,
                         "asyncio: interpreter %lld runs tasks of asyncio's pure-Python implementation beside its C "
                         "module, which records who awaits them nowhere (asyncio.all_tasks() and "
                         "capture_call_graph() leave them out too)", (long long)id);
        interp = next;
    }
    if (!rc && r.t)
        rc = fpi_reg_legacy_edges(&r);
    for (size_t i = first; !rc && !r.t && i < b->g->nnodes; i++)
        rc = fpi_reg_py_awaiters(&r, i);
    free(r.nodes);
    free(r.threads);
    free(r.loops);
    free(r.by_waiter);
    return rc;
}
