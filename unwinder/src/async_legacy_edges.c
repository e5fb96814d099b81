/* async_legacy_edges.c — who awaits whom on CPython 3.11-3.13, as those
 * versions record it (async_registry.h): the future a task waits on
 * (_fut_waiter: a task, or a gather() whose children it then awaits), and
 * the tasks' done callbacks (a TaskGroup's names its parent task,
 * shield()'s inner one the outer future a task waits on).  No future is a
 * node: no version before 3.14 links two futures. */
#include <stdlib.h>
#include <string.h>

#include "async_registry.h"
#include "grow.h"

#define FUTURE_TYPE "_asyncio.Future"
#define GATHERING_TYPE "_GatheringFuture"
#define TASKGROUP_TYPE "TaskGroup"
#define SHIELD_CALLBACK "shield.<locals>._inner_done_callback"

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
static int add_edge(fpi_reg_read *r, edges *es, uint64_t addr, size_t awaiter)
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

static int type_named(fpi_reg_read *r, uint64_t obj, const char *want, uint64_t *type, bool *out)
{
    char name[FPI_REG_NAME_MAX];
    int rc = fpi_reg_word(r, obj + (uint64_t)r->b->l->ob_type, type, "an object's type");
    if (!rc)
        rc = fpi_pyobj_type_name(&r->o, *type, name, sizeof name);
    *out = !rc && strcmp(name, want) == 0;
    return rc;
}

/* Task i waits on a future: that future, if a task, or the children of
 * a gather() it is. */
static int waiter_edges(fpi_reg_read *r, edges *es, size_t i)
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
static int index_waiters(fpi_reg_read *r)
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
static int waiting_on_edges(fpi_reg_read *r, edges *es, uint64_t addr, size_t i)
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
static int callback_edges(fpi_reg_read *r, edges *es, size_t i, uint64_t cb)
{
    uint64_t type, self, ttype, parent = 0, qualname, closure, *cells = NULL;
    size_t ncells = 0;
    bool is, future;
    int rc = type_named(r, cb, "method", &type, &is);
    if (rc)
        return rc;
    if (is) {
        if ((rc = fpi_reg_word(r, cb + (uint64_t)r->o.meth_self, &self, "a bound method's self")) ||
            (rc = type_named(r, self, TASKGROUP_TYPE, &ttype, &is)) || !is ||
            (rc = fpi_pyobj_attr(&r->o, self, ttype, "_parent_task", &parent)))
            return rc;
        return add_edge(r, es, r->b->g->nodes[i].addr, fpi_async_node_find(r->b, parent));
    }
    if ((rc = type_named(r, cb, "function", &type, &is)) || !is ||
        (rc = fpi_reg_word(r, cb + (uint64_t)r->o.func_qualname, &qualname, "a function's name")) ||
        (rc = fpi_pyobj_str_is(&r->o, qualname, SHIELD_CALLBACK, &is)) || !is ||
        (rc = fpi_reg_word(r, cb + (uint64_t)r->o.func_closure, &closure, "a function's closure")) || !closure ||
        (rc = fpi_pyobj_tuple_items(&r->o, closure, &cells, &ncells)))
        return rc;
    for (size_t k = 0; !rc && k < ncells; k++) {
        uint64_t v, vtype;
        if ((rc = fpi_reg_word(r, cells[k] + (uint64_t)r->o.cell_ref, &v, "a cell")) || !v ||
            (rc = fpi_reg_word(r, v + (uint64_t)r->b->l->ob_type, &vtype, "an object's type")) ||
            (rc = fpi_pyobj_type_is(&r->o, vtype, FUTURE_TYPE, &future)) || !future)
            continue;
        rc = waiting_on_edges(r, es, v, i);
    }
    free(cells);
    return rc;
}

/* Task i's done callbacks: the first, and those of the list (tuples of
 * the callback and its context). */
static int callbacks_edges(fpi_reg_read *r, edges *es, size_t i)
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
int fpi_reg_legacy_edges(fpi_reg_read *r)
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
