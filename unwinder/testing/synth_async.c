/* synth_async.c — asyncio's task graph in a synthetic image (synth.h,
 * synth_asyncio): the debug offsets table asyncio's C module publishes,
 * tasks and futures with the fields it names, the lists of pending tasks
 * in thread and interpreter states, coroutine chains with their embedded
 * frames, and awaited_by as one object or a set.  The offsets are the
 * builder's own choice, written into the table: the reader under test
 * knows them only from there, as it knows a real build's. */
#include <stdlib.h>
#include <string.h>

#include "frameproof/async.h"
#include "synth_image.h"

/* TaskObj as this builder lays it out (the table's words 0-6): offsets
 * after the object header, whose size is the build's (a free-threaded
 * build's is twice a GIL build's); TASK_AT gives the offset in the object. */
#define TASK_SIZE 112u
#define TASK_NAME 0u
#define TASK_AWAITED_BY 8u
#define TASK_STATE 16u    /* the int right before is_task, as in FutureObj_HEAD */
#define TASK_IS_TASK 20u
#define TASK_BY_SET 21u
#define TASK_CORO 24u
#define TASK_NODE 32u     /* next, prev */
#define TASK_AT(l, field) ((uint64_t)(l)->ob_type + 8u + (field))
#define TABLE_WORDS 13u
/* _PyThreadStateImpl's asyncio fields, after the PyThreadState the walker
 * reads (inside the TS_EXTRA_BYTES build_thread leaves there). */
#define TS_LOOP 0u
#define TS_RUNNING 8u
#define TS_HEAD 16u
#define TS_ASYNC_BYTES 48u
_Static_assert(TS_ASYNC_BYTES <= TS_EXTRA_BYTES, "asyncio's thread state fields fit where build_thread leaves room");
#define MAX_RUNNING_THREADS 64u /* threads that may run a task, in one description */
#define SET_MIN_SLOTS 8u
#define SET_ENTRY 16u
#define LONG_DIGIT_BITS 30u
/* Generator frame states (pycore_frame.h). */
#define ST314_SUSPENDED (-2)
#define ST314_YIELD_FROM (-1)
#define ST314_EXECUTING 0
#define ST315_SUSPENDED 1
#define ST315_YIELD_FROM 2
#define ST315_EXECUTING 4

typedef struct async_types {
    uint64_t task, future, coro, agen, asend, integer, set, dummy;
} async_types;

static int interp_fields(const fpi_layout *l, int32_t *f)
{
    int32_t v[] = {l->interp_next, l->interp_id, l->interp_threads_head, l->interp_threads_main,
                   l->interp_ceval_gil, l->interp_code_generation, l->interp_tlbc_generation};
    memcpy(f, v, sizeof v);
    return (int)(sizeof v / sizeof v[0]);
}

/* An offset of 16 bytes inside the interpreter state's backed part (the
 * fields the walker reads, synth_build) that none of those fields uses;
 * -1 when there is none. */
static int64_t interp_head_offset(const fpi_layout *l)
{
    int32_t f[8];
    int n = interp_fields(l, f);
    int64_t hi = 0;
    for (int i = 0; i < n; i++)
        if (f[i] != FPI_OFF_NONE && f[i] > hi)
            hi = f[i];
    for (int64_t off = 16; off + 16 <= hi + 8 && off + 16 <= l->interp_size; off += 16) {
        bool clash = false;
        for (int i = 0; i < n; i++)
            clash |= f[i] != FPI_OFF_NONE && f[i] < off + 16 && off < f[i] + 8;
        if (!clash)
            return off;
    }
    return -1;
}

static const built_code *code_of(const synth_image *im, const synth_code *c)
{
    for (size_t i = 0; i < im->ncodes; i++)
        if (im->codes[i].src == c)
            return &im->codes[i];
    return NULL;
}

/* An int object of value v (CPython 3.12+'s tagged form, 30-bit digits). */
static uint64_t int_object(synth_image *im, const async_types *t, uint64_t v)
{
    const fpi_layout *l = &im->l;
    uint32_t digits[3];
    unsigned n = 0;
    for (uint64_t x = v; x; x >>= LONG_DIGIT_BITS)
        digits[n++] = (uint32_t)(x & ((1u << LONG_DIGIT_BITS) - 1));
    uint64_t o = synth_alloc(im, (size_t)l->long_digits + 4u * (n ? n : 1));
    if (!o)
        return 0;
    synth_put64(im, o + (uint64_t)l->ob_type, t->integer);
    synth_put64(im, o + (uint64_t)l->long_lv_tag, ((uint64_t)n << 3) | (n ? 0u : 1u)); /* sign bits: 1 for zero */
    for (unsigned i = 0; i < n; i++)
        synth_put32(im, o + (uint64_t)l->long_digits + 4u * i, digits[i]);
    return o;
}

