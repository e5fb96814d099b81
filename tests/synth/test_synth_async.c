/* test_synth_async.c — asyncio task graphs in synthetic images of every
 * 3.14+ layout, GIL and free-threaded (whose objects have twice the
 * header): the graph read is exactly the one laid out, alone and with the
 * threads' stacks. */
#include "synth_fixture.h"
#include "synth_tests.h"
#include "frameproof/async.h"

static const char *const ASYNC_LAYOUTS[] = {"3.14", "3.14t", "3.15", "3.15t"};

/* b->s anew, attached to b's image with max_depth (0: the default). */
static void attach(built *b, uint32_t max_depth)
{
    fp_options o;
    fp_options_init(&o);
    if (max_depth)
        o.max_depth = max_depth;
    fp_target_desc td;
    synth_target(b->img, &td);
    fp_session_free(b->s);
    assert_int_equal(fp_session_new(&o, &b->s), FP_OK);
    assert_int_equal(fp_session_attach_reader(b->s, &b->rd, &td), FP_OK);
}

/* The standard scene's threads, and on them: "main" on thread 0's list,
 * suspended in two coroutines whose innermost awaits a future through a
 * tagged stack reference; an unnamed task (number 7) on thread 1's list,
 * awaited by that future; the future on no list.  On free-threaded 3.14+
 * the innermost coroutines were last run in thread-local copies of their
 * bytecode (copies 3 and 1), the outer one in the code object's own. */
static void lay_out(const char *id, scene *sc, built *b, synth_task *t)
{
    static uint8_t table[TABLE_BYTES];
    char err[512] = ""; /* the builder's error buffer: it must outlive synth_asyncio */
    describe(id, sc); /* its threads' frames build every code object the coroutines run */
    load_table(id, table);
    if (synth_build(id, table, TABLE_BYTES, &sc->d, &b->img, err, sizeof err))
        fail_msg("%s: %s", id, err);
    memset(t, 0, 3 * sizeof *t);
    t[0] = (synth_task){.is_task = true, .name = "main", .list = 0, .state = FP_FUTURE_PENDING, .ncoro = 2,
                        .awaits = 2, .awaits_tagged = true};
    /* the code objects as the scene's frames name them (each file has its
     * own copy of the header's) */
    const synth_code *a = sc->t1[0].code, *latin1 = sc->t1[1].code, *ucs2 = sc->t1[3].code;
    t[0].coro[0].frame = (synth_frame){latin1, loc_start(latin1, 1), true, false, 0};
    t[0].coro[1].frame = (synth_frame){a, loc_start(a, 1) + 1, true, false, 0};
    t[1] = (synth_task){.is_task = true, .number = 7, .list = 1, .state = FP_FUTURE_PENDING, .ncoro = 1,
                        .awaits = -1, .awaited_by = {2}, .nawaited_by = 1};
    t[1].coro[0].frame = (synth_frame){ucs2, 0, true, false, 0};
    if (has_tlbc(id)) { /* coroutines last run by threads with copies of their own */
        t[0].coro[0].frame.tlbc_index = 3;
        t[1].coro[0].frame.tlbc_index = 1;
    }
    t[2] = (synth_task){.is_task = false, .list = SYNTH_LIST_NONE, .state = FP_FUTURE_PENDING, .awaits = -1};
    if (synth_asyncio(b->img, t, 3) != FP_OK)
        fail_msg("%s: the builder refused the graph: %s", id, err);
    assert_int_equal(fp_sample_new(&b->sm), FP_OK);
    synth_reader(b->img, &b->rd);
    b->s = NULL;
    attach(b, 0);
}

static void frame_is(const char *id, const fp_frame *f, const synth_code *code, int loc)
{
    if (!f || strcmp(f->function, code->qualname) != 0 || f->line != code->locs[loc].line ||
        f->end_line != code->locs[loc].end_line || f->column != code->locs[loc].column ||
        f->end_column != code->locs[loc].end_column || f->kind != FP_FRAME_GENERATOR)
        fail_msg("%s: frame %s line %d, expected %s line %d", id, f ? f->function : "(none)", f ? f->line : 0,
                 code->qualname, code->locs[loc].line);
}

static void graph_is(const char *id, const fp_async_graph *g, const synth_image *img)
{
    assert_true(fp_async_graph_get_asyncio_loaded(g));
    assert_int_equal(fp_async_graph_get_node_count(g), 3);
    const fp_async_node *main = fp_async_graph_get_node(g, 0), *seven = fp_async_graph_get_node(g, 1),
                        *fut = fp_async_graph_get_node(g, 2);
    assert_int_equal(main->addr, synth_task_addr(img, 0));
    assert_string_equal(main->name, "main");
    assert_true(main->is_task && !main->running && main->state == FP_FUTURE_PENDING);
    assert_int_equal(main->thread_native_id, 4242);
    assert_int_equal(main->interp_id, 0);
    assert_int_equal(main->frame_count, 2);
    frame_is(id, fp_async_graph_get_frame(g, main->first_frame), &CODE_LATIN1, 1);
    frame_is(id, fp_async_graph_get_frame(g, main->first_frame + 1), &CODE_A, 1);
    assert_int_equal(main->awaiter_count, 0);
    assert_int_equal(seven->addr, synth_task_addr(img, 1));
    assert_string_equal(seven->name, "Task-7");
    assert_int_equal(seven->thread_native_id, 4243);
    assert_int_equal(seven->frame_count, 1);
    frame_is(id, fp_async_graph_get_frame(g, seven->first_frame), &CODE_UCS2, 0);
    assert_int_equal(seven->awaiter_count, 1);
    assert_int_equal(fp_async_graph_get_awaiter(g, seven->first_awaiter), 2);
    assert_int_equal(fut->addr, synth_task_addr(img, 2));
    assert_true(!fut->is_task && fut->name == NULL && fut->interp_id == -1 && fut->thread_native_id == 0);
    assert_int_equal(fut->frame_count, 0);
}

