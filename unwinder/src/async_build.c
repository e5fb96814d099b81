/* async_build.c — asyncio's task graph as its readers build it
 * (async_build.h): the node map, task names, coroutine stacks and awaiter
 * edges, and the graph object's public accessors (frameproof/async.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "async_build.h"
#include "grow.h"
#include "read.h"
#include "typed_load.h"

#define TPFLAGS_LONG_SUBCLASS (1ull << 24)
#define TPFLAGS_UNICODE_SUBCLASS (1ull << 28)
#define LONG_DIGIT_BITS 30u
#define GRAPH_INITIAL 64u
#define CODEUNIT_SIZE 2
#define U(x) FPI_ASYNC_U(x)

/* Generator frame states (pycore_frame.h). */
#define STATE311_CREATED (-2)           /* 3.11, 3.12 */
#define STATE311_SUSPENDED (-1)         /* 3.11, 3.12: yield and yield from alike */
#define STATE311_COMPLETED 1            /* 3.11-3.14: COMPLETED, then CLEARED (4) */
#define STATE313_CREATED (-3)
#define STATE313_YIELD_FROM (-1)        /* 3.13, 3.14: FRAME_SUSPENDED_YIELD_FROM */
#define STATE315_YIELD_FROM 2
#define STATE315_YIELD_FROM_LOCKED 3
#define STATE315_CLEARED 5
/* The RESUME a frame suspended in `await` resumes at (3.11, 3.12): its
 * opcode in either version, the quickened or instrumented form, and the
 * argument that says "after yield from / await". */
#define OP_RESUME 151
#define OP311_RESUME_QUICK 150
#define OP312_INSTRUMENTED_RESUME 240
#define RESUME_AFTER_AWAIT 2

int fpi_async_read_u64(fpi_async_build *b, uint64_t addr, uint64_t *out, const char *what)
{
    uint8_t w[8];
    *out = 0;
    int rc = fpi_read(b->s, addr, w, sizeof w);
    if (rc)
        return fpi_err_code(&b->s->err, rc, "cannot read asyncio's %s at 0x%llx", what, U(addr));
    *out = fpi_load_u64(w, 0);
    return FP_OK;
}

static size_t map_slot(const fpi_async_build *b, uint64_t addr)
{
    uint64_t h = addr * 0x9e3779b97f4a7c15ull;
    size_t i = (size_t)(h >> 20) & (b->map_cap - 1);
    while (b->map_vals[i] && b->map_keys[i] != addr)
        i = (i + 1) & (b->map_cap - 1);
    return i;
}

size_t fpi_async_node_find(const fpi_async_build *b, uint64_t addr)
{
    if (!b->map_cap)
        return SIZE_MAX;
    size_t i = map_slot(b, addr);
    return b->map_vals[i] ? b->map_vals[i] - 1 : SIZE_MAX;
}

static int map_put(fpi_async_build *b, uint64_t addr, size_t node)
{
    if ((b->g->nnodes + 1) * 2 > b->map_cap) {
        size_t ncap = b->map_cap ? b->map_cap * 2 : 2 * GRAPH_INITIAL;
        uint64_t *ok = b->map_keys;
        size_t *ov = b->map_vals, ocap = b->map_cap;
        b->map_keys = calloc(ncap, sizeof *b->map_keys);
        b->map_vals = calloc(ncap, sizeof *b->map_vals);
        if (!b->map_keys || !b->map_vals) {
            free(b->map_keys);
            free(b->map_vals);
            b->map_keys = ok;
            b->map_vals = ov;
            return fpi_err(&b->s->err, FP_E_NOMEM, "out of memory: asyncio graph of %zu nodes", b->g->nnodes + 1);
        }
        b->map_cap = ncap;
        for (size_t i = 0; i < ocap; i++)
            if (ov[i]) {
                size_t j = map_slot(b, ok[i]);
                b->map_keys[j] = ok[i];
                b->map_vals[j] = ov[i];
            }
        free(ok);
        free(ov);
    }
    size_t i = map_slot(b, addr);
    b->map_keys[i] = addr;
    b->map_vals[i] = node + 1;
    return FP_OK;
}

/* A task's name: a str, or the int an unnamed task keeps until asked
 * (rendered "Task-N", as get_name() would); *out is malloc'd. */
