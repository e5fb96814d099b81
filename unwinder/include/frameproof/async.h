/* frameproof/async.h — asyncio's task graph read from outside a live
 * process: every pending task of every thread and interpreter, the
 * coroutine stack each one is suspended in, and who awaits whom.  GIL and
 * free-threaded builds alike: on CPython 3.14+ through the layout asyncio's
 * C module publishes (the .AsyncioDebug section) and the list of pending
 * tasks it keeps per thread; on 3.11-3.13 through the registries of the
 * asyncio.tasks module (the tasks asyncio.all_tasks() finds) and the C
 * Task's fields at the places each version has them.  Who awaits whom is
 * what each version records: on 3.14+ every future's awaited_by; on
 * 3.11-3.13 the future a task waits on (a task, or a gather() whose
 * children it then awaits), a TaskGroup's tasks awaited by its parent task
 * and shield()'s inner task by the task waiting on the shield — no futures
 * as nodes there; tasks of asyncio's pure-Python implementation are read
 * there too (from their __dict__).  On 3.14+ tasks of the pure-Python
 * implementation (asyncio's C module not imported) are on no list of the C
 * module's: they are found in asyncio.tasks' registries as before 3.14,
 * and who awaits them in their futures' own awaited_by sets; beside tasks
 * of the C module (a task factory making asyncio.tasks._PyTask), which
 * record no awaiter of theirs, the graph is refused (FP_E_UNSUPPORTED).
 * asyncio.all_tasks() inside such a program leaves them out too.
 *
 * One instant: every thread of the target is stopped (ptrace, as
 * frameproof/pause.h) while the graph is read and resumed before
 * fp_async_graph_read returns, so a graph never mixes two instants (tasks
 * finish and are freed while a running program is read).  A session
 * attached to a reader without a live process (fp_target_desc.pid 0: a
 * memory image, frameproof/image.h) is read as it stands: on 3.14+ through
 * the table address its description gives.  Conventions as in frameproof.h. */
#ifndef FRAMEPROOF_ASYNC_H
#define FRAMEPROOF_ASYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frameproof/export.h"
#include "frameproof/frameproof.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A future's state (asyncio's _state: "PENDING", "CANCELLED", "FINISHED"). */
enum fp_future_state {
    FP_FUTURE_PENDING = 0,
    FP_FUTURE_CANCELLED = 1,
    FP_FUTURE_FINISHED = 2,
};

/* One node of the graph: a task, or a future that is not a task but is
 * recorded as awaiting one (asyncio.future_add_to_awaited_by links any two
 * futures; gather() and shield() link their children to the awaiting task
 * itself). */
typedef struct fp_async_node {
    uint64_t addr;            /* the object's address: id() in the target */
    bool is_task;
    const char *name;         /* a task's name, UTF-8 ("Task-N" for an unnamed one); NULL for a
                               * future, and for a task whose name slot is empty (get_name()
                               * gives None: a task the GC cleared and has not freed yet) */
    int state;                /* enum fp_future_state */
    uint64_t thread_native_id;/* kernel id of the thread whose task list holds it; 0: on the
                               * interpreter's list (its thread exited), or on no list */
    int64_t interp_id;        /* the interpreter whose list holds it; -1: on no list, found only
                               * as an awaiter: a future, or a task asyncio has unlisted (its
                               * state says whether it is done) */
    bool running;             /* the task a thread is running now (its coroutine is executing) */
    size_t first_frame;       /* its coroutine stack, innermost first (the coroutine the task runs
                               * last, then what awaits it, ...): fp_async_graph_get_frame; at most
                               * fp_options.max_depth coroutines, beyond which FP_E_LIMIT */
    size_t frame_count;
    size_t first_awaiter;     /* the nodes that await it: fp_async_graph_get_awaiter */
    size_t awaiter_count;
} fp_async_node;

typedef struct fp_async_graph fp_async_graph;

/* Reads the task graph of the process s is attached to (fp_session_attach_pid,
 * or fp_session_attach_reader with a pid), stopping its threads for the
 * read; or, attached to a reader without a pid, the graph its memory holds
 * (the caller vouches that it does not change: an image), on 3.14+ found
 * through fp_target_desc.asyncio_debug_addr.  *out is the caller's
 * (fp_async_graph_free).  A target where asyncio is not found gives an
 * empty graph, fp_async_graph_get_asyncio_loaded false: on 3.14+ neither
 * its C module (an extension module not imported yet; where it is built
 * in, it is always found) nor asyncio.tasks in sys.modules of any
 * interpreter, on 3.11-3.13 not the asyncio.tasks module.  Frame strings are the
 * session's, valid until its next fp_session_sample, fp_async_graph_read or
 * free; task names are the graph's.  Errors: FP_E_INVALID_ARG, FP_E_STATE
 * (not attached; 3.14+: no pid and no table address), FP_E_UNSUPPORTED
 * (a version or build this reader does not know; 3.14+: tasks of both
 * implementations), FP_E_PROCESS_GONE, FP_E_PERMISSION, FP_E_CORRUPT (also a
 * container of asyncio's caught while a thread of the target changes it:
 * counted, not guessed), FP_E_LIMIT,
 * FP_E_READ, FP_E_IO, FP_E_NOMEM, with the session's message. */