/* Runs body once per 3.14+ layout on a freshly laid out graph (unbuilt
 * after). */
static void each_async_layout(void (*body)(const char *id, built *b))
{
    for (size_t i = 0; i < sizeof ASYNC_LAYOUTS / sizeof *ASYNC_LAYOUTS; i++) {
        scene sc;
        built b;
        synth_task t[3];
        lay_out(ASYNC_LAYOUTS[i], &sc, &b, t);
        body(ASYNC_LAYOUTS[i], &b);
        unbuild(&b);
    }
}

static void read_whole(const char *id, built *b)
{
    fp_async_graph *g = NULL;
    if (fp_async_graph_read(b->s, &g) != FP_OK)
        fail_msg("%s: %s", id, fp_session_get_errmsg(b->s));
    graph_is(id, g, b->img);
    fp_async_graph_free(g);
    g = NULL;
    if (fp_async_graph_read_sample(b->s, b->sm, &g) != FP_OK)
        fail_msg("%s: with the stacks: %s", id, fp_session_get_errmsg(b->s));
    graph_is(id, g, b->img);
    check_thread(id, b->sm, 0, EXPECT_T1, 4);
    check_thread(id, b->sm, 1, EXPECT_T2, 3);
    /* a running task's thread is found by its interpreter and kernel id */
    for (size_t k = 0; k < 2; k++) {
        const fp_thread *th = fp_sample_get_thread(b->sm, k);
        assert_ptr_equal(fp_sample_get_thread_by_native_id(b->sm, th->interp_id, th->native_id), th);
        assert_null(fp_sample_get_thread_by_native_id(b->sm, th->interp_id + 1, th->native_id));
    }
    assert_null(fp_sample_get_thread_by_native_id(b->sm, 0, 0));
    assert_null(fp_sample_get_thread_by_native_id(NULL, 0, 0));
    fp_async_graph_free(g);
}

void test_async_graph_layouts(void **state)
{
    (void)state;
    each_async_layout(read_whole);
}

/* Threads deeper than max_depth fail their own walks, not the graph:
 * each is in the sample with FP_E_LIMIT and no frames, and the session's
 * message says why; a coroutine chain over the bound still fails it. */
static void read_too_deep(const char *id, built *b)
{
    attach(b, 3); /* each thread walks 4 frames; no task has more than 2 coroutines */
    fp_async_graph *g = NULL;
    if (fp_async_graph_read_sample(b->s, b->sm, &g) != FP_OK)
        fail_msg("%s: %s", id, fp_session_get_errmsg(b->s));
    graph_is(id, g, b->img);
    assert_int_equal(fp_sample_get_thread_count(b->sm), 2);
    for (size_t k = 0; k < 2; k++) {
        const fp_thread *th = fp_sample_get_thread(b->sm, k);
        assert_int_equal(th->error, FP_E_LIMIT);
        assert_int_equal(th->frame_count, 0);
    }
    if (!strstr(fp_session_get_errmsg(b->s), "deeper than 3"))
        fail_msg("%s: message '%s'", id, fp_session_get_errmsg(b->s));
    fp_async_graph_free(g);
    g = NULL;
    attach(b, 1);
    assert_int_equal(fp_async_graph_read_sample(b->s, b->sm, &g), FP_E_LIMIT);
    assert_null(g);
}

void test_async_graph_thread_too_deep(void **state)
{
    (void)state;
    each_async_layout(read_too_deep);
}

/* A coroutine chain exactly max_depth deep is read whole; one deeper is
 * FP_E_LIMIT (the bound counts coroutines, not the object that ends the
 * chain). */
void test_async_chain_at_max_depth(void **state)
{
    (void)state;
    scene sc;
    built b;
    synth_task t[3];
    lay_out("3.15", &sc, &b, t);
    for (uint32_t depth = 1; depth <= 2; depth++) {
        attach(&b, depth);
        fp_async_graph *g = NULL;
        int rc = fp_async_graph_read(b.s, &g);
        if (depth == 2) {
            if (rc != FP_OK)
                fail_msg("two coroutines at max_depth 2: %s", fp_session_get_errmsg(b.s));
            graph_is("3.15", g, b.img);
        } else {
            assert_int_equal(rc, FP_E_LIMIT);
        }
        fp_async_graph_free(g);
    }
    unbuild(&b);
}
