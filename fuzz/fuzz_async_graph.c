/* fuzz_async_graph.c — asyncio task graphs read from mutated memory images.
 * Seeds are the images `snapshot --async` captured of a parked asyncio
 * program on every interpreter (corpora/images/<id>/async_tasks.fpimg: on
 * 3.14+ read through asyncio's tables, on 3.11-3.13 through its registries);
 * the input is parsed as an image, a session is attached through the image
 * reader and the graph is read twice (cold, then with the session's caches
 * warm).
 *
 * Checked: no crash, hang or over-read (ASan/UBSan); every call returns a
 * documented code and a failing one leaves a message; a graph returned is
 * well formed (each node's frames and awaiters tile the graph's arrays in
 * node order, every awaiter a node, no address twice, a task on a list or,
 * found only as an awaiter, on none, and a future bare, at most one running task per thread, known states and frame
 * kinds, every string live); and the second read gives the same graph or
 * the same error as the first (an image cannot change, so anything else is
 * state the session kept from the first read); a third read with the
 * threads' stacks gives that graph or an error, and its running tasks'
 * frames on their threads' stacks end at their coroutines.  Limits are kept small so a
 * run stays fast. */
#include <stdbool.h>
#include <string.h>

#include "fuzz_common.h"
#include "fuzz_image_session.h"
#include "frameproof/async.h"
#include "frameproof/frameproof.h"
#include "frameproof/image.h"

#define FUZZ_MAX_DEPTH 64u
#define FUZZ_MAX_THREADS 16u
#define FUZZ_MAX_INTERPRETERS 4u
#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * FNV_PRIME;
    return h;
}

static uint64_t mix_u64(uint64_t h, uint64_t v)
{
    return mix(h, &v, sizeof v);
}

/* Strings end with their NUL, so "ab","c" and "a","bc" hash apart. */
static uint64_t mix_str(uint64_t h, const char *s)
{
    return s ? mix(h, s, strlen(s) + 1) : mix_u64(h, 0x5eedull);
}

static uint64_t check_frame(uint64_t h, const fp_frame *fr, size_t i)
{
    FUZZ_CHECK(fr != NULL, "frame %zu missing", i);
    FUZZ_CHECK(fr->function && fr->name && fr->file, "frame %zu has a NULL string", i);
    FUZZ_CHECK(fr->kind == FP_FRAME_GENERATOR, "frame %zu: kind %d, not a coroutine's", i, fr->kind);
    FUZZ_CHECK(fr->instr_offset >= 0, "frame %zu: instruction offset %d", i, fr->instr_offset);
    h = mix_str(mix_str(mix_str(h, fr->function), fr->name), fr->file);
    int32_t pos[5] = {fr->line, fr->end_line, fr->column, fr->end_column, fr->instr_offset};
    h = mix(h, pos, sizeof pos);
    return mix_u64(mix_u64(h, fr->code_addr), fr->frame_addr);
}

/* Checks g (read through asyncio's table when table: 3.14+, else through
 * its module's registries) and returns a digest of everything it holds. */