FP_API int fp_async_graph_read(fp_session *s, fp_async_graph **out);

/* Where asyncio's debug offsets table (.AsyncioDebug) is in the target s is
 * attached to: *addr 0 when asyncio's C module is not loaded (the extension
 * not imported yet).  With a pid it is looked for in the files the process
 * maps (/proc/PID/maps and /proc/PID/root) and remembered; without, it is
 * the description's.  What `snapshot --async` records in an image.  Errors:
 * FP_E_INVALID_ARG, FP_E_STATE (not attached), FP_E_IO, FP_E_PROCESS_GONE,
 * FP_E_FORMAT, with the session's message. */
FP_API int fp_session_get_asyncio_table(fp_session *s, uint64_t *addr);

/* As fp_async_graph_read, and sm (may be NULL: fp_async_graph_read) gets
 * the stack of every thread at the same instant, walked while the target
 * is stopped (as a blocking fp_session_sample; without a pid, as
 * fp_session_sample walks the reader's memory).  A running task's stack
 * holds only its own coroutine's frame (executing, it awaits nothing);
 * that frame's frame_addr is found on its thread's stack, above it what
 * the task runs now (the coroutines it awaits, the functions they call):
 * fp_async_graph_get_running_frames.  A
 * thread whose own walk fails (deeper than fp_options.max_depth, a frame
 * that fails its checks) does not fail the call: it is in sm with its
 * fp_thread.error and no frames, the other threads walked, the graph whole,
 * and fp_session_get_errmsg says why the first such thread failed; a
 * running task on such a thread has no running frames.  The errors of
 * both calls otherwise; on any, neither sm nor *out holds a result. */
FP_API int fp_async_graph_read_sample(fp_session *s, fp_sample *sm, fp_async_graph **out);

/* Accessors; an out-of-range index gives NULL (and SIZE_MAX for
 * fp_async_graph_get_awaiter, whose answers are node indices). */
FP_API bool fp_async_graph_get_asyncio_loaded(const fp_async_graph *g);
/* How long the target was stopped for the read, in nanoseconds: from before
 * its first thread was stopped to its resume, which takes microseconds per
 * thread more; 0 when it was not stopped (an image). */
FP_API uint64_t fp_async_graph_get_stopped_ns(const fp_async_graph *g);
FP_API size_t fp_async_graph_get_node_count(const fp_async_graph *g);
FP_API const fp_async_node *fp_async_graph_get_node(const fp_async_graph *g, size_t i);
FP_API size_t fp_async_graph_get_frame_count(const fp_async_graph *g);
FP_API const fp_frame *fp_async_graph_get_frame(const fp_async_graph *g, size_t i);
/* The index of the node whose object is at addr (an awaiter's, another
 * graph's node); SIZE_MAX when none is.  A scan of the nodes. */
FP_API size_t fp_async_graph_get_node_index(const fp_async_graph *g, uint64_t addr);
/* What running task `node` runs now: the frames of its thread in sm (read
 * with g by fp_async_graph_read_sample), innermost first, down to and
 * including its coroutine's frame — the coroutines it awaits and the
 * functions they call above it, as asyncio.capture_call_graph() gives the
 * current task's stack inside the process.  Returns their number, the
 * first at sample frame index *first; 0 when the node is no running task,
 * its thread's walk failed, or its coroutine is not on its thread's stack
 * (asyncio's C code is stepping it, about to enter the coroutine or just
 * back from it: its stack in g is then where it stands). */
FP_API size_t fp_async_graph_get_running_frames(const fp_async_graph *g, const fp_sample *sm, size_t node,
                                                size_t *first);
/* The node index of awaiter i (fp_async_node.first_awaiter + k). */
FP_API size_t fp_async_graph_get_awaiter(const fp_async_graph *g, size_t i);
FP_API size_t fp_async_graph_get_awaiter_count(const fp_async_graph *g);

FP_API void fp_async_graph_free(fp_async_graph *g);

#ifdef __cplusplus
}
#endif

#endif