static int task_name(fpi_async_build *b, uint64_t obj, char **out)
{
    const fpi_layout *l = b->l;
    uint64_t type, flags = 0;
    int kind = FPI_TYPE_OTHER;
    int rc = fpi_async_read_u64(b, obj + (uint64_t)l->ob_type, &type, "a task name's type");
    if (!rc && (rc = fpi_type_kind(b->s, type, &kind)))
        rc = fpi_err_code(&b->s->err, rc, "cannot read the name of type 0x%llx", U(type));
    if (!rc && kind == FPI_TYPE_STR)
        flags = TPFLAGS_UNICODE_SUBCLASS;
    else if (!rc && kind == FPI_TYPE_INT)
        flags = TPFLAGS_LONG_SUBCLASS;
    else if (!rc) /* a subclass, told by its flags */
        rc = fpi_async_read_u64(b, type + (uint64_t)b->objs.tp_flags, &flags, "a type's flags");
    if (rc)
        return rc;
    if (flags & TPFLAGS_UNICODE_SUBCLASS) {
        size_t len;
        if ((rc = fpi_read_str(b->s, obj, out, &len)))
            return fpi_err_code(&b->s->err, rc, "cannot read the name of an asyncio task at 0x%llx", U(obj));
        return FP_OK;
    }
    if (!(flags & TPFLAGS_LONG_SUBCLASS) || b->objs.long_lv_tag == FPI_OFF_NONE)
        return fpi_err(&b->s->err, FP_E_CORRUPT, "asyncio: a task's name at 0x%llx is neither str nor int", U(obj));
    uint64_t tag;
    if ((rc = fpi_async_read_u64(b, obj + (uint64_t)b->objs.long_lv_tag, &tag, "an int's tag")))
        return rc;
    uint64_t ndigits = tag >> 3, value = 0;
    if ((tag & 3) == 2 || ndigits > FPI_ASYNC_MAX_LONG_DIGITS)
        return fpi_err(&b->s->err, FP_E_CORRUPT, "asyncio: an unnamed task's number (tag 0x%llx) is invalid", U(tag));
    uint8_t d[4 * FPI_ASYNC_MAX_LONG_DIGITS];
    if (ndigits && (rc = fpi_read(b->s, obj + (uint64_t)b->objs.long_digits, d, 4 * (size_t)ndigits)))
        return fpi_err_code(&b->s->err, rc, "cannot read an unnamed asyncio task's number at 0x%llx", U(obj));
    for (uint64_t i = ndigits; i-- > 0;)
        value = (value << LONG_DIGIT_BITS) | (fpi_load_u32(d, (int32_t)(4 * i)) & ((1u << LONG_DIGIT_BITS) - 1));
    char buf[32];
    snprintf(buf, sizeof buf, "Task-%llu", U(value));
    *out = strdup(buf);
    return *out ? FP_OK : fpi_err(&b->s->err, FP_E_NOMEM, "out of memory: a task's name");
}

/* A generator's frame state: no frame left (returned or cleared). */
static bool state_finished(const fpi_layout *l, int8_t st)
{
    return l->minor >= 15 ? st == STATE315_CLEARED : st >= STATE311_COMPLETED;
}

/* Created and never run: 3.11/3.12 keep the instruction before the first. */
static bool state_created(const fpi_layout *l, int8_t st)
{
    return l->minor <= 12 ? st == STATE311_CREATED : l->minor == 13 ? st == STATE313_CREATED : false;
}

/* Suspended in `await` (yield from).  3.11 and 3.12 do not say so in the
 * state: the instruction after the one the frame stopped at is a RESUME
 * whose argument says what it resumes from (2: yield from, await). */
static int state_yield_from(fpi_async_build *b, int8_t st, uint64_t instr, bool *out)
{
    const fpi_layout *l = b->l;
    *out = false;
    if (l->minor >= 15)
        *out = st == STATE315_YIELD_FROM || st == STATE315_YIELD_FROM_LOCKED;
    else if (l->minor >= 13)
        *out = st == STATE313_YIELD_FROM;
    else if (st == STATE311_SUSPENDED) {
        uint8_t next[2];
        int rc = fpi_read(b->s, instr + CODEUNIT_SIZE, next, sizeof next);
        if (rc)
            return fpi_err_code(&b->s->err, rc, "cannot read the instruction after 0x%llx", U(instr));
        const uint8_t other = l->minor == 11 ? OP311_RESUME_QUICK : OP312_INSTRUMENTED_RESUME;
        bool resume = next[0] == OP_RESUME || next[0] == other;
        *out = resume && next[1] >= RESUME_AFTER_AWAIT;
    }
    return FP_OK;
}