static int8_t frame_state(const fpi_layout *l, bool executing, bool yield_from)
{
    if (l->minor >= 15)
        return executing ? ST315_EXECUTING : yield_from ? ST315_YIELD_FROM : ST315_SUSPENDED;
    return executing ? ST314_EXECUTING : yield_from ? ST314_YIELD_FROM : ST314_SUSPENDED;
}

/* A coroutine (or async generator) object holding a frame of c at unit,
 * awaiting `awaited` (0: nothing; then executing or suspended). */
static uint64_t coro_object(synth_image *im, const async_types *t, const synth_coro *c, bool executing,
                            uint64_t awaited)
{
    const fpi_layout *l = &im->l;
    const built_code *bc = code_of(im, c->frame.code);
    if (!bc)
        return 0;
    size_t frame_bytes = (size_t)l->fr_localsplus + 8u * SYNTH_NLOCALSPLUS + FRAME_SLACK;
    if ((size_t)l->fr_size > frame_bytes)
        frame_bytes = (size_t)l->fr_size;
    uint64_t o = synth_alloc(im, (size_t)l->gen_iframe + frame_bytes);
    if (!o)
        return 0;
    uint64_t fa = o + (uint64_t)l->gen_iframe;
    synth_put64(im, o + (uint64_t)l->ob_type, c->async_gen ? t->agen : t->coro);
    synth_put8(im, o + (uint64_t)l->gen_frame_state, (uint8_t)frame_state(l, executing, awaited != 0));
    synth_put64(im, fa + (uint64_t)l->fr_executable, bc->addr | (l->executable_tag_mask & 1u));
    /* the copy of the bytecode it last ran in (check(): one its code has) */
    synth_put64(im, fa + (uint64_t)l->fr_instr_ptr, bc->tlbc_copies[c->frame.tlbc_index] + (uint64_t)c->frame.unit * 2);
    if (l->fr_tlbc_index != FPI_OFF_NONE)
        synth_put32(im, fa + (uint64_t)l->fr_tlbc_index, (uint32_t)c->frame.tlbc_index);
    synth_put8(im, fa + (uint64_t)l->fr_owner, (uint8_t)l->owner_generator);
    uint64_t sp = synth_stopped_stack_pointer(l, fa);
    if (awaited) {
        /* SEND keeps the awaited object on the stack: on top (3.14), under
         * the value sent (3.15). */
        synth_put64(im, sp, awaited);
        sp += l->minor >= 15 ? 16u : 8u;
    }
    synth_put64(im, fa + (uint64_t)l->fr_stackpointer, sp);
    return o;
}

/* The coroutine chain of task d (innermost first in d->coro); the
 * outermost's object, or 0. */
static uint64_t coro_chain(synth_image *im, const async_types *t, const synth_task *d)
{
    uint64_t inner = 0;
    for (size_t k = 0; k < d->ncoro; k++) {
        const synth_coro *c = &d->coro[k];
        uint64_t awaited = inner;
        if (k == 0 && d->awaits >= 0)
            awaited = im->task_addrs[d->awaits] | (d->awaits_tagged ? (im->l.executable_tag_mask & 1u) : 0u);
        uint64_t o = coro_object(im, t, c, k == 0 && d->running, awaited);
        if (!o)
            return 0;
        if (c->through_asend && k + 1 < d->ncoro) {
            uint64_t a = synth_alloc(im, (size_t)im->l.ob_type + 16u); /* type, then the generator */
            if (!a)
                return 0;
            synth_put64(im, a + (uint64_t)im->l.ob_type, t->asend);
            synth_put64(im, a + (uint64_t)im->l.ob_type + 8u, o);
            o = a;
        }
        inner = o;
    }
    return inner;
}

static bool slot_taken(synth_image *im, uint64_t entry)
{
    uint64_t key;
    memcpy(&key, synth_bytes(im, entry, 8), 8);
    return key != 0;
}