static uint64_t check_graph(const fp_async_graph *g, bool table)
{
    size_t n = fp_async_graph_get_node_count(g), nf = fp_async_graph_get_frame_count(g);
    size_t na = fp_async_graph_get_awaiter_count(g);
    FUZZ_CHECK(!table || fp_async_graph_get_asyncio_loaded(g),
               "a graph read through a table address says asyncio is not loaded");
    FUZZ_CHECK(fp_async_graph_get_asyncio_loaded(g) || n == 0, "asyncio not loaded, and %zu nodes", n);
    FUZZ_CHECK(fp_async_graph_get_stopped_ns(g) == 0, "an image read claims to have stopped a target");
    FUZZ_CHECK(fp_async_graph_get_node(g, n) == NULL && fp_async_graph_get_frame(g, nf) == NULL &&
                   fp_async_graph_get_awaiter(g, na) == SIZE_MAX,
               "an index past the end answered");
    uint64_t h = mix_u64(FNV_OFFSET, n);
    size_t next_frame = 0, next_awaiter = 0;
    for (size_t i = 0; i < n; i++) {
        const fp_async_node *nd = fp_async_graph_get_node(g, i);
        FUZZ_CHECK(nd != NULL, "node %zu missing", i);
        FUZZ_CHECK(nd->first_frame == next_frame && nd->frame_count <= nf - next_frame,
                   "node %zu: frames [%zu,+%zu), expected from %zu of %zu", i, nd->first_frame, nd->frame_count,
                   next_frame, nf);
        FUZZ_CHECK(nd->first_awaiter == next_awaiter && nd->awaiter_count <= na - next_awaiter,
                   "node %zu: awaiters [%zu,+%zu), expected from %zu of %zu", i, nd->first_awaiter,
                   nd->awaiter_count, next_awaiter, na);
        next_frame += nd->frame_count;
        next_awaiter += nd->awaiter_count;
        FUZZ_CHECK(nd->frame_count <= FUZZ_MAX_DEPTH, "node %zu: %zu coroutines", i, nd->frame_count);
        FUZZ_CHECK(nd->state >= FP_FUTURE_PENDING && nd->state <= FP_FUTURE_FINISHED, "node %zu: state %d", i,
                   nd->state);
        if (nd->is_task) {
            /* a task on no list (found only as an awaiter) has neither thread nor interpreter */
            FUZZ_CHECK(nd->interp_id >= 0 || (nd->interp_id == -1 && nd->thread_native_id == 0 && !nd->running),
                       "task %zu: interpreter %lld, thread %llu", i, (long long)nd->interp_id,
                       (unsigned long long)nd->thread_native_id);
            volatile size_t sink = nd->name ? strlen(nd->name) : 0; /* ASan: the name is live */
            (void)sink;
        } else {
            FUZZ_CHECK(!nd->name && !nd->running && nd->frame_count == 0 && nd->thread_native_id == 0 &&
                           nd->interp_id == -1,
                       "future %zu carries a task's fields", i);
        }
        FUZZ_CHECK(!nd->running || nd->thread_native_id != 0, "task %zu runs on no thread", i);
        for (size_t k = 0; k < i; k++) {
            const fp_async_node *o = fp_async_graph_get_node(g, k);
            FUZZ_CHECK(o->addr != nd->addr, "nodes %zu and %zu are both 0x%llx", k, i, (unsigned long long)nd->addr);
            FUZZ_CHECK(!(o->running && nd->running && o->thread_native_id == nd->thread_native_id),
                       "tasks %zu and %zu both running on thread %llu", k, i,
                       (unsigned long long)nd->thread_native_id);
        }
        h = mix_str(mix_u64(h, nd->addr), nd->name);
        uint64_t fields[6] = {nd->is_task, (uint64_t)nd->state, nd->thread_native_id, (uint64_t)nd->interp_id,
                              nd->running, nd->frame_count};
        h = mix(h, fields, sizeof fields);
        for (size_t f = nd->first_frame; f < nd->first_frame + nd->frame_count; f++)
            h = check_frame(h, fp_async_graph_get_frame(g, f), f);
        h = mix_u64(h, nd->awaiter_count);
        for (size_t k = 0; k < nd->awaiter_count; k++) {
            size_t a = fp_async_graph_get_awaiter(g, nd->first_awaiter + k);
            FUZZ_CHECK(a < n, "node %zu: awaiter %zu is node %zu of %zu", i, k, a, n);
            h = mix_u64(h, a);
        }
    }
    FUZZ_CHECK(next_frame == nf && next_awaiter == na, "nodes hold %zu of %zu frames and %zu of %zu awaiters",
               next_frame, nf, next_awaiter, na);
    return h;
}

/* Whether the image's graph is read through asyncio's table (3.14+). */
static bool through_table(fp_session *s)
{
    uint64_t at = 0;
    return fp_session_get_asyncio_table(s, &at) == FP_OK && at != 0;
}

