/* async_registry.h — one read of asyncio's task registries (the
 * asyncio.tasks module's, read through pyobj.h): what async_legacy.c finds
 * there (the tasks: every one on 3.11-3.13, those of asyncio's pure-Python
 * implementation on 3.14+), what the edges of each version need, and the
 * helpers every stage of that read shares (async_registry.c).  The edges:
 * what 3.11-3.13 record (async_legacy_edges.c), and 3.14+'s awaited_by of
 * pure-Python futures (async_pure.c).  Functions return FP_OK or an FP_E_*
 * code with the session's message set. */
#ifndef FPI_ASYNC_REGISTRY_H
#define FPI_ASYNC_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "async_build.h"
#include "pyobj.h"

#define FPI_REG_PY_TASK "Task"          /* asyncio.tasks._PyTask's tp_name */
#define FPI_REG_PY_FUTURE "Future"      /* asyncio.futures._PyFuture's */
#define FPI_REG_NAME_MAX 64             /* a type's name, as compared */

struct task_table; /* the C Task's fields per version (async_legacy.c) */

/* One read: the build, the objects' places, and what the edges need. */
typedef struct fpi_reg_read {
    fpi_async_build *b;
    fpi_pyobj o;
    const struct task_table *t;  /* NULL on 3.14+: the registries' tasks are pure-Python ones only */
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
    } *by_waiter;                /* every node that waits on something, by (waiter, node): fpi_reg_legacy_edges */
    size_t nby_waiter;
} fpi_reg_read;

/* What a task holds that its node and edges need, from either
 * implementation: waiter, callback0 and name 0 when it has none. */
typedef struct fpi_reg_task_fields {
    int32_t state;
    uint64_t loop, waiter, coro, name, callback0, callbacks;
} fpi_reg_task_fields;

/* fpi_async_read_u64 of r's build. */
int fpi_reg_word(fpi_reg_read *r, uint64_t addr, uint64_t *out, const char *what);

/* What the type at type is (str, int, None, ...; fpi_type_kind), with a
 * message when its name cannot be read. */
int fpi_reg_kind(fpi_reg_read *r, uint64_t type, int *kind);

/* obj's attribute name (its __dict__), 0 when it has none or it is None. */
int fpi_reg_attr(fpi_reg_read *r, uint64_t obj, uint64_t type, const char *name, uint64_t *value);

/* Whether type is asyncio's pure-Python Task (asyncio.tasks._PyTask, its
 * tp_name "Task", on the pure-Python Future) or a subclass of it. */
int fpi_reg_is_py_task(fpi_reg_read *r, uint64_t type, bool *out);

/* A pure-Python future's state (-1: none of asyncio's), from its __dict__. */
int fpi_reg_py_state(fpi_reg_read *r, uint64_t addr, uint64_t type, int32_t *out);

/* A pure-Python Task's fields, from its __dict__. */
int fpi_reg_py_task_fields(fpi_reg_read *r, uint64_t addr, uint64_t type, fpi_reg_task_fields *f);

/* 3.11-3.13: who awaits whom among r's nodes, as those versions record it
 * (async_legacy_edges.c). */
int fpi_reg_legacy_edges(fpi_reg_read *r);

/* 3.14+: who awaits node i, from its awaited_by (async_pure.c). */
int fpi_reg_py_awaiters(fpi_reg_read *r, size_t i);

/* 3.14+: whether the pure-Python implementation records awaiters in the
 * interpreter at interp (async_pure.c). */
int fpi_reg_py_records_awaiters(fpi_reg_read *r, uint64_t interp, bool *out);

#endif