/* awaited_by of d: one object, or a set of them. */
static uint64_t awaited_by(synth_image *im, const async_types *t, const synth_task *d, bool *is_set)
{
    const fpi_layout *l = &im->l;
    *is_set = d->by_set || d->nawaited_by > 1;
    if (!*is_set)
        return d->nawaited_by ? im->task_addrs[d->awaited_by[0]] : 0;
    size_t slots = SET_MIN_SLOTS;
    while (slots < 2 * (d->nawaited_by + d->dummies + 1))
        slots *= 2;
    int32_t hi = l->set_table > l->set_mask ? l->set_table : l->set_mask;
    if (l->set_used > hi)
        hi = l->set_used;
    uint64_t set = synth_alloc(im, (size_t)hi + 8u), table = synth_alloc(im, slots * SET_ENTRY);
    if (!set || !table)
        return 0;
    synth_put64(im, set + (uint64_t)l->ob_type, t->set);
    synth_put64(im, set + (uint64_t)l->set_table, table);
    synth_put64(im, set + (uint64_t)l->set_mask, slots - 1);
    synth_put64(im, set + (uint64_t)l->set_used, d->nawaited_by);
    size_t n = d->nawaited_by + d->dummies;
    for (size_t i = 0; i < n; i++) {
        bool dummy = i >= d->nawaited_by;
        uint64_t key = dummy ? t->dummy : im->task_addrs[d->awaited_by[i]];
        size_t k = (size_t)((key >> 4) + i * 7) & (slots - 1);
        while (slot_taken(im, table + k * SET_ENTRY))
            k = (k + 1) & (slots - 1); /* the next (the table has room) */
        synth_put64(im, table + k * SET_ENTRY, key);
        synth_put64(im, table + k * SET_ENTRY + 8, dummy ? UINT64_MAX : (key >> 4) | 1u);
    }
    return set;
}

/* Links the objects of list `which` (tasks in description order) into the
 * circular list whose head is at head. */
static void link_list(synth_image *im, const synth_task *tasks, size_t n, int which, uint64_t head)
{
    uint64_t prev = head;
    for (size_t i = 0; i < n; i++) {
        if (tasks[i].list != which)
            continue;
        uint64_t node = im->task_addrs[i] + TASK_AT(&im->l, TASK_NODE);
        synth_put64(im, prev, node);         /* prev's next */
        synth_put64(im, node + 8u, prev);    /* this one's prev */
        prev = node;
    }
    synth_put64(im, prev, head);
    synth_put64(im, head + 8u, prev);
}

static int check(synth_image *im, const synth_task *tasks, size_t n)
{
    const fpi_layout *l = &im->l;
    if (l->minor < 14 || l->gen_iframe == FPI_OFF_NONE || l->set_table == FPI_OFF_NONE ||
        l->long_digits == FPI_OFF_NONE || l->fr_stackpointer == FPI_OFF_NONE)
        return synth_fail(im, "asyncio task graphs: a 3.14+ layout only");
    bool running[MAX_RUNNING_THREADS] = {false};
    for (size_t i = 0; i < n; i++) {
        const synth_task *d = &tasks[i];
        if (d->list >= (int)im->nthreads || d->list < SYNTH_LIST_NONE || (!d->is_task && d->list != SYNTH_LIST_NONE))
            return synth_fail(im, "asyncio: a task on no thread's list, or a future on a list");
        if (d->ncoro > SYNTH_MAX_CORO)
            return synth_fail(im, "asyncio: too many coroutines");
        if (d->running && (d->list < 0 || d->list >= (int)MAX_RUNNING_THREADS || running[d->list] || d->ncoro != 1))
            return synth_fail(im, "asyncio: a running task is its thread's one, executing one coroutine");
        if (d->running)
            running[d->list] = true;
        if (d->awaits >= (int)n || d->nawaited_by > SYNTH_MAX_AWAITED_BY)
            return synth_fail(im, "asyncio: an index out of range");
        for (size_t k = 0; k < d->nawaited_by; k++) {
            if (d->awaited_by[k] < 0 || d->awaited_by[k] >= (int)n)
                return synth_fail(im, "asyncio: an awaiter out of range");
            for (size_t j = 0; j < k; j++)
                if (d->awaited_by[j] == d->awaited_by[k] && (d->by_set || d->nawaited_by > 1))
                    return synth_fail(im, "asyncio: a set holds an object once");
        }
        for (size_t k = 0; k < d->ncoro; k++) {
            const built_code *bc = code_of(im, d->coro[k].frame.code);
            int tlbc = d->coro[k].frame.tlbc_index;
            if (!bc)
                return synth_fail(im, "asyncio: a coroutine of a code object not built");
            if (tlbc < 0 || tlbc >= SYNTH_MAX_TLBC || !bc->tlbc_copies[tlbc])
                return synth_fail(im, "asyncio: a coroutine's bytecode copy that its code object lacks");
        }
    }
    return FP_OK;
}