/* One coroutine's frame, appended to the graph's frames. */
static int push_coro_frame(fpi_async_build *b, uint64_t frame, const uint8_t *fr, bool created)
{
    fp_session *s = b->s;
    const fpi_layout *l = b->l;
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
    if (created && l->instr_is_prev && delta == -CODEUNIT_SIZE)
        delta = 0; /* before its first instruction: at the def line, as f_lineno says */
    if (delta % CODEUNIT_SIZE != 0 || delta < 0 || delta / CODEUNIT_SIZE >= ce->code_units)
        return fpi_err(&s->err, FP_E_CORRUPT,
                       "asyncio: coroutine frame 0x%llx: instruction 0x%llx is outside the bytecode of %s",
                       U(frame), U(instr), ce->qualname);
    int32_t unit = (int32_t)(delta / CODEUNIT_SIZE);
    fpi_position pos;
    if ((rc = fpi_code_position(ce, unit, &pos)))
        return fpi_err(&s->err, rc, "line table of %s (%s): corrupt", ce->qualname, ce->filename);
    fp_async_graph *g = b->g;
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

/* Where a frame suspended in `await` keeps the object it awaits: SEND
 * keeps it on the stack, on top up to 3.14 (3.11-3.13: below stacktop
 * slots of localsplus; 3.14: below the saved stack pointer), under the
 * value sent in 3.15 (two slots down). */
static int awaited_at(fpi_async_build *b, uint64_t frame, const uint8_t *fr, uint64_t *at)
{
    const fpi_layout *l = b->l;
    const uint64_t base = frame + (uint64_t)l->fr_localsplus;
    uint64_t sp, below = l->minor >= 15 ? 2 * FPI_PTR_SIZE : FPI_PTR_SIZE;
    if (l->fr_stackpointer != FPI_OFF_NONE) {
        sp = fpi_load_u64(fr, l->fr_stackpointer);
    } else {
        int32_t top = (int32_t)fpi_load_u32(fr, l->fr_stacktop);
        sp = top > 0 && top <= FPI_ASYNC_MAX_STACKTOP ? base + FPI_PTR_SIZE * (uint64_t)top : 0;
    }
    if (sp < base + below)
        return fpi_err(&b->s->err, FP_E_CORRUPT, "asyncio: coroutine frame 0x%llx has no awaited object",
                       U(frame));
    *at = sp - below;
    return FP_OK;
}

/* The coroutine chain from a task's coroutine down what each awaits, while
 * that is a coroutine or an async generator (through the awaitable its
 * __anext__() returns): the node's frames, innermost first. */
static int coro_stack(fpi_async_build *b, size_t node, uint64_t coro)
{
    const fpi_layout *l = b->l;
    const fpi_async_objs *o = &b->objs;
    fp_async_graph *g = b->g;
    fp_async_node *n = &g->nodes[node];
    n->first_frame = g->nframes;
    /* One read per object: its header, state and embedded frame header
     * (all inside any generator-like object the type check then accepts). */
    size_t len = (size_t)o->gen_iframe + (size_t)l->fr_size;
    uint8_t obj[FPI_MAX_SMALL_STRUCT];
    if (len > sizeof obj)
        return fpi_err(&b->s->err, FP_E_CORRUPT, "asyncio: a coroutine's frame ends at %zu bytes", len);
    /* Each coroutine is reached through at most one async generator's
     * awaitable, and the chain ends in one more object: a longer walk is a
     * cycle of awaitables. */
    const uint64_t max_hops = 2 * (uint64_t)b->s->opts.max_depth + 1;
    for (uint64_t hops = 0; coro; hops++) {
        if (hops > max_hops)
            return fpi_err(&b->s->err, FP_E_CORRUPT, "asyncio: task 0x%llx: a cycle of awaitables", U(n->addr));
        int rc = fpi_read(b->s, coro, obj, len), kind = FPI_TYPE_OTHER;
        bool whole = rc == FP_OK;
        if (!whole) /* an awaited object smaller than a coroutine, at the end of its mapping: its type alone */
            rc = fpi_read(b->s, coro + (uint64_t)l->ob_type, obj + l->ob_type, 8);
        if (rc)
            return fpi_err_code(&b->s->err, rc, "cannot read asyncio coroutine 0x%llx", U(coro));
        uint64_t type = fpi_load_u64(obj, l->ob_type);
        if ((rc = fpi_type_kind(b->s, type, &kind)))
            return fpi_err_code(&b->s->err, rc, "cannot read the name of type 0x%llx", U(type));
        if (kind == FPI_TYPE_ASYNC_GEN_AWAIT) {
            /* `async for`'s __anext__() (or asend(), athrow(), aclose()):
             * the stack goes on in its async generator, which the object
             * holds right after its header. */
            uint64_t at = coro + (uint64_t)l->ob_type + 8;
            if (whole)
                coro = fpi_load_u64(obj, l->ob_type + 8);
            else if ((rc = fpi_async_read_u64(b, at, &coro, "an async generator's awaitable")))
                return rc;
            continue;
        }
        if (kind != FPI_TYPE_COROUTINE && kind != FPI_TYPE_ASYNC_GEN)
            break; /* a future, a task, another awaitable: the stack ends here */
        if (!whole)
            return fpi_err(&b->s->err, FP_E_CORRUPT, "asyncio: coroutine 0x%llx ends before its frame", U(coro));
        int8_t st = (int8_t)obj[o->gen_frame_state];
        if (state_finished(l, st))
            break; /* no frame left, and nothing awaited */
        if (g->nframes - n->first_frame == b->s->opts.max_depth)
            return fpi_err(&b->s->err, FP_E_LIMIT, "asyncio: task 0x%llx awaits more than %u coroutines deep",
                           U(n->addr), b->s->opts.max_depth);
        uint64_t frame = coro + (uint64_t)o->gen_iframe;
        const uint8_t *fr = obj + o->gen_iframe;
        bool awaiting;
        if ((rc = push_coro_frame(b, frame, fr, state_created(l, st))) ||
            (rc = state_yield_from(b, st, fpi_load_u64(fr, l->fr_instr_ptr), &awaiting)))
            return rc;
        if (!awaiting)
            break;
        uint64_t at = 0;
        if ((rc = awaited_at(b, frame, fr, &at)))
            return rc;
        uint64_t ref;
        if ((rc = fpi_async_read_u64(b, at, &ref, "an awaited object")))
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

int fpi_async_task_fill(fpi_async_build *b, size_t node, uint64_t name, uint64_t coro)
{
    char *nm = NULL;
    int rc = name ? task_name(b, name, &nm) : FP_OK;
    if (rc)
        return rc;
    b->g->nodes[node].name = nm;
    return coro_stack(b, node, coro);
}

int fpi_async_node_push(fpi_async_build *b, uint64_t addr, size_t *index)
{
    fp_async_graph *g = b->g;
    if (g->nnodes >= FPI_ASYNC_MAX_NODES)
        return fpi_err(&b->s->err, FP_E_LIMIT, "asyncio: more than %u tasks and futures", FPI_ASYNC_MAX_NODES);
    if (fpi_async_node_find(b, addr) != SIZE_MAX)
        return fpi_err(&b->s->err, FP_E_CORRUPT, "asyncio: task 0x%llx is listed twice", U(addr));
    fp_async_node *nn = fpi_grow(g->nodes, &g->nodes_cap, g->nnodes + 1, sizeof *nn, GRAPH_INITIAL);
    if (!nn)
        return fpi_err(&b->s->err, FP_E_NOMEM, "out of memory: asyncio node %zu", g->nnodes + 1);
    g->nodes = nn;
    int rc = map_put(b, addr, g->nnodes);
    if (rc)
        return rc;
    *index = g->nnodes;
    g->nodes[g->nnodes++] = (fp_async_node){.addr = addr, .interp_id = -1, .first_frame = g->nframes,
                                            .first_awaiter = g->nawaiters};
    return FP_OK;
}

int fpi_async_awaiter_push(fpi_async_build *b, size_t node, size_t awaiter)
{
    fp_async_graph *g = b->g;
    size_t *na = fpi_grow(g->awaiters, &g->awaiters_cap, g->nawaiters + 1, sizeof *na, GRAPH_INITIAL);
    if (!na)
        return fpi_err(&b->s->err, FP_E_NOMEM, "out of memory: asyncio edge %zu", g->nawaiters + 1);
    g->awaiters = na;
    if (!g->nodes[node].awaiter_count)
        g->nodes[node].first_awaiter = g->nawaiters;
    na[g->nawaiters++] = awaiter;
    g->nodes[node].awaiter_count++;
    return FP_OK;
}

void fpi_async_build_free(fpi_async_build *b)
{
    free(b->map_keys);
    free(b->map_vals);
    b->map_keys = NULL;
    b->map_vals = NULL;
    b->map_cap = 0;
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
