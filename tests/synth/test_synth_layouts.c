/* test_synth_layouts.c — synthetic images: every layout round-trips its
 * description exactly; thread-list changes between samples, an untested
 * version, position bounds, a frame cycle at the depth cap. */
#include "synth_fixture.h"
#include "synth_tests.h"

static void round_trips_exactly(size_t layout, const char *id, built *b)
{
    (void)layout;
    int rc = fp_session_sample(b->s, b->sm);
    if (rc)
        fail_msg("%s: sample failed: %s", id, fp_session_get_errmsg(b->s));
    fp_python_info py;
    assert_int_equal(fp_session_get_python(b->s, &py), FP_OK);
    assert_int_equal(py.free_threaded, strchr(id, 't') != NULL);
    assert_int_equal(fp_sample_get_interp_count(b->sm), 1);
    assert_int_equal(fp_sample_get_thread_count(b->sm), 2);
    const fp_thread *m = fp_sample_get_thread(b->sm, 0);
    assert_int_equal(m->native_id, 4242);
    assert_int_equal(m->thread_id, 0x7f0000001000ull);
    assert_true(m->main);
    assert_false(fp_sample_get_thread(b->sm, 1)->main);
    assert_int_equal(m->exception, FP_NO);
    check_thread(id, b->sm, 0, EXPECT_T1, 4);
    check_thread(id, b->sm, 1, EXPECT_T2, 3);
    /* A second sample through the warm cache gives the same answer. */
    sample_is(id, b, 0, EXPECT_T1, 4);
    check_thread(id, b->sm, 1, EXPECT_T2, 3);
    print_message("# %s: round trip exact (%s)\n", id, py.version);
}

void test_layouts_round_trip(void **state)
{
    (void)state;
    each_scene(round_trips_exactly);
}

/* The walk reads ahead the thread states the previous sample saw; a thread
 * list that changes between samples must still be followed exactly. */
static void follows_thread_list_changes(size_t layout, const char *id, built *b)
{
    (void)layout;
    const fpi_layout *l = synth_layout(b->img);
    uint64_t t0 = synth_thread_state_addr(b->img, 0), t1 = synth_thread_state_addr(b->img, 1), zero = 0;
    uint8_t *next0 = synth_bytes(b->img, t0 + (uint64_t)l->ts_next, 8);
    assert_int_equal(fp_session_sample(b->s, b->sm), FP_OK);
    assert_int_equal(fp_sample_get_thread_count(b->sm), 2);
    memcpy(next0, &zero, 8); /* the second thread exits */
    assert_int_equal(fp_session_sample(b->s, b->sm), FP_OK);
    assert_int_equal(fp_sample_get_thread_count(b->sm), 1);
    check_thread(id, b->sm, 0, EXPECT_T1, 4);
    memcpy(next0, &t1, 8); /* and comes back */
    assert_int_equal(fp_session_sample(b->s, b->sm), FP_OK);
    assert_int_equal(fp_sample_get_thread_count(b->sm), 2);
    check_thread(id, b->sm, 1, EXPECT_T2, 3);
    /* The head moves to the second thread, the first now after it. */
    uint64_t interp = first_interp(b->img);
    uint8_t *head = synth_bytes(b->img, interp + (uint64_t)l->interp_threads_head, 8);
    uint8_t *next1 = synth_bytes(b->img, t1 + (uint64_t)l->ts_next, 8);
    memcpy(head, &t1, 8);
    memcpy(next1, &t0, 8);
    memcpy(next0, &zero, 8);
    assert_int_equal(fp_session_sample(b->s, b->sm), FP_OK);
    assert_int_equal(fp_sample_get_thread_count(b->sm), 2);
    check_thread(id, b->sm, 0, EXPECT_T2, 3);
    check_thread(id, b->sm, 1, EXPECT_T1, 4);
    /* A list without the main thread's state is one being changed: the
     * main interpreter lists it for as long as it runs. */
    memcpy(next1, &zero, 8);
    assert_int_equal(fp_session_sample(b->s, b->sm), FP_E_INCOMPLETE);
    assert_non_null(strstr(fp_session_get_errmsg(b->s), "lacks its main thread"));
}

void test_thread_list_changes(void **state)
{
    (void)state;
    each_scene(follows_thread_list_changes);
}

/* A 3.15 image whose version says 3.16 (the runtime's _Py_DebugOffsets
 * version word and the target description): refused by default, unwound
 * with 3.15's knowledge and marked untested with fp_options.allow_untested. */
#define UNTESTED_HEX 0x031000f0u
#define DEBUG_OFFSETS_VERSION_POS 8

