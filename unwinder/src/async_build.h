/* async_build.h — asyncio's task graph while it is read, shared by its two
 * readers: async_graph.c (3.14+, which finds the tasks through asyncio's
 * debug tables) and async_legacy.c (3.11-3.13, through the asyncio module's
 * own registries).  What they share: the graph object, the map from an
 * object's address to its node, task names, coroutine stacks and awaiter
 * edges.  Every int function returns FP_OK or an FP_E_* code with the
 * session's message set; every value read is checked before it is used. */
#ifndef FPI_ASYNC_BUILD_H
#define FPI_ASYNC_BUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frameproof/async.h"
#include "session.h"

#define FPI_ASYNC_U(x) ((unsigned long long)(x)) /* the messages' 0x%llx */

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

/* Where the objects a coroutine stack and a task's name are read through
 * keep what is read: the layout's fields on 3.14+, the 3.11-3.13 table's
 * before (the debug offsets of those versions do not carry them). */
typedef struct fpi_async_objs {
    int32_t gen_iframe, gen_frame_state; /* a generator-like object's embedded frame, its int8 state */
    int32_t tp_flags;                    /* unsigned long, in a type object */
    int32_t long_lv_tag, long_digits;    /* the 3.12+ int; FPI_OFF_NONE: no int name to read (3.11) */
} fpi_async_objs;

typedef struct fpi_async_build {
    fp_session *s;
    const fpi_layout *l;
    fpi_async_objs objs;
    fp_async_graph *g;
    uint64_t *map_keys;      /* node addresses, open addressing; value index + 1 */
    size_t *map_vals;
    size_t map_cap;
} fpi_async_build;

/* One word at addr; what names it in the message. */
int fpi_async_read_u64(fpi_async_build *b, uint64_t addr, uint64_t *out, const char *what);

/* The node of the object at addr, or SIZE_MAX. */
size_t fpi_async_node_find(const fpi_async_build *b, uint64_t addr);

/* Appends a node for addr, which has none yet (FP_E_CORRUPT otherwise: an
 * object listed twice), its fields zero but addr and first_frame; *index
 * is its index.  FP_E_LIMIT beyond FPI_ASYNC_MAX_NODES. */
int fpi_async_node_push(fpi_async_build *b, uint64_t addr, size_t *index);

/* Node's task fields from the task's name object (0: none; a str, or the
 * int an unnamed task keeps until asked, rendered "Task-N" as get_name()
 * would) and its coroutine: the name, and the coroutine stack — from the
 * coroutine down what each awaits, while that is a coroutine or an async
 * generator, innermost first in the graph's frames. */
int fpi_async_task_fill(fpi_async_build *b, size_t node, uint64_t name, uint64_t coro);

/* Records that node awaiter awaits node (both already in the graph); the
 * edges of one node must be pushed one after another. */
int fpi_async_awaiter_push(fpi_async_build *b, size_t node, size_t awaiter);

/* Frees the map (the graph is the caller's). */
void fpi_async_build_free(fpi_async_build *b);

/* Whether the 3.11-3.13 reader knows the build l describes, and *out the
 * places of the objects it reads (async_legacy.c). */
bool fpi_async_legacy_objs(const fpi_layout *l, fpi_async_objs *out);

/* The registries' reader (async_legacy.c): every task of every
 * interpreter's asyncio.tasks registries, with its stack and awaiters,
 * appended to b's graph — on 3.11-3.13 every task, on 3.14+ those of
 * asyncio's pure-Python implementation (FP_E_UNSUPPORTED where asyncio's C
 * module records no awaiter of theirs); the target cannot change meanwhile
 * (stopped, or an image).  *loaded is false when no interpreter has
 * imported asyncio's tasks module. */
int fpi_async_legacy_read(fpi_async_build *b, bool *loaded);

#endif
