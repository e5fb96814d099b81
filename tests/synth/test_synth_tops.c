/* test_synth_tops.c — synthetic images: top frames in transit: a popped top
 * seen stopped, a stopped top from the frame cache, a waiting generator
 * top, a resuming caller from the cache. */
#include "synth_fixture.h"
#include "synth_tests.h"

static const synth_code CODE_WAITING = {
    "waiting", "waiting", "/app/w.py", 20, {{2, 21, 21, 0, 5}, {2, 22, 22, 4, 9}}, 2, false, 0};

/* A thread of the standard scene whose top frame is a generator's of
 * CODE_WAITING at unit 2, resumed from C (an entry frame below it), the
 * rest of the first thread's frames under it; `alone`: that frame is the
 * thread's only one. */
static void waiting_scene(const char *id, bool alone, scene *sc, built *b)
{
    describe(id, sc);
    sc->t1[0] = (synth_frame){&CODE_WAITING, loc_start(&CODE_WAITING, 1), true, true, 0};
    if (alone)
        sc->th[0].nframes = 1;
    build(id, &sc->d, 0, b);
}

static void waiting_linked(const char *id, scene *sc, built *b)
{
    waiting_scene(id, false, sc, b);
}

static void waiting_alone(const char *id, scene *sc, built *b)
{
    waiting_scene(id, true, sc, b);
}

/* Rewrites the code of thread 0's top frame to hold, at the frame's unit
 * and nowhere else, a wait opcode (YIELD_VALUE or RETURN_GENERATOR;
 * `wait`) or one that no call site or wait is; returns the frame. */
static uint64_t top_at_op(built *b, bool wait)
{
    unsigned minor = 0;
    const fpi_call_site_set *set = image_call_sites(b, &minor);
    assert_non_null(set);
    int op = -1;
    for (int v = 0; v < 256 && op < 0; v++) {
        bool waits = op_in(set->wait_ops, v) || (v > 0 && op_in(set->wait_ops, v - 1));
        if (set->caches[v] == 0 && (wait ? op_in(set->wait_ops, v) : v != set->cache && !waits && !op_in(set->ops, v)))
            op = v;
    }
    assert_true(op >= 0);
    uint64_t f = synth_frame_addr(b->img, 0, 0), start, unit, units;
    wipe_code(b, f, &start, &unit, &units);
    *synth_bytes(b->img, start + 2 * unit, 1) = (uint8_t)op;
    return f;
}

/* 3.11-3.13 (a frame keeps its stack depth): the top frame of thread 0
 * (a generator's) stopped with a stack depth at a wait opcode (YIELD_VALUE
 * or RETURN_GENERATOR; `wait`) or at another one that no call site or
 * wait is: its code holds that opcode at its unit and nothing else.
 * False on a layout without a stack depth. */
static bool stop_at(built *b, bool wait)
{
    const fpi_layout *l = synth_layout(b->img);
    unsigned minor = 0;
    if (l->fr_stacktop == FPI_OFF_NONE || !image_call_sites(b, &minor))
        return false;
    uint64_t f = top_at_op(b, wait);
    uint32_t depth = 3;
    memcpy(synth_bytes(b->img, f + (uint64_t)l->fr_stacktop, 4), &depth, 4);
    return true;
}

static void waiting_passes(size_t layout, const char *id, built *b)
{
    (void)layout;
    if (!stop_at(b, true))
        return;
    if (fp_session_sample(b->s, b->sm) != FP_OK || fp_sample_get_thread(b->sm, 0)->error != 0)
        fail_msg("%s: a generator waiting at its yield, the top, was refused: %s", id, fp_session_get_errmsg(b->s));
    const expect_frame waiting[] = {{&CODE_WAITING, 1, 2, true}, EXPECT_T1[1], EXPECT_T1[2], EXPECT_T1[3]};
    check_thread(id, b->sm, 0, waiting, 4);
    print_message("# %s: a generator waiting at its yield, the top above a frame, passes\n", id);
}

static void elsewhere_refused(size_t layout, const char *id, built *b)
{
    (void)layout;
    if (!stop_at(b, false))
        return;
    (void)fp_session_sample(b->s, b->sm);
    assert_int_equal(fp_sample_get_thread(b->sm, 0)->error, FP_E_INCOMPLETE);
    assert_non_null(strstr(fp_session_get_errmsg(b->s), "the top, is not running"));
    check_thread(id, b->sm, 1, EXPECT_T2, 3);
}

static void alone_refused(size_t layout, const char *id, built *b)
{
    (void)layout;
    if (!stop_at(b, true))
        return;
    (void)fp_session_sample(b->s, b->sm);
    assert_int_equal(fp_sample_get_thread(b->sm, 0)->error, FP_E_INCOMPLETE);
    if (!strstr(fp_session_get_errmsg(b->s), "ended at generator frame") &&
        !strstr(fp_session_get_errmsg(b->s), "the top, is not running"))
        fail_msg("%s: a lone generator's frame waiting at its yield: %s", id, fp_session_get_errmsg(b->s));
}