void test_untested_version(void **state)
{
    (void)state;
    static const char *const ids[] = {"3.15", "3.15t"};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        scene sc;
        built b;
        build_scene(ids[i], 0, &sc, &b); /* attached as 3.15 */
        fp_target_desc td;
        synth_target(b.img, &td);
        uint64_t v = UNTESTED_HEX;
        memcpy(synth_bytes(b.img, td.runtime_addr + DEBUG_OFFSETS_VERSION_POS, 8), &v, 8);
        for (int patched_desc = 0; patched_desc < 2; patched_desc++) {
            td.hexversion = patched_desc ? UNTESTED_HEX : 0;
            fp_session *s = NULL;
            fp_options o;
            fp_options_init(&o);
            assert_false(o.allow_untested);
            assert_int_equal(fp_session_new(&o, &s), FP_OK);
            assert_int_equal(fp_session_attach_reader(s, &b.rd, &td), FP_E_UNSUPPORTED);
            assert_string_equal(fp_session_get_errmsg(s),
                                "CPython 3.16: not supported (3.11–3.15 are; newer versions only with allow_untested)");
            fp_session_free(s);

            o.allow_untested = true;
            assert_int_equal(fp_session_new(&o, &s), FP_OK);
            if (fp_session_attach_reader(s, &b.rd, &td))
                fail_msg("%s: attach with allow_untested: %s", ids[i], fp_session_get_errmsg(s));
            fp_python_info py;
            assert_int_equal(fp_session_get_python(s, &py), FP_OK);
            assert_true(py.untested);
            assert_int_equal(py.hexversion, UNTESTED_HEX);
            assert_string_equal(py.version, "3.16.0");
            assert_int_equal(py.free_threaded, strchr(ids[i], 't') != NULL);
            if (fp_session_sample(s, b.sm))
                fail_msg("%s: untested sample: %s", ids[i], fp_session_get_errmsg(s));
            check_thread(ids[i], b.sm, 0, EXPECT_T1, 4);
            check_thread(ids[i], b.sm, 1, EXPECT_T2, 3);
            fp_session_free(s);
        }
        /* The tested version itself is never marked. */
        fp_python_info py;
        assert_int_equal(fp_session_get_python(b.s, &py), FP_OK);
        assert_false(py.untested);
        unbuild(&b);
    }
}

/* Expects the sample to fail thread 0 as corrupt with `what` in the
 * message, and thread 1 to stay exact. */
static void thread0_corrupt(const char *id, built *b, const char *what)
{
    int rc = fp_session_sample(b->s, b->sm);
    if (rc == FP_OK)
        fail_msg("%s: %s: the sample succeeded", id, what);
    const fp_thread *th = fp_sample_get_thread(b->sm, 0);
    assert_int_equal(th->error, FP_E_CORRUPT);
    assert_int_equal(th->frame_count, 0);
    if (!strstr(fp_session_get_errmsg(b->s), what))
        fail_msg("%s: expected \"%s\" in: %s", id, what, fp_session_get_errmsg(b->s));
    check_thread(id, b->sm, 1, EXPECT_T2, 3);
}

/* Bounds a damaged image found past the walker (fuzz_image_unwind): a
 * code object's first traceable instruction must not be negative (a
 * negative one made frames before their first instruction visible, with
 * offset -1; one past the code's end is real: the __init__ shim's), and a generator's frame never points before its first
 * instruction (it is made at its RETURN_GENERATOR; such a frame was
 * returned with offset -1 and no position). */
static void position_bounds(size_t layout, const char *id, built *b)
{
    (void)layout;
    const fpi_layout *l = synth_layout(b->img);
    uint64_t gen = synth_frame_addr(b->img, 0, 2), code;
    memcpy(&code, synth_bytes(b->img, gen + (uint64_t)l->fr_executable, 8), 8);
    code &= ~l->executable_tag_mask;
    uint8_t *ft = synth_bytes(b->img, code + (uint64_t)l->co_firsttraceable, 4);
    uint8_t saved[4];
    int32_t negative = -1;
    memcpy(saved, ft, 4);
    memcpy(ft, &negative, 4);
    thread0_corrupt(id, b, "first traceable instruction -1");
    memcpy(ft, saved, 4);
    sample_is(id, b, 0, EXPECT_T1, 4);
    move_instr(b, gen, -(int)(loc_start(&CODE_GEN, 1) + 1));
    thread0_corrupt(id, b, "outside the bytecode");
}

void test_position_bounds(void **state)
{
    (void)state;
    each_scene(position_bounds);
}

void test_cycle_at_max_depth(void **state)
{
    (void)state;
    for (size_t i = 0; i < NLAYOUTS; i++) {
        const char *id = LAYOUTS[i];
        scene sc;
        built b;
        build_scene(id, CYCLE_CUT_DEPTH, &sc, &b);
        assert_true(corrupt(&b, C_CYCLE));
        (void)fp_session_sample(b.s, b.sm);
        assert_int_equal(fp_sample_get_thread_count(b.sm), 2);
        int err = fp_sample_get_thread(b.sm, 1)->error;
        if (err != FP_E_CORRUPT) /* FP_E_LIMIT: "deeper than max_depth frames" */
            fail_msg("%s: a loop met at max_depth (%u) was reported as error %d (%s)", id, CYCLE_CUT_DEPTH, err,
                     fp_error_describe(err));
        unbuild(&b);
    }
}
