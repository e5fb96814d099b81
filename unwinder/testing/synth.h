/* synth.h — the synthetic memory-image builder: from a high-level
 * description (layout, threads, frames with their code objects, generator
 * frames, entry frames, thread-local bytecode) it lays out a consistent
 * CPython address space using that layout's real offsets, and serves it
 * through an fp_reader.  The description is the ground truth: unwinding
 * the image must return exactly the described stacks. */
#ifndef FP_SYNTH_H
#define FP_SYNTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frameproof/frameproof.h"
#include "layout.h"

#define SYNTH_MAX_ENTRIES 64  /* location entries of one described line table */
#define SYNTH_MAX_TLBC 8      /* thread-local bytecode copies of one code object */

/* One location entry, encoded with the long form so the expected positions
 * do not depend on the decoder under test. */
typedef struct synth_loc {
    int units;                 /* 1..8 code units */
    int line, end_line, column, end_column; /* FP_POS_NONE for absent */
} synth_loc;

typedef struct synth_code {
    const char *qualname, *name, *filename; /* UTF-8 (any PEP 393 kind) */
    int firstlineno;
    synth_loc locs[SYNTH_MAX_ENTRIES];
    int nlocs;
    bool noncompact_names;     /* legacy (non-compact) str objects */
    int firsttraceable;        /* frames (not generators) before this unit are hidden */
} synth_code;

typedef struct synth_frame {
    const synth_code *code;
    int unit;                  /* instruction offset in code units */
    bool generator;            /* embedded in a generator object */
    bool entry_below;          /* an entry/shim frame sits between this frame and its caller */
    int tlbc_index;            /* FT 3.14+: which bytecode copy (0 = main) */
} synth_frame;

typedef struct synth_thread {
    uint64_t native_id, thread_id;
    bool main;
    const synth_frame *frames; /* innermost first */
    size_t nframes;
} synth_thread;

typedef struct synth_desc {
    const synth_thread *threads;
    size_t nthreads;
    /* Code objects to build even when no frame names them yet, so that
     * synth_plan_move can call them (may be NULL). */
    const synth_code *codes;
    size_t ncodes;
} synth_desc;

typedef struct synth_image synth_image;

/* layout ids: "3.11", "3.12", "3.13", "3.13t", "3.14", "3.14t", "3.15", "3.15t".
 * table: the 8 KiB _Py_DebugOffsets of that build for 3.13+ (NULL for 3.11/3.12). */
int synth_build(const char *layout_id, const uint8_t *table, size_t table_len, const synth_desc *d,
                synth_image **out, char *err, size_t errlen);
void synth_free(synth_image *img);
void synth_reader(synth_image *img, fp_reader *out);
void synth_target(const synth_image *img, fp_target_desc *out);
const fpi_layout *synth_layout(const synth_image *img);

/* Address of the frame built for thread t, frame f (for corruption tests),
 * and raw access to the image's bytes at an address (NULL if unmapped). */
uint64_t synth_frame_addr(const synth_image *img, size_t t, size_t f);
uint64_t synth_thread_state_addr(const synth_image *img, size_t t);
uint8_t *synth_bytes(synth_image *img, uint64_t addr, size_t len);
/* A new zeroed region of len bytes in the image, above every other; its
 * address, or 0 when out of room or memory. */
uint64_t synth_alloc(synth_image *img, size_t len);
/* Thread t now runs a stack that a stack switcher started with no
 * current frame (a greenlet other than the main one): its outermost
 * frame's caller becomes an entry frame with no caller, outside the data
 * stack, where 3.15+ had the thread's base frame (earlier versions already
 * end every chain at such an entry frame: no change).  Its address, or 0
 * when nothing changed (before 3.15, no frame, out of memory). */
uint64_t synth_switch_stack(synth_image *img, size_t t);

/* A running thread's stack changes by word writes, in the interpreter's
 * order.  synth_plan_move plans them without writing: thread t returns from
 * its `npop` innermost frames (3.13: clearing them) and then calls `push` (innermost first; plain
 * calls of built code objects, placed in the data-stack slots the returned
 * frames left, as CPython reuses them).  Each frame's fields are written
 * before the thread's top names it, so every write that sets `new_state`
 * makes a new stack visible and every other write leaves the visible stack
 * as it was.  synth_plan_advance plans the top frame moving to `unit`.
 * Plans of one thread chain: each starts where the last left the stack.
 * synth_apply performs one write. */
#define SYNTH_MAX_MOVE_FRAMES 16
typedef struct synth_write {
    uint64_t addr, value;
    unsigned size;             /* 1, 4 or 8 bytes */
    bool new_state;
} synth_write;
int synth_plan_move(synth_image *img, size_t t, size_t npop, const synth_frame *push, size_t npush,
                    synth_write *out, size_t cap, size_t *nout);