/* One read: its code, and the digest of its graph or of its message. */
static int read_once(fp_session *s, uint64_t *digest)
{
    fp_async_graph *g = NULL;
    const bool table = through_table(s);
    int rc = fp_async_graph_read(s, &g);
    FUZZ_CHECK(fuzz_known_code(rc) && rc != FP_E_PROCESS_GONE && rc != FP_E_PERMISSION && rc != FP_E_IO,
               "graph read returned %d", rc);
    FUZZ_CHECK_MESSAGE(rc, fp_session_get_errmsg(s));
    FUZZ_CHECK((rc == FP_OK) == (g != NULL), "graph read returned %d and %s graph", rc, g ? "a" : "no");
    *digest = g ? check_graph(g, table) : mix_str(FNV_OFFSET, fp_session_get_errmsg(s));
    fp_async_graph_free(g);
    return rc;
}

/* A third read, with the threads' stacks (fp_async_graph_read_sample): a
 * graph it gives is the one the graph-only reads gave (rc1, digest1: an
 * image does not change), and a running task's frames on its thread's
 * stack are a run of that thread's frames from its top, the last one its
 * coroutine's. */
static void read_with_stacks(fp_session *s, int rc1, uint64_t digest1)
{
    fp_sample *sm = NULL;
    fp_async_graph *g = NULL;
    if (fp_sample_new(&sm))
        return;
    const bool table = through_table(s);
    int rc = fp_async_graph_read_sample(s, sm, &g);
    FUZZ_CHECK(fuzz_known_code(rc) && rc != FP_E_PROCESS_GONE && rc != FP_E_PERMISSION && rc != FP_E_IO,
               "graph read with the stacks returned %d", rc);
    FUZZ_CHECK_MESSAGE(rc, fp_session_get_errmsg(s));
    FUZZ_CHECK((rc == FP_OK) == (g != NULL), "graph read with the stacks returned %d and %s graph", rc, g ? "a" : "no");
    if (!g)
        goto out;
    FUZZ_CHECK(rc1 == FP_OK && check_graph(g, table) == digest1,
               "the graph read with the stacks differs from the graph alone (which returned %d)", rc1);
    size_t n = fp_async_graph_get_node_count(g), first = 1;
    FUZZ_CHECK(fp_async_graph_get_running_frames(g, sm, n, &first) == 0 && first == 0, "a node past the end runs");
    for (size_t i = 0; i < n; i++) {
        const fp_async_node *nd = fp_async_graph_get_node(g, i);
        size_t k = fp_async_graph_get_running_frames(g, sm, i, &first);
        if (!k)
            continue;
        FUZZ_CHECK(nd->running && nd->frame_count, "node %zu is not running, yet runs %zu frames", i, k);
        const fp_thread *th = NULL;
        for (size_t t = 0; t < fp_sample_get_thread_count(sm) && !th; t++)
            if (fp_sample_get_thread(sm, t)->first_frame == first && fp_sample_get_thread(sm, t)->frame_count)
                th = fp_sample_get_thread(sm, t);
        FUZZ_CHECK(th && th->native_id == nd->thread_native_id && k <= th->frame_count,
                   "node %zu: %zu frames from sample frame %zu, not its thread's", i, k, first);
        FUZZ_CHECK(fp_sample_get_frame(sm, first + k - 1)->frame_addr ==
                       fp_async_graph_get_frame(g, nd->first_frame + nd->frame_count - 1)->frame_addr,
                   "node %zu: its running frames end elsewhere than its coroutine", i);
    }
out:
    fp_async_graph_free(g);
    fp_sample_free(sm);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fp_image *img = NULL;
    fp_session *s = NULL;
    fp_reader rd;
    if (!fuzz_image_session(data, size, FUZZ_MAX_DEPTH, FUZZ_MAX_THREADS, FUZZ_MAX_INTERPRETERS, &rd, &img, &s))
        goto out;
    uint64_t first, second;
    int rc1 = read_once(s, &first);
    int rc2 = read_once(s, &second);
    FUZZ_CHECK(rc1 == rc2 && first == second,
               "a second read of the same image differs: %d then %d (%s), digests %llx and %llx", rc1, rc2,
               fp_session_get_errmsg(s), (unsigned long long)first, (unsigned long long)second);
    read_with_stacks(s, rc1, first);
out:
    fp_session_free(s);
    fp_image_free(img);
    return 0;
}
