/* fuzz_synth_async.c — structure-aware asyncio task graphs: the input is
 * decoded into a description (fuzz_synth_unwind's threads and code objects,
 * then tasks and futures: which list holds each, its name — str of every
 * kind, an unnamed task's number, none — its state, a chain of coroutines
 * and async generators, some reached through an `async_generator_asend`,
 * what the innermost awaits, the running task of a thread, awaited_by as
 * one object or a set with deleted entries), the synthetic image builder
 * lays it out with a 3.14 or 3.15 layout, GIL or free-threaded (frames and
 * coroutines there in thread-local copies of the bytecode), and a debug
 * offsets table of its own, and the graph read from the image must be
 * exactly the description:
 * the listed tasks in list order (threads in order, then the
 * interpreter's), then every object reachable through awaited_by and
 * nothing else, each with its name, state, list, running flag, coroutine
 * frames (name, position, instruction offset) and awaiters — cold, warm,
 * and read with the threads' stacks, which must be the described ones.
 *
 * Every input decodes to a description the builder can lay out (bytes
 * past the end read as zero), so the oracle is exact equality.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "frameproof/async.h"
#include "debug_offsets.h"
#include "fuzz_common.h"
#include "synth_input.h"

#define FZ_MAX_TASKS 12

typedef struct fz_async {
    fz_description d;
    synth_task tasks[FZ_MAX_TASKS];
    size_t ntasks;
} fz_async;

static void decode_task(fz_cursor *c, fz_async *a, size_t i, bool *running_taken, bool tlbc)
{
    const fz_description *d = &a->d;
    synth_task *t = &a->tasks[i];
    memset(t, 0, sizeof *t);
    uint8_t shape = fz_next_byte(c);
    t->is_task = (shape & 3) != 0;
    size_t lists = d->desc.nthreads + 2;
    size_t sel = fz_next_byte(c) % lists;
    t->list = !t->is_task ? SYNTH_LIST_NONE : sel < d->desc.nthreads ? (int)sel
                                            : sel == d->desc.nthreads ? SYNTH_LIST_INTERP : SYNTH_LIST_NONE;
    switch (fz_next_byte(c) % 4) {
    case 0: t->name = fz_next_name(c); break;
    case 1: t->name = fz_next_name(c); t->noncompact_name = true; break;
    case 2:
        for (int k = 0; k < 4; k++)
            t->number = (t->number << 16) | fz_next_u16(c);
        t->number >>= fz_next_byte(c) % 64; /* small numbers as often as three-digit ones */
        break;
    default: t->no_name = true; break;
    }
    t->state = fz_next_byte(c) % 3;
    t->ncoro = t->is_task ? fz_next_byte(c) % (SYNTH_MAX_CORO + 1) : 0;
    for (size_t k = 0; k < t->ncoro; k++) {
        uint8_t b = fz_next_byte(c);
        size_t ci = b % d->ncodes;
        t->coro[k].frame.code = &d->codes[ci];
        t->coro[k].frame.unit = fz_next_u16(c) % d->code_units[ci];
        t->coro[k].frame.generator = true;
        t->coro[k].async_gen = (b >> 4) & 1;
        t->coro[k].through_asend = (b >> 5) & 1;
        t->coro[k].frame.tlbc_index = tlbc ? b >> 6 : 0; /* the copy of the thread that last ran it */
    }
    if (t->list >= 0 && t->ncoro && (shape & 4) && !running_taken[t->list]) {
        running_taken[t->list] = true; /* a thread runs one task, its coroutine executing */
        t->running = true;
        t->ncoro = 1;
    }
    t->awaits = t->running ? -1 : (int)(fz_next_byte(c) % (a->ntasks + 1)) - 1;
    t->awaits_tagged = (shape >> 3) & 1;
    t->by_set = (shape >> 4) & 1;
    t->dummies = (shape >> 5) % 3;
    size_t want = fz_next_byte(c) % (SYNTH_MAX_AWAITED_BY + 1);
    for (size_t k = 0; k < want; k++) {
        int j = (int)(fz_next_byte(c) % a->ntasks);
        bool seen = false;
        for (size_t m = 0; m < t->nawaited_by; m++)
            seen |= t->awaited_by[m] == j;
        if (!seen) /* a set holds an object once */
            t->awaited_by[t->nawaited_by++] = j;
    }
}