int synth_asyncio(synth_image *im, const synth_task *tasks, size_t n)
{
    const fpi_layout *l = &im->l;
    int rc = check(im, tasks, n);
    if (rc)
        return rc;
    int64_t ihead = interp_head_offset(l);
    if (ihead < 0)
        return synth_fail(im, "asyncio: no room for the interpreter's task list");
    async_types t = {
        .task = synth_type_object(im, "_asyncio.Task"), .future = synth_type_object(im, "_asyncio.Future"),
        .coro = synth_type_object(im, "coroutine"), .agen = synth_type_object(im, "async_generator"),
        .asend = synth_type_object(im, "async_generator_asend"), .integer = synth_type_object(im, "int"),
        .set = synth_type_object(im, "set"), .dummy = synth_alloc(im, 16)};
    uint64_t table = synth_alloc(im, 8u * TABLE_WORDS);
    free(im->task_addrs);
    im->task_addrs = calloc(n ? n : 1, sizeof *im->task_addrs);
    if (!t.task || !t.future || !t.coro || !t.agen || !t.asend || !t.integer || !t.set || !t.dummy || !table ||
        !im->task_addrs)
        return synth_fail(im, "asyncio: out of memory");
    im->ntasks = n;
    uint64_t words[TABLE_WORDS] = {TASK_AT(l, TASK_SIZE), TASK_AT(l, TASK_NAME), TASK_AT(l, TASK_AWAITED_BY),
                                   TASK_AT(l, TASK_IS_TASK), TASK_AT(l, TASK_BY_SET), TASK_AT(l, TASK_CORO),
                                   TASK_AT(l, TASK_NODE), (uint64_t)l->interp_size, (uint64_t)ihead,
                                   (uint64_t)l->ts_size + TS_ASYNC_BYTES, (uint64_t)l->ts_size + TS_LOOP,
                                   (uint64_t)l->ts_size + TS_RUNNING, (uint64_t)l->ts_size + TS_HEAD};
    for (unsigned i = 0; i < TABLE_WORDS; i++)
        synth_put64(im, table + 8u * i, words[i]);
    /* Every object first: the coroutines and sets point at them. */
    for (size_t i = 0; i < n; i++)
        if (!(im->task_addrs[i] = synth_alloc(im, TASK_AT(l, TASK_SIZE))))
            return synth_fail(im, "asyncio: out of memory");
    for (size_t i = 0; i < n; i++) {
        const synth_task *d = &tasks[i];
        uint64_t a = im->task_addrs[i];
        synth_put64(im, a + (uint64_t)l->ob_type, d->is_task ? t.task : t.future);
        synth_put32(im, a + TASK_AT(l, TASK_STATE), (uint32_t)d->state);
        synth_put8(im, a + TASK_AT(l, TASK_IS_TASK), d->is_task);
        bool is_set;
        uint64_t by = awaited_by(im, &t, d, &is_set);
        if ((d->nawaited_by || is_set) && !by)
            return synth_fail(im, "asyncio: out of memory");
        synth_put64(im, a + TASK_AT(l, TASK_AWAITED_BY), by);
        synth_put8(im, a + TASK_AT(l, TASK_BY_SET), is_set);
        if (!d->is_task)
            continue;
        uint64_t name = d->no_name ? 0 : d->name ? synth_str_object(im, d->name, d->noncompact_name)
                                                 : int_object(im, &t, d->number);
        uint64_t coro = d->ncoro ? coro_chain(im, &t, d) : 0;
        if ((!d->no_name && !name) || (d->ncoro && !coro))
            return synth_fail(im, "asyncio: out of memory, or a name that is no UTF-8");
        synth_put64(im, a + TASK_AT(l, TASK_NAME), name);
        synth_put64(im, a + TASK_AT(l, TASK_CORO), coro);
        if (d->running)
            synth_put64(im, im->ts_addrs[d->list] + (uint64_t)l->ts_size + TS_RUNNING, a);
    }
    for (size_t ti = 0; ti < im->nthreads; ti++)
        link_list(im, tasks, n, (int)ti, im->ts_addrs[ti] + (uint64_t)l->ts_size + TS_HEAD);
    link_list(im, tasks, n, SYNTH_LIST_INTERP, im->interp + (uint64_t)ihead);
    im->asyncio_table = table;
    return FP_OK;
}

uint64_t synth_task_addr(const synth_image *im, size_t i)
{
    return im && i < im->ntasks ? im->task_addrs[i] : 0;
}
