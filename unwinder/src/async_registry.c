/* async_registry.c — what every stage of a read of asyncio's registries
 * shares (async_registry.h): a word of the target, a type's kind, an
 * instance attribute, and the objects of asyncio's pure-Python
 * implementation (its Task type, a future's state, a task's fields), read
 * from their __dict__. */
#include <string.h>

#include "async_registry.h"

#define U(x) FPI_ASYNC_U(x)

int fpi_reg_word(fpi_reg_read *r, uint64_t addr, uint64_t *out, const char *what)
{
    return fpi_async_read_u64(r->b, addr, out, what);
}

/* What the type at type is (str, int, None, ...), with a message when its
 * name cannot be read. */
int fpi_reg_kind(fpi_reg_read *r, uint64_t type, int *kind)
{
    int rc = fpi_type_kind(r->b->s, type, kind);
    return rc ? fpi_err_code(&r->b->s->err, rc, "cannot read the name of type 0x%llx", U(type)) : FP_OK;
}

/* obj's attribute name, 0 when it has none or it is None. */
int fpi_reg_attr(fpi_reg_read *r, uint64_t obj, uint64_t type, const char *name, uint64_t *value)
{
    uint64_t vtype;
    int kind = FPI_TYPE_OTHER;
    int rc = fpi_pyobj_attr(&r->o, obj, type, name, value);
    if (rc || !*value)
        return rc;
    if ((rc = fpi_reg_word(r, *value + (uint64_t)r->b->l->ob_type, &vtype, "an attribute's type")) ||
        (rc = fpi_reg_kind(r, vtype, &kind)))
        return rc;
    if (kind == FPI_TYPE_NONE)
        *value = 0;
    return FP_OK;
}

/* Whether type is asyncio's pure-Python Task (asyncio.tasks._PyTask, its
 * tp_name "Task", on the pure-Python Future) or a subclass of it. */
int fpi_reg_is_py_task(fpi_reg_read *r, uint64_t type, bool *out)
{
    uint64_t task, base;
    *out = false;
    int rc = fpi_pyobj_type_base(&r->o, type, FPI_REG_PY_TASK, &task);
    if (rc || !task || (rc = fpi_reg_word(r, task + (uint64_t)r->o.tp_base, &base, "a type's base")) || !base)
        return rc;
    char name[FPI_REG_NAME_MAX];
    if ((rc = fpi_pyobj_type_name(&r->o, base, name, sizeof name)))
        return rc;
    *out = strcmp(name, FPI_REG_PY_FUTURE) == 0;
    return FP_OK;
}

/* A pure-Python future's state (-1: none of asyncio's), from its __dict__:
 * a str there, absent while the class's "PENDING" stands, which only a
 * change of state overrides. */
int fpi_reg_py_state(fpi_reg_read *r, uint64_t addr, uint64_t type, int32_t *out)
{
    static const char *const STATES[] = {"PENDING", "CANCELLED", "FINISHED"}; /* enum fp_future_state's order */
    uint64_t state;
    bool is = false;
    *out = -1;
    int rc = fpi_pyobj_attr(&r->o, addr, type, "_state", &state);
    if (!rc && !state)
        *out = FP_FUTURE_PENDING;
    for (int32_t k = 0; !rc && state && !is && k < 3; k++)
        if ((rc = fpi_pyobj_str_is(&r->o, state, STATES[k], &is)) == FP_OK && is)
            *out = k;
    return rc;
}

/* A pure-Python Task's fields, from its __dict__ (asyncio/futures.py and
 * tasks.py: _state a str, absent while the class's "PENDING" stands, which
 * only a change of state overrides; _fut_waiter and _name perhaps None;
 * the done callbacks one list of (callback, context) tuples). */
int fpi_reg_py_task_fields(fpi_reg_read *r, uint64_t addr, uint64_t type, fpi_reg_task_fields *f)
{
    int rc;
    *f = (fpi_reg_task_fields){.state = -1};
    if ((rc = fpi_reg_py_state(r, addr, type, &f->state)) || (rc = fpi_reg_attr(r, addr, type, "_loop", &f->loop)) ||
        (rc = fpi_reg_attr(r, addr, type, "_fut_waiter", &f->waiter)) ||
        (rc = fpi_reg_attr(r, addr, type, "_coro", &f->coro)) || (rc = fpi_reg_attr(r, addr, type, "_name", &f->name)) ||
        (rc = fpi_reg_attr(r, addr, type, "_callbacks", &f->callbacks)))
        return rc;
    return FP_OK;
}