static void decode(fz_cursor *c, const char *id, fz_async *a)
{
    /* free-threaded 3.14+: frames and coroutines in thread-local copies of the bytecode */
    bool tlbc = strcmp(id, "3.14t") == 0 || strcmp(id, "3.15t") == 0;
    fz_decode_description(c, id, tlbc, &a->d);
    a->d.desc.codes = a->d.codes; /* every code object built: coroutines name them too */
    a->d.desc.ncodes = a->d.ncodes;
    a->ntasks = 1 + fz_next_byte(c) % FZ_MAX_TASKS;
    bool running_taken[FZ_MAX_THREADS] = {false};
    for (size_t i = 0; i < a->ntasks; i++)
        decode_task(c, a, i, running_taken, tlbc);
}

static size_t desc_of(const synth_image *img, const fz_async *a, uint64_t addr)
{
    for (size_t i = 0; i < a->ntasks; i++)
        if (synth_task_addr(img, i) == addr)
            return i;
    return SIZE_MAX;
}

/* Which described objects the graph must hold: the listed tasks, then
 * what awaited_by reaches from them, in turn. */
static size_t reachable(const fz_async *a, bool *in, size_t *listed, size_t *nlisted)
{
    size_t n = 0;
    *nlisted = 0;
    for (int list = 0; list <= (int)a->d.desc.nthreads; list++) {
        int want = list < (int)a->d.desc.nthreads ? list : SYNTH_LIST_INTERP;
        for (size_t i = 0; i < a->ntasks; i++)
            if (a->tasks[i].list == want) {
                in[i] = true;
                listed[(*nlisted)++] = i;
                n++;
            }
    }
    for (bool grew = true; grew;) {
        grew = false;
        for (size_t i = 0; i < a->ntasks; i++) {
            if (!in[i])
                continue;
            for (size_t k = 0; k < a->tasks[i].nawaited_by; k++)
                if (!in[a->tasks[i].awaited_by[k]]) {
                    in[a->tasks[i].awaited_by[k]] = true;
                    n++;
                    grew = true;
                }
        }
    }
    return n;
}

static void check_node(const char *id, const fz_async *a, const synth_image *img, const fp_async_graph *g,
                       size_t ni, size_t di)
{
    const fp_async_node *n = fp_async_graph_get_node(g, ni);
    const synth_task *t = &a->tasks[di];
    FUZZ_CHECK(n->is_task == t->is_task && n->state == t->state, "%s: node %zu (object %zu): is_task %d state %d", id,
               ni, di, n->is_task, n->state);
    uint64_t native = t->list >= 0 ? a->d.threads[t->list].native_id : 0;
    int64_t interp = t->list == SYNTH_LIST_NONE ? -1 : 0;
    FUZZ_CHECK(n->thread_native_id == native && n->interp_id == interp && n->running == t->running,
               "%s: node %zu (object %zu): thread %llu interp %lld running %d", id, ni, di,
               (unsigned long long)n->thread_native_id, (long long)n->interp_id, n->running);
    char want[32];
    const char *name = t->name;
    if (t->is_task && !t->name && !t->no_name) {
        snprintf(want, sizeof want, "Task-%llu", (unsigned long long)t->number);
        name = want;
    }
    if (!t->is_task || t->no_name)
        FUZZ_CHECK(n->name == NULL, "%s: node %zu: name %s, described none", id, ni, n->name);
    else
        FUZZ_CHECK(n->name && strcmp(n->name, name) == 0, "%s: node %zu: name %s, described %s", id, ni,
                   n->name ? n->name : "(none)", name);
    FUZZ_CHECK(n->frame_count == t->ncoro, "%s: node %zu: %zu frames, described %zu", id, ni, n->frame_count,
               t->ncoro);
    for (size_t k = 0; k < t->ncoro; k++) {
        char msg[512];
        FUZZ_CHECK(fz_frame_equals(fp_async_graph_get_frame(g, n->first_frame + k), &t->coro[k].frame, k, msg,
                                   sizeof msg),
                   "%s: node %zu: %s", id, ni, msg);
    }
    FUZZ_CHECK(n->awaiter_count == t->nawaited_by, "%s: node %zu: %zu awaiters, described %zu", id, ni,
               n->awaiter_count, t->nawaited_by);
    for (size_t k = 0; k < n->awaiter_count; k++) {
        const fp_async_node *by = fp_async_graph_get_node(g, fp_async_graph_get_awaiter(g, n->first_awaiter + k));
        FUZZ_CHECK(by != NULL, "%s: node %zu: awaiter %zu is no node", id, ni, k);
        bool described = false;
        for (size_t m = 0; m < t->nawaited_by; m++)
            described |= synth_task_addr(img, (size_t)t->awaited_by[m]) == by->addr;
        FUZZ_CHECK(described, "%s: node %zu: awaited by 0x%llx, not described", id, ni, (unsigned long long)by->addr);
    }
}