/* 3.11-3.13: a generator's frame at the top with its stack depth saved,
 * at the instruction where it waits to be resumed (YIELD_VALUE or
 * RETURN_GENERATOR) and linked above a frame, is a generator being
 * resumed from C code or yielding back to it: an exact stack.  At any
 * other instruction it is refused as a frame that is not running (the
 * check without the exception refused the first case); with no frame
 * below it (a generator that finished yielding and was unlinked) it is
 * refused too, as a chain that ends at a generator's frame. */
void test_waiting_generator_top(void **state)
{
    (void)state;
    each_scene_made(waiting_linked, waiting_passes);
    each_scene_made(waiting_linked, elsewhere_refused);
    each_scene_made(waiting_alone, alone_refused);
}

static const synth_code CODE_POPPED = {
    "popped", "popped", "/app/p.py", 30, {{2, 31, 31, 0, 5}, {2, 32, 32, 4, 9}}, 2, false, 0};

/* The standard scene with thread 0's top frame a function's of a code of
 * its own, CODE_POPPED at unit 2 (popped_top rewrites its bytecode). */
static void popped_scene(const char *id, scene *sc, built *b)
{
    describe(id, sc);
    sc->t1[0] = (synth_frame){&CODE_POPPED, loc_start(&CODE_POPPED, 1), false, false, 0};
    build(id, &sc->d, 0, b);
}

/* Thread 0's top frame (a function's, in the data stack) at an opcode
 * that is a wait (`wait`: RETURN_GENERATOR's family) or one that no call
 * site or wait is, the data stack's top lowered to that frame: a frame
 * its thread has popped and not yet left (RETURN_GENERATOR, chain.c). */
static void popped_top(built *b, bool wait)
{
    const fpi_layout *l = synth_layout(b->img);
    uint64_t f = top_at_op(b, wait);
    if (l->fr_stacktop != FPI_OFF_NONE) { /* RETURN_GENERATOR saves an empty stack: its locals only */
        uint64_t code;
        uint32_t depth = 0;
        memcpy(&code, synth_bytes(b->img, f + (uint64_t)l->fr_executable, 8), 8);
        if (l->co_nlocalsplus != FPI_OFF_NONE)
            memcpy(&depth, synth_bytes(b->img, (code & ~l->executable_tag_mask) + (uint64_t)l->co_nlocalsplus, 4), 4);
        memcpy(synth_bytes(b->img, f + (uint64_t)l->fr_stacktop, 4), &depth, 4);
    }
    uint64_t ts = synth_thread_state_addr(b->img, 0);
    memcpy(synth_bytes(b->img, ts + (uint64_t)l->ts_datastack_top, 8), &f, 8);
}

/* A stopped thread (its walk one instant: blocking, taken here on an
 * image by walking with the option on) whose top frame lies exactly at its
 * data stack's top is popping it, at RETURN_GENERATOR: its stack is
 * exact, the top included (refused as "beyond the live part" before, the
 * thread was left out of every blocking sample taken in that instant:
 * 3.13's test suite lost about 1 % of its thread samples).  Unstopped, the
 * same bytes are a frame read after its thread left it (refused); stopped
 * at another instruction, it is refused too (3.11's RETURN_VALUE has the
 * instant after the frame was cleared). */
static void popped_top_passes_stopped(size_t layout, const char *id, built *b)
{
    (void)layout;
    popped_top(b, true);
    (void)fp_session_sample(b->s, b->sm);
    assert_int_equal(fp_sample_get_thread(b->sm, 0)->error, FP_E_INCOMPLETE);
    assert_non_null(strstr(fp_session_get_errmsg(b->s), "beyond the live part"));
    b->s->opts.blocking = true;
    if (fpi_walk_all(b->s, b->sm) != FP_OK || fp_sample_get_thread(b->sm, 0)->error != 0)
        fail_msg("%s: a stopped thread popping its top at RETURN_GENERATOR was refused: %s", id,
                 fp_session_get_errmsg(b->s));
    const expect_frame popped[] = {{&CODE_POPPED, 1, 2, false}, EXPECT_T1[1], EXPECT_T1[2], EXPECT_T1[3]};
    check_thread(id, b->sm, 0, popped, 4);
    check_thread(id, b->sm, 1, EXPECT_T2, 3);
    /* The same under a stop of the caller's (fpi_session_walk_stopped, as
     * an asyncio graph read with its sample): it was walked as running. */
    b->s->opts.blocking = false;
    b->s->all_stopped = true;
    int rc = fpi_walk_all(b->s, b->sm);
    b->s->all_stopped = false;
    if (rc != FP_OK || fp_sample_get_thread(b->sm, 0)->error != 0)
        fail_msg("%s: under the caller's stop, a thread popping its top at RETURN_GENERATOR was refused: %s", id,
                 fp_session_get_errmsg(b->s));
    check_thread(id, b->sm, 0, popped, 4);
    print_message("# %s: a stopped thread's top frame at its data stack's top, at RETURN_GENERATOR, passes\n", id);
}

