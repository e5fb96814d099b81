/* async_pure.c — who awaits the tasks of asyncio's pure-Python
 * implementation on 3.14+ (async_registry.h): what it records for
 * asyncio.capture_call_graph(), each future's awaited_by, where asyncio's C
 * module does not keep it from recording. */
#include <stdlib.h>
#include <string.h>

#include "async_registry.h"

#define U(x) FPI_ASYNC_U(x)
#define PY_AWAITED_BY "_Future__asyncio_awaited_by" /* its waiters, a set (private: name-mangled) */

/* 3.14+: a node for an awaiter on no registry, as the C reader makes one
 * (no thread, no interpreter): a pure-Python future, or a pure-Python task
 * asyncio has unlisted, then with its name and stack. */
static int add_unlisted(fpi_reg_read *r, uint64_t addr, size_t *index)
{
    fpi_async_build *b = r->b;
    uint64_t type;
    bool task = false, future = false;
    fpi_reg_task_fields f = {.state = -1};
    int rc = fpi_reg_word(r, addr + (uint64_t)b->l->ob_type, &type, "an awaiter's type");
    if (!rc)
        rc = fpi_reg_is_py_task(r, type, &task);
    if (!rc && !task)
        rc = fpi_pyobj_type_is(&r->o, type, FPI_REG_PY_FUTURE, &future);
    if (rc)
        return rc;
    if (!task && !future)
        return fpi_err(&b->s->err, FP_E_CORRUPT, "asyncio: awaiter 0x%llx is no future of asyncio's pure-Python "
                       "implementation", U(addr));
    if ((rc = task ? fpi_reg_py_task_fields(r, addr, type, &f) : fpi_reg_py_state(r, addr, type, &f.state)))
        return rc;
    if (f.state < FP_FUTURE_PENDING || f.state > FP_FUTURE_FINISHED)
        return fpi_err(&b->s->err, FP_E_CORRUPT, "asyncio: future 0x%llx is in state %d", U(addr), f.state);
    if ((rc = fpi_async_node_push(b, addr, index)))
        return rc;
    fp_async_node *n = &b->g->nodes[*index];
    n->is_task = task;
    n->state = f.state;
    n->interp_id = -1;
    if (!task)
        return FP_OK;
    return fpi_async_task_fill(b, *index, f.name, f.coro);
}

/* 3.14+: who awaits node i, as asyncio's pure-Python implementation records
 * it for asyncio.capture_call_graph() (futures.future_add_to_awaited_by: a
 * set of the waiters, or None, in the future's __dict__); a waiter on no
 * registry becomes a node of its own. */
int fpi_reg_py_awaiters(fpi_reg_read *r, size_t i)
{
    fpi_async_build *b = r->b;
    uint64_t addr = b->g->nodes[i].addr, type, by = 0, *members = NULL;
    size_t n = 0;
    b->g->nodes[i].first_awaiter = b->g->nawaiters;
    int rc = fpi_reg_word(r, addr + (uint64_t)b->l->ob_type, &type, "a future's type");
    if (!rc)
        rc = fpi_reg_attr(r, addr, type, PY_AWAITED_BY, &by);
    if (!rc && by)
        rc = fpi_pyobj_set_items(&r->o, by, &members, &n);
    for (size_t k = 0; !rc && k < n; k++) {
        size_t a = fpi_async_node_find(b, members[k]);
        if (a == SIZE_MAX)
            rc = add_unlisted(r, members[k], &a);
        if (!rc)
            rc = fpi_async_awaiter_push(b, i, a);
    }
    free(members);
    return rc;
}

/* 3.14+: whether the pure-Python implementation records who awaits whom in
 * its interpreter: only without asyncio's C module, whose
 * future_add_to_awaited_by leaves out every future that is not its own
 * (asyncio.futures then holds the C function, not the Python one). */
int fpi_reg_py_records_awaiters(fpi_reg_read *r, uint64_t interp, bool *out)
{
    uint64_t modules, mod = 0, md, fn = 0, type;
    char name[FPI_REG_NAME_MAX];
    *out = false;
    int rc = fpi_reg_word(r, interp + (uint64_t)r->b->l->interp_modules, &modules, "sys.modules");
    if (!rc && modules)
        rc = fpi_pyobj_dict_get(&r->o, modules, "asyncio.futures", &mod);
    if (rc || !modules || !mod || (rc = fpi_reg_word(r, mod + (uint64_t)r->h, &md, "a module's dict")) ||
        (rc = fpi_pyobj_dict_get(&r->o, md, "future_add_to_awaited_by", &fn)) || !fn ||
        (rc = fpi_reg_word(r, fn + (uint64_t)r->b->l->ob_type, &type, "a function's type")) ||
        (rc = fpi_pyobj_type_name(&r->o, type, name, sizeof name)))
        return rc;
    *out = strcmp(name, "function") == 0;
    return FP_OK;
}