int synth_plan_advance(synth_image *img, size_t t, int unit, synth_write *out, size_t cap, size_t *nout);
/* A generator's frame at the top yields (YIELD_VALUE: its caller becomes
 * the top, then the frame's previous link is cleared) and is kept as
 * suspended; synth_plan_resume links suspended generator `which` (0 ..
 * synth_suspended_count()-1, on any thread) under thread t's top and makes
 * it the top (SEND, FOR_ITER: refused unless the top is at one, as a frame
 * described directly under a generator's frame is).  3.12+ (3.11 resumes a
 * generator in its own evaluation loop, with its own _PyCFrame, and marks
 * its frame as an entry frame, as the builder does).  synth_plan_move
 * refuses a call from a frame at SEND or FOR_ITER. */
int synth_plan_yield(synth_image *img, size_t t, synth_write *out, size_t cap, size_t *nout);
size_t synth_suspended_count(const synth_image *img);
int synth_plan_resume(synth_image *img, size_t t, size_t which, synth_write *out, size_t cap, size_t *nout);
/* Threads come and go.  synth_plan_thread_exit unlinks thread t from the
 * interpreter's list (the visible change) and then fills the words of its
 * freed state the walker reads with SYNTH_FREED_WORD (a debug build's dead
 * bytes); not the main thread.  synth_plan_thread_start reuses an exited
 * thread's state for a new thread (the allocator hands the same memory
 * back, zeroed: those words are 0 first): its ids, an empty stack, then
 * linked at the list's head (the visible change).  Moves of an exited
 * thread are refused. */
#define SYNTH_FREED_WORD 0xDDDDDDDDDDDDDDDDull
int synth_plan_thread_exit(synth_image *img, size_t t, synth_write *out, size_t cap, size_t *nout);
int synth_plan_thread_start(synth_image *img, size_t t, uint64_t native_id, uint64_t thread_id, synth_write *out,
                            size_t cap, size_t *nout);
void synth_apply(synth_image *img, const synth_write *w);

/* asyncio's task graph (3.14+ layouts, GIL or free-threaded): tasks and
 * futures laid out as asyncio's C module keeps them, and its debug offsets table, whose
 * address synth_target then gives.  A task is on its thread's list (list
 * >= 0: a thread index), its interpreter's (SYNTH_LIST_INTERP) or on none
 * (SYNTH_LIST_NONE: reachable only as an awaiter, as a future always is).
 * Its coroutine chain is innermost first; each frame a coroutine's (or an
 * async generator's, reached from its awaiter through an
 * `async_generator_asend` object when through_asend), every one but the
 * innermost suspended awaiting the next; the innermost is executing when
 * the task is running, else suspended, or awaiting `awaits` (an index of
 * the description's tasks and futures, -1: nothing).  awaited_by: indices
 * of tasks and futures, kept as one object or, when by_set (or more than
 * one), as a set whose table also holds `dummies` deleted entries. */
#define SYNTH_LIST_INTERP (-1)
#define SYNTH_LIST_NONE (-2)
#define SYNTH_MAX_CORO 8
#define SYNTH_MAX_AWAITED_BY 4
typedef struct synth_coro {
    synth_frame frame;         /* its code and unit (generator is implied) */
    bool async_gen, through_asend;
} synth_coro;
typedef struct synth_task {
    bool is_task;              /* false: a future */
    const char *name;          /* UTF-8; NULL: an unnamed task's number, or no name when no_name */
    uint64_t number;
    bool no_name, noncompact_name;
    int list;                  /* a thread index, SYNTH_LIST_INTERP or SYNTH_LIST_NONE */
    bool running;              /* its thread's running task (on that thread's list) */
    int state;                 /* enum fp_future_state */
    synth_coro coro[SYNTH_MAX_CORO];
    size_t ncoro;
    int awaits;                /* what the innermost coroutine awaits, or -1 */
    bool awaits_tagged;        /* the awaited reference with its stack-ref tag bit set */
    int awaited_by[SYNTH_MAX_AWAITED_BY];
    size_t nawaited_by;
    bool by_set;
    unsigned dummies;
} synth_task;
/* Lays out n tasks and futures in img (built from a description whose
 * code objects include every coroutine's).  0, or FP_E_INVALID_ARG with
 * the reason in the builder's error buffer (a description it cannot lay
 * out, a layout without task graphs, out of room). */
int synth_asyncio(synth_image *img, const synth_task *tasks, size_t n);
/* The address of described task or future i (0 before synth_asyncio). */
uint64_t synth_task_addr(const synth_image *img, size_t i);

#endif