static void check_graph(const char *id, const fz_async *a, const synth_image *img, const fp_async_graph *g)
{
    bool in[FZ_MAX_TASKS] = {false}, seen[FZ_MAX_TASKS] = {false};
    size_t listed[FZ_MAX_TASKS], nlisted;
    size_t want = reachable(a, in, listed, &nlisted);
    FUZZ_CHECK(fp_async_graph_get_asyncio_loaded(g), "%s: asyncio not found", id);
    FUZZ_CHECK(fp_async_graph_get_node_count(g) == want, "%s: %zu nodes, %zu reachable described", id,
               fp_async_graph_get_node_count(g), want);
    for (size_t ni = 0; ni < want; ni++) {
        size_t di = desc_of(img, a, fp_async_graph_get_node(g, ni)->addr);
        FUZZ_CHECK(di != SIZE_MAX && in[di] && !seen[di], "%s: node %zu is no described object, or twice", id, ni);
        FUZZ_CHECK(ni >= nlisted || di == listed[ni], "%s: node %zu is object %zu, listed %zu there", id, ni, di,
                   ni < nlisted ? listed[ni] : 0);
        seen[di] = true;
        check_node(id, a, img, g, ni, di);
    }
}

/* The layouts the first byte chooses among (its low bit: 3.14 or 3.15; the
 * next: free-threaded). */
static const char *const LAYOUTS[] = {"3.14", "3.15", "3.14t", "3.15t"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_cursor c = {data, size, 0};
    const char *id = LAYOUTS[fz_next_byte(&c) % (sizeof LAYOUTS / sizeof *LAYOUTS)];
    uint8_t *table = NULL;
    fz_async *a = calloc(1, sizeof *a);
    synth_image *img = NULL;
    fp_session *s = NULL;
    fp_sample *sm = NULL;
    fp_reader rd;
    fp_async_graph *g = NULL;
    if (!a)
        return 0;
    fpi_layout probe;
    if (!fz_layout_table(id, &table, &probe))
        goto out;
    decode(&c, id, a);
    char err[512];
    if (synth_build(id, table, FPI_DEBUG_OFFSETS_READ, &a->d.desc, &img, err, sizeof err) != 0)
        goto out; /* threads the builder cannot lay out (fuzz_synth_unwind's concern) */
    int rc = synth_asyncio(img, a->tasks, a->ntasks);
    FUZZ_CHECK(rc == FP_OK, "%s: a decoded graph the builder refused: %s", id, err);
    rc = fz_attach(img, &rd, &s, &sm);
    if (rc == FP_E_NOMEM)
        goto out;
    FUZZ_CHECK(rc == FP_OK, "%s: attach failed: %s", id, fp_session_get_errmsg(s));
    for (int pass = 0; pass < 3; pass++) {
        /* cold, warm, then with the threads' stacks */
        rc = pass < 2 ? fp_async_graph_read(s, &g) : fp_async_graph_read_sample(s, sm, &g);
        FUZZ_CHECK(rc == FP_OK, "%s: read %d failed (%d): %s", id, pass, rc, fp_session_get_errmsg(s));
        check_graph(id, a, img, g);
        if (pass == 2)
            for (size_t t = 0; t < a->d.desc.nthreads; t++) {
                char msg[512];
                const fp_thread *th = fp_sample_get_thread(sm, t);
                FUZZ_CHECK(th && fz_thread_equals(sm, th, a->d.threads[t].frames, a->d.threads[t].nframes, msg,
                                                  sizeof msg),
                           "%s: thread %zu beside the graph: %s", id, t, th ? msg : "missing");
            }
        fp_async_graph_free(g);
        g = NULL;
    }
out:
    fp_async_graph_free(g);
    fz_release(sm, s, img, table);
    free(a);
    return 0;
}