static void popped_top_elsewhere_refused(size_t layout, const char *id, built *b)
{
    (void)layout;
    popped_top(b, false);
    b->s->opts.blocking = true;
    (void)fpi_walk_all(b->s, b->sm);
    assert_int_equal(fp_sample_get_thread(b->sm, 0)->error, FP_E_INCOMPLETE);
    if (!strstr(fp_session_get_errmsg(b->s), "only a frame that RETURN_GENERATOR pops"))
        fail_msg("%s: a stopped thread's top at its data stack's top at another instruction: %s", id,
                 fp_session_get_errmsg(b->s));
    check_thread(id, b->sm, 1, EXPECT_T2, 3);
}

void test_popped_top_stopped(void **state)
{
    (void)state;
    each_scene_made(popped_scene, popped_top_passes_stopped);
    each_scene_made(popped_scene, popped_top_elsewhere_refused);
}

/* 3.11-3.13: a top frame seen running, then stopped at no call (it has
 * returned) at the same instruction, is torn though the frame cache knows
 * the frame: the check comes before the cache (a first version ran it
 * after, and the cache's hit returned the frame). */
void test_stopped_top_from_cache(void **state)
{
    (void)state;
    int checked = 0;
    for (size_t i = 0; i < NLAYOUTS; i++) {
        const char *id = LAYOUTS[i];
        scene sc;
        built b;
        build_scene(id, 0, &sc, &b);
        const fpi_layout *l = synth_layout(b.img);
        if (l->fr_stacktop == FPI_OFF_NONE) {
            unbuild(&b);
            continue;
        }
        /* The second thread's top has a code object of its own: at no call. */
        uint64_t top = synth_frame_addr(b.img, 1, 0), start, unit, units;
        wipe_code(&b, top, &start, &unit, &units);
        assert_int_equal(fp_session_sample(b.s, b.sm), FP_OK);
        assert_int_equal(fp_sample_get_thread(b.sm, 1)->error, 0);
        uint32_t depth = 2;
        memcpy(synth_bytes(b.img, top + (uint64_t)l->fr_stacktop, 4), &depth, 4);
        (void)fp_session_sample(b.s, b.sm);
        assert_int_equal(fp_sample_get_thread(b.sm, 1)->error, FP_E_INCOMPLETE);
        check_thread(id, b.sm, 0, EXPECT_T1, 4);
        unbuild(&b);
        checked++;
    }
    assert_int_equal(checked, 4); /* 3.11, 3.12, 3.13, 3.13t */
}

/* The callee-kind check holds for a caller taken from the frame cache,
 * whose key does not hold its callee's kind: thread 1's frame 2 at SEND or
 * FOR_ITER under frame 1 made a generator's frame is a generator resumed,
 * sampled and cached; with frame 1 a function's frame again, frame 2's key
 * is the same and the sample must still be refused (3.12+). */
static void resuming_caller_refused_from_cache(size_t layout, const char *id, built *b)
{
    (void)layout;
    if (!corrupt(b, C_RESUMING_CALLER))
        return;
    const fpi_layout *l = synth_layout(b->img);
    uint8_t *owner = synth_bytes(b->img, synth_frame_addr(b->img, 1, 1) + (uint64_t)l->fr_owner, 1);
    uint8_t function_owner = *owner;
    *owner = (uint8_t)l->owner_generator;
    if (fp_session_sample(b->s, b->sm) != FP_OK || fp_sample_get_thread(b->sm, 1)->error != 0)
        fail_msg("%s: a caller at SEND under a generator's frame was refused: %s", id, fp_session_get_errmsg(b->s));
    uint64_t hits = b->s->fc.hits;
    *owner = function_owner;
    (void)fp_session_sample(b->s, b->sm);
    if (fp_sample_get_thread(b->sm, 1)->error != FP_E_INCOMPLETE)
        fail_msg("%s: a cached caller at SEND under a function's frame was not refused", id);
    assert_non_null(strstr(fp_session_get_errmsg(b->s), "resuming a generator under a frame"));
    assert_true(b->s->fc.hits > hits);
    check_thread(id, b->sm, 0, EXPECT_T1, 4);
    print_message("# %s: a cached caller at SEND under a function's frame is refused\n", id);
}

void test_resuming_caller_from_cache(void **state)
{
    (void)state;
    each_scene(resuming_caller_refused_from_cache);
}
