/* test_synth_checks.c — synthetic images: corrupted images fail precisely
 * on the damaged thread; the call-site and callee checks (what passes and
 * what is refused); the __init__ shim, unlinked generators, switched
 * stacks, unreadable instructions. */
#include "synth_fixture.h"
#include "synth_tests.h"

void test_corruptions(void **state)
{
    (void)state;
    int checked = 0;
    for (size_t i = 0; i < NLAYOUTS; i++) {
        const char *id = LAYOUTS[i];
        for (int c = 0; c < C_COUNT; c++) {
            scene sc;
            built b;
            build_scene(id, SMALL_DEPTH, &sc, &b);
            if (!corrupt(&b, c)) {
                unbuild(&b);
                continue;
            }
            int rc = fp_session_sample(b.s, b.sm);
            if (rc == FP_OK)
                fail_msg("%s: %s: the sample succeeded", id, CORRUPTION_NAME[c]);
            if (rc != FP_E_INCOMPLETE && rc != FP_E_LIMIT)
                fail_msg("%s: %s: unexpected error %d (%s)", id, CORRUPTION_NAME[c], rc, fp_session_get_errmsg(b.s));
            assert_int_equal(fp_sample_get_thread_count(b.sm), 2);
            assert_int_not_equal(fp_sample_get_thread(b.sm, 1)->error, 0);
            assert_int_equal(fp_sample_get_thread(b.sm, 1)->frame_count, 0);
            check_thread(id, b.sm, 0, EXPECT_T1, 4);
            if (c == C_CYCLE) {
                assert_non_null(strstr(fp_session_get_errmsg(b.s), "cycle"));
                /* found on its second lap, not after max_depth frames (and
                 * as many reads where they lie outside the data stack) */
                if (b.s->chain.nseen > CYCLE_FOUND_WITHIN)
                    fail_msg("%s: the cycle was found after %zu frames", id, b.s->chain.nseen);
            }
            if (c == C_RETURNED_CALLER || c == C_CACHE_LOOKALIKE_CALLER || c == C_ARITHMETIC_CALLER ||
                c == C_SEND_CALLER_3_11 || c == C_RESUME_CALLER)
                assert_non_null(strstr(fp_session_get_errmsg(b.s), "is not suspended in a call"));
            if (c == C_SETUP_CALLER)
                assert_non_null(strstr(fp_session_get_errmsg(b.s), "is being set up under a frame"));
            if (c == C_RESUMING_CALLER)
                assert_non_null(strstr(fp_session_get_errmsg(b.s), "resuming a generator under a frame"));
            if (c == C_CALLER_UNDER_GENERATOR)
                assert_non_null(strstr(fp_session_get_errmsg(b.s), "is not suspended resuming a generator under the"));
            if (c == C_RUNNING_CALLER)
                assert_non_null(strstr(fp_session_get_errmsg(b.s), "is running under the frame linked above it"));
            if (c == C_CLEARED_CALLER_3_13 || c == C_CLEARED_TOP_3_13)
                assert_non_null(strstr(fp_session_get_errmsg(b.s), "has returned: its stack was cleared"));
            if (c == C_STOPPED_TOP)
                assert_non_null(strstr(fp_session_get_errmsg(b.s), "the top, is not running"));
            if (c == C_CFRAME_EMPTY)
                assert_non_null(strstr(fp_session_get_errmsg(b.s), "has no frame yet"));
            if (c == C_WRAPPED_CHUNK) {
                assert_string_equal(fp_session_get_errmsg(b.s), WRAP_MESSAGE);
                assert_int_equal(fp_sample_get_thread(b.sm, 1)->error, FP_E_CORRUPT);
            }
            unbuild(&b);
            checked++;
        }
    }
    print_message("# %d corrupted images rejected with an exact stack on the intact thread\n", checked);
}

/* 3.12: a caller at the last inline cache unit of a CALL, whose data byte
 * equals SEND, under a function's frame is where a CALL waits (parked
 * Thread._bootstrap and import_time frames): the instruction map tells the
 * cache unit from a SEND, so the stack comes back whole. */
static void cache_byte_like_send_passes(size_t layout, const char *id, built *b)
{
    (void)layout;
    fp_python_info py;
    assert_int_equal(fp_session_get_python(b->s, &py), FP_OK);
    unsigned minor = (py.hexversion >> 16) & 0xffu;
    const fpi_call_site_set *set = fpi_call_sites_for(3, minor);
    if (!set || minor < SEND_DIRECT_FIRST_MINOR || minor >= SUSPENDED_AT_INSTRUCTION_MINOR)
        return;
    int call = -1, send = -1;
    for (int v = 0; v < 256; v++) {
        uint64_t bit = 1ull << (v % 64);
        bool gen_callee = set->gen_callee_ops[v / 64] & bit;
        if (call < 0 && (set->ops[v / 64] & bit) && !(set->gen_ops[v / 64] & bit) && !gen_callee && set->caches[v] > 0)
            call = v;
        if (send < 0 && gen_callee)
            send = v;
    }
    assert_true(call >= 0 && send >= 0);
    uint64_t start, unit, units;
    wipe_code(b, synth_frame_addr(b->img, 1, 2), &start, &unit, &units);
    assert_true(unit >= set->caches[call] && unit < units);
    *synth_bytes(b->img, start + 2 * (unit - set->caches[call]), 1) = (uint8_t)call;
    *synth_bytes(b->img, start + 2 * unit, 1) = (uint8_t)send;
    int rc = fp_session_sample(b->s, b->sm);
    if (rc)
        fail_msg("%s: a CALL's cache unit holding SEND's byte was refused: %s", id, fp_session_get_errmsg(b->s));
    check_thread(id, b->sm, 1, EXPECT_T2, 3);
    print_message("# %s: a CALL's cache byte equal to SEND passes\n", id);
}

/* 3.11-3.13: gen.throw() links the delegating generator's frame straight
 * under the frame that called it, which runs (stack depth -1): a running
 * frame under a generator's frame is an instant Python has (parked
 * yield_from), so the stack comes back whole. */
static void running_under_generator_passes(size_t layout, const char *id, built *b)
{
    (void)layout;
    const fpi_layout *l = synth_layout(b->img);
    if (l->fr_stacktop == FPI_OFF_NONE)
        return;
    int32_t running = -1;
    memcpy(synth_bytes(b->img, synth_frame_addr(b->img, 0, 3) + (uint64_t)l->fr_stacktop, 4), &running, 4);
    int rc = fp_session_sample(b->s, b->sm);
    if (rc)
        fail_msg("%s: a running frame under a generator's frame was refused: %s", id, fp_session_get_errmsg(b->s));
    check_thread(id, b->sm, 0, EXPECT_T1, 4);
    print_message("# %s: a running frame under a generator's frame passes\n", id);
}

/* The standard scene with thread 1's __init__ shim taken out: its frame 2
 * (Outer.method) then calls its frame 1 (Outer.method again) directly. */
static void build_direct_call_scene(const char *id, scene *sc, built *b)
{
    describe(id, sc);
    sc->t2[1] = sc->t2[2];
    sc->t2[1].entry_below = false;
    sc->t2[2] = sc->t2[3];
    sc->th[1].nframes = 3;
    build(id, &sc->d, 0, b);
}

static bool call_with_slots(built *b, uint64_t slot0, uint64_t slot1)
{
    return call_with_slots_on(b, 1, slot0, slot1);
}

/* 3.11-3.13: a caller suspended in a CALL holds the function it called at
 * its stack depth (3.11, 3.12: or NULL there and the function above it)
 * until the call returns.  Holding another one, it had moved on from the
 * call that pushed the frame above it: a slot of another chain (ci/live
 * thread_churn, 3.13: churn_worker at its call of d1 under c1).  Refused
 * on a cold walk and through the frame cache; the callable where CPython
 * leaves it passes. */
static void callee_was_called_checked(size_t layout, const char *id, built *b)
{
    (void)layout;
    if (!call_with_slots(b, FUNC_CALLED, 0))
        return;
    sample_is(id, b, 1, EXPECT_T2, 3);
    assert_true(call_with_slots(b, 0, FUNC_CALLED)); /* 3.11, 3.12: no method call */
    sample_is(id, b, 1, EXPECT_T2, 3);
    for (int warm = 0; warm < 2; warm++) {
        if (!warm)
            reattach(b, &b->rd); /* a new session: no frame cache entry yet */
        assert_true(call_with_slots(b, FUNC_OTHER, FUNC_CALLED));
        int rc = fp_session_sample(b->s, b->sm);
        if (rc != FP_E_INCOMPLETE || !strstr(fp_session_get_errmsg(b->s), "in a call of another function"))
            fail_msg("%s: a caller holding another function was not refused (%s frame cache): %d %s", id,
                     warm ? "warm" : "cold", rc, fp_session_get_errmsg(b->s));
        assert_int_equal(fp_sample_get_thread(b->sm, 1)->frame_count, 0);
        check_thread(id, b->sm, 0, EXPECT_T1, 4);
        assert_true(call_with_slots(b, FUNC_CALLED, 0));
        sample_is(id, b, 1, EXPECT_T2, 3); /* warms the frame cache for the next round */
    }
    print_message("# %s: a caller holding another function than its callee's is refused\n", id);
}

void test_callee_was_called(void **state)
{
    (void)state;
    for (size_t i = 0; i < NLAYOUTS; i++) {
        scene sc;
        built b;
        build_direct_call_scene(LAYOUTS[i], &sc, &b);
        callee_was_called_checked(i, LAYOUTS[i], &b);
        unbuild(&b);
    }
}

void test_running_under_generator(void **state)
{
    (void)state;
    each_scene(running_under_generator_passes);
}

void test_cache_byte_like_send(void **state)
{
    (void)state;
    each_scene(cache_byte_like_send_passes);
}

/* A generator frame unlinked from its caller (previous NULL) ends the
 * walk: never a thread's whole stack (3.11: "ended at generator frame";
 * later versions: not an entry frame, or short of the base frame). */
static void unlinked_generator_ends_walk(size_t layout, const char *id, built *b)
{
    (void)layout;
    const fpi_layout *l = synth_layout(b->img);
    uint64_t gen = synth_frame_addr(b->img, 0, 2), zero = 0;
    memcpy(synth_bytes(b->img, gen + (uint64_t)l->fr_previous, 8), &zero, 8);
    int rc = fp_session_sample(b->s, b->sm);
    assert_int_equal(rc, FP_E_INCOMPLETE);
    assert_int_equal(fp_sample_get_thread(b->sm, 0)->error, FP_E_INCOMPLETE);
    /* The failure is the thread's alone: the other thread is good. */
    assert_true(fp_sample_is_usable(b->sm, rc));
    if (strcmp(id, "3.11") == 0)
        assert_non_null(strstr(fp_session_get_errmsg(b->s), "ended at generator frame"));
    check_thread(id, b->sm, 1, EXPECT_T2, 3);
}

void test_unlinked_generator(void **state)
{
    (void)state;
    each_scene(unlinked_generator_ends_walk);
}

/* Thread 0 of the standard scene on a stack a stack switcher started
 * (greenlet): its outermost frame's caller is an entry frame with no
 * caller, outside the data stack, where 3.15+ would have the base frame. */
static void switched_scene(const char *id, scene *sc, built *b)
{
    build_scene(id, 0, sc, b);
    if (strncmp(id, "3.15", 4) == 0 && !synth_switch_stack(b->img, 0))
        fail_msg("%s: cannot switch thread 0's stack", id);
}

enum switched_case {
    SW_WHOLE,         /* as built: the whole stack, exactly */
    SW_CUT_AT_ENTRY,  /* the entry frame under frame 1 loses its caller: frames of the data stack lie below */
    SW_ONLY_ENTRY,    /* the top names that entry frame, cut so: no frame of the data stack passed */
    SW_SHIM_BOTTOM,   /* the outermost frame, in the data stack, made interpreter-owned with no caller */
    SW_EXPOSED,       /* the outermost frame loses its caller (greenlet's links rewritten for a switch) */
    SW_EXPOSED_KEPT,  /* so, its frame object keeping the link, as greenlet does: the whole stack */
    SW_EXPOSED_OTHER, /* so, but the frame object names another frame as its own */
    SW_EXPOSED_NONE,  /* so, but the frame object keeps no link */
    SW_EXPOSED_INNER, /* so, but the link kept lies in the data stack (a freed frame object's leftovers) */
    SW_COUNT
};
static const char *const SWITCHED_NAME[SW_COUNT] = {
    "the whole switched stack", "a chain cut at an entry frame above the data stack's first frame",
    "a chain of one cut entry frame over a data stack of frames",
    "an interpreter-owned frame inside the data stack at the bottom", "a chain ending at a Python frame",
    "a chain greenlet exposed for a switch", "a chain ending at a Python frame whose frame object is another's",
    "a chain ending at a Python frame whose frame object keeps no link",
    "a chain ending at a Python frame whose frame object keeps a link into the data stack",
};

/* Gives frame f (its link cleared) a frame object that names `owner` as
 * its frame and keeps `kept` where greenlet keeps a rewritten link. */
static void give_frame_object(synth_image *img, uint64_t f, uint64_t owner, uint64_t kept)
{
    const fpi_layout *l = synth_layout(img);
    uint64_t zero = 0, fo = synth_alloc(img, (size_t)l->fo_frame_data + 8u);
    memcpy(synth_bytes(img, f + (uint64_t)l->fr_previous, 8), &zero, 8);
    memcpy(synth_bytes(img, f + (uint64_t)l->fr_frame_obj, 8), &fo, 8);
    memcpy(synth_bytes(img, fo + (uint64_t)l->fo_frame, 8), &owner, 8);
    memcpy(synth_bytes(img, fo + (uint64_t)l->fo_frame_data, 8), &kept, 8);
}

static void switched_stack_case(const char *id, enum switched_case c)
{
    scene sc;
    built b;
    switched_scene(id, &sc, &b);
    const fpi_layout *l = synth_layout(b.img);
    uint64_t f1 = synth_frame_addr(b.img, 0, 1), f3 = synth_frame_addr(b.img, 0, 3), entry, zero = 0;
    memcpy(&entry, synth_bytes(b.img, f1 + (uint64_t)l->fr_previous, 8), 8);
    switch (c) {
    case SW_WHOLE:
        break;
    case SW_CUT_AT_ENTRY:
        memcpy(synth_bytes(b.img, entry + (uint64_t)l->fr_previous, 8), &zero, 8);
        break;
    case SW_ONLY_ENTRY: {
        memcpy(synth_bytes(b.img, entry + (uint64_t)l->fr_previous, 8), &zero, 8);
        uint64_t ts = synth_thread_state_addr(b.img, 0);
        if (l->ts_current_frame != FPI_OFF_NONE) {
            memcpy(synth_bytes(b.img, ts + (uint64_t)l->ts_current_frame, 8), &entry, 8);
        } else {
            uint64_t cf;
            memcpy(&cf, synth_bytes(b.img, ts + (uint64_t)l->ts_cframe, 8), 8);
            memcpy(synth_bytes(b.img, cf + (uint64_t)l->cframe_current_frame, 8), &entry, 8);
        }
        break;
    }
    case SW_SHIM_BOTTOM:
        *synth_bytes(b.img, f3 + (uint64_t)l->fr_owner, 1) =
            (uint8_t)(l->owner_interpreter >= 0 ? l->owner_interpreter : l->owner_cstack);
        memcpy(synth_bytes(b.img, f3 + (uint64_t)l->fr_previous, 8), &zero, 8);
        break;
    case SW_EXPOSED:
        memcpy(synth_bytes(b.img, f3 + (uint64_t)l->fr_previous, 8), &zero, 8);
        break;
    case SW_EXPOSED_KEPT:
    case SW_EXPOSED_OTHER:
    case SW_EXPOSED_NONE:
    case SW_EXPOSED_INNER: {
        uint64_t below;
        memcpy(&below, synth_bytes(b.img, f3 + (uint64_t)l->fr_previous, 8), 8);
        if (l->fr_frame_obj == FPI_OFF_NONE) { /* 3.11: greenlet rewrites no links */
            memcpy(synth_bytes(b.img, f3 + (uint64_t)l->fr_previous, 8), &zero, 8);
            break;
        }
        give_frame_object(b.img, f3, c == SW_EXPOSED_OTHER ? f1 : f3,
                          c == SW_EXPOSED_NONE ? 0 : c == SW_EXPOSED_INNER ? f1 : below);
        break;
    }
    case SW_COUNT:
        break;
    }
    int rc = fp_session_sample(b.s, b.sm);
    if (c == SW_WHOLE || c == SW_EXPOSED_KEPT) {
        if (rc != FP_OK)
            fail_msg("%s: %s: %s", id, SWITCHED_NAME[c], fp_session_get_errmsg(b.s));
        check_thread(id, b.sm, 0, EXPECT_T1, 4);
    } else if (l->ts_base_frame != FPI_OFF_NONE || (c >= SW_EXPOSED && l->fr_is_entry == FPI_OFF_NONE)) {
        /* 3.15+ refuses every cut; 3.12-3.14, which end every chain at an
         * entry frame with no caller, refuse the ones that end at a Python
         * frame without greenlet's kept link (3.11 marks the outermost
         * frame itself as entered from C, and greenlet rewrites no links
         * there). */
        if (rc != FP_E_INCOMPLETE || fp_sample_get_thread(b.sm, 0)->error != FP_E_INCOMPLETE)
            fail_msg("%s: %s: came back as %d (thread 0: %d, %zu frames)", id, SWITCHED_NAME[c], rc,
                     fp_sample_get_thread(b.sm, 0)->error, fp_sample_get_thread(b.sm, 0)->frame_count);
    }
    check_thread(id, b.sm, 1, EXPECT_T2, 3);
    unbuild(&b);
}

/* A greenlet whose run is a generator's __next__ (called from C): the
 * outermost Python frame is the generator's, outside the data stack, and
 * the frame it called from C lies at the data stack's first slot.  Whole,
 * it is returned exactly (3.12+; 3.11 never samples a stack whose
 * outermost frame is a generator resumed from C, rule 5 of docs/design.md's live checks);
 * with the generator's link cleared, as greenlet leaves the outermost
 * Python frame while it switches away, it is refused: the walk ends
 * outside the data stack with nothing of it below, at a frame that was not
 * entered from C code. */
static void switched_generator_case(const char *id, bool exposed)
{
    const synth_frame frames[] = {
        {&CODE_A, loc_start(&CODE_A, 1) + 1, false, true, 0},
        {&CODE_GEN, loc_start(&CODE_GEN, 1), true, false, 0},
    };
    const expect_frame want[] = {{&CODE_A, 1, 2, false}, {&CODE_GEN, 1, 2, true}};
    synth_thread th[] = {{4242, 0x7f0000001000ull, true, frames, 2}};
    synth_desc d = {th, 1, NULL, 0};
    built b;
    build(id, &d, 0, &b);
    const fpi_layout *l = synth_layout(b.img);
    if (l->ts_base_frame != FPI_OFF_NONE && !synth_switch_stack(b.img, 0))
        fail_msg("%s: cannot switch thread 0's stack", id);
    if (exposed) {
        uint64_t zero = 0;
        memcpy(synth_bytes(b.img, synth_frame_addr(b.img, 0, 1) + (uint64_t)l->fr_previous, 8), &zero, 8);
    }
    int rc = fp_session_sample(b.s, b.sm);
    if (l->fr_is_entry != FPI_OFF_NONE || exposed) {
        if (rc != FP_E_INCOMPLETE || fp_sample_get_thread(b.sm, 0)->error != FP_E_INCOMPLETE)
            fail_msg("%s: a generator at the bottom of a switched stack%s came back as %d (%zu frames)", id,
                     exposed ? ", its link cleared," : "", rc, fp_sample_get_thread(b.sm, 0)->frame_count);
    } else {
        if (rc != FP_OK)
            fail_msg("%s: a generator at the bottom of a switched stack: %s", id, fp_session_get_errmsg(b.s));
        check_thread(id, b.sm, 0, want, 2);
    }
    unbuild(&b);
}

/* A running greenlet's stack (3.15+: ending short of the base frame), and
 * one greenlet has rewritten for a switch, are returned exactly on every
 * layout, and each way of cutting such a chain is refused where the base
 * frame is the rule (chain.c, ends_at_switched_stack_bottom, and
 * stack_switch.c: with any of their conditions removed, a case here comes
 * back as a shorter stack or as a whole one where it must be refused). */
void test_switched_stack(void **state)
{
    (void)state;
    for (size_t i = 0; i < NLAYOUTS; i++)
        for (int c = 0; c < SW_COUNT; c++)
            switched_stack_case(LAYOUTS[i], (enum switched_case)c);
    for (size_t i = 0; i < NLAYOUTS; i++) {
        switched_generator_case(LAYOUTS[i], false);
        switched_generator_case(LAYOUTS[i], true);
    }
}

/* The __init__ cleanup shim sits under the __init__ frame it pushed at an
 * instruction that is no call (EXIT_INIT_CHECK): hidden, and not subject to
 * the call-site check (a parked or stopped target showed it rejected). */
static void shim_skips_call_site_check(size_t layout, const char *id, built *b)
{
    (void)layout;
    const fpi_layout *l = synth_layout(b->img);
    uint64_t shim = synth_frame_addr(b->img, 1, 1), code, units;
    memcpy(&code, synth_bytes(b->img, shim + (uint64_t)l->fr_executable, 8), 8);
    code &= ~l->executable_tag_mask;
    memcpy(&units, synth_bytes(b->img, code + (uint64_t)l->ob_size, 8), 8);
    memset(synth_bytes(b->img, code + (uint64_t)l->co_code_adaptive, (size_t)units * 2), 0, (size_t)units * 2);
    if (fp_session_sample(b->s, b->sm))
        fail_msg("%s: %s", id, fp_session_get_errmsg(b->s));
    check_thread(id, b->sm, 1, EXPECT_T2, 3);
}

void test_shim_not_checked(void **state)
{
    (void)state;
    each_scene(shim_skips_call_site_check);
}

/* Thread 1 with its frame 1 made a generator's frame directly above frame
 * 2 (visible now, at its unit 1 with no position). */
static const expect_frame EXPECT_T2_GENERATOR[] = {
    {&CODE_UCS4, 1, 15, false}, {&CODE_SHIM, 0, 1, true}, {&CODE_A, 4, 10, false}, {&CODE_A, 3, 7, false}};

/* Makes thread 1's frame 1 a generator's frame (or a function's again). */
static void frame1_generator(built *b, bool generator)
{
    const fpi_layout *l = synth_layout(b->img);
    *synth_bytes(b->img, synth_frame_addr(b->img, 1, 1) + (uint64_t)l->fr_owner, 1) =
        (uint8_t)(generator ? l->owner_generator : l->owner_thread);
}

/* Thread 1's frame 1, a generator's, waits in a `yield from`: at the RESUME
 * after it (3.13+), or at the YIELD_VALUE before that RESUME (3.12), the
 * RESUME's operand saying it resumes after a delegation (the value 2). */
static bool frame1_delegating(built *b, const fpi_call_site_set *set, unsigned minor)
{
    int op = -1;
    for (int v = 0; v < 256 && op < 0; v++)
        if (op_in(set->gen_ops, v) && set->caches[v] == 0)
            op = v;
    uint64_t start, unit, units;
    wipe_code(b, synth_frame_addr(b->img, 1, 1), &start, &unit, &units);
    uint64_t resume = minor < SUSPENDED_AT_INSTRUCTION_MINOR ? unit + 1 : unit;
    if (op < 0 || resume >= units)
        return false;
    *synth_bytes(b->img, start + 2 * unit, 1) = (uint8_t)op;
    *synth_bytes(b->img, start + 2 * resume, 1) = (uint8_t)op;
    *synth_bytes(b->img, start + 2 * resume + 1, 1) = 2;
    frame1_generator(b, true);
    return true;
}

/* Thread 1's top word names `frame`. */
static void set_top(built *b, uint64_t frame)
{
    const fpi_layout *l = synth_layout(b->img);
    uint64_t ts = synth_thread_state_addr(b->img, 1), word;
    if (l->ts_current_frame != FPI_OFF_NONE) {
        word = ts + (uint64_t)l->ts_current_frame;
    } else {
        memcpy(&word, synth_bytes(b->img, ts + (uint64_t)l->ts_cframe, 8), 8);
        word += (uint64_t)l->cframe_current_frame;
    }
    memcpy(synth_bytes(b->img, word, 8), &frame, 8);
}

static void expect_resumed_refused(const char *id, built *b, const char *what)
{
    int rc = fp_session_sample(b->s, b->sm);
    if (rc != FP_E_INCOMPLETE ||
        !strstr(fp_session_get_errmsg(b->s), "is not suspended resuming a generator under the"))
        fail_msg("%s: %s was not refused as torn: %d %s", id, what, rc, fp_session_get_errmsg(b->s));
    assert_int_equal(fp_sample_get_thread(b->sm, 1)->frame_count, 0);
    check_thread(id, b->sm, 0, EXPECT_T1, 4);
}

/* A generator's frame directly above a frame was linked there by it: at
 * SEND or FOR_ITER (3.12+), or by its call of gen.throw(), below a
 * generator waiting in a `yield from` with a frame above it.  Thread 1's
 * frame 2 at a call under its frame 1 made a generator's frame is refused
 * on a cold walk and through the frame cache (whose key holds neither
 * frame's kind); at SEND or FOR_ITER, or under a delegating generator that
 * is not the top, it passes; under that generator as the top, it is
 * refused. */
static void generator_callee_checked(size_t layout, const char *id, built *b)
{
    (void)layout;
    unsigned minor;
    const fpi_call_site_set *set = image_call_sites(b, &minor);
    uint64_t f1 = synth_frame_addr(b->img, 1, 1), f2 = synth_frame_addr(b->img, 1, 2);
    assert_true(set && suspend_in(b, f2, set, minor, pushing_opcode(set, false)));
    sample_is(id, b, 1, EXPECT_T2, 3); /* under a function's frame: warms the frame cache */
    uint64_t hits = b->s->fc.hits;
    frame1_generator(b, true);
    expect_resumed_refused(id, b, "a cached caller at a call under a generator's frame");
    assert_true(b->s->fc.hits > hits);
    reattach(b, &b->rd);
    expect_resumed_refused(id, b, "a caller at a call under a generator's frame");
    if (minor >= SEND_DIRECT_FIRST_MINOR) {
        reattach(b, &b->rd);
        assert_true(suspend_in(b, f2, set, minor, pushing_opcode(set, true)));
        sample_is(id, b, 1, EXPECT_T2_GENERATOR, 4);
        reattach(b, &b->rd);
        assert_true(suspend_in(b, f2, set, minor, pushing_opcode(set, false)) && frame1_delegating(b, set, minor));
        sample_is(id, b, 1, EXPECT_T2_GENERATOR, 4);
        set_top(b, f1);
        reattach(b, &b->rd);
        expect_resumed_refused(id, b, "a caller of gen.throw() under a delegating generator at the top");
    }
    print_message("# %s: a caller at a call under a generator's frame is refused\n", id);
}

void test_generator_callee_resumed(void **state)
{
    (void)state;
    each_scene(generator_callee_checked);
}

/* A reader that fails every read touching [lo, hi), as reads of memory
 * unmapped under the unwinder do. */
typedef struct hole_reader {
    fp_reader inner;
    uint64_t lo, hi;
} hole_reader;

static int hole_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    hole_reader *r = ctx;
    if (addr < r->hi && r->lo < addr + len)
        return FP_E_READ;
    return fp_reader_read(&r->inner, addr, buf, len);
}

static const fp_reader_ops HOLE_OPS = {.name = "synthetic image with a hole", .read = hole_read};

/* A code object whose instructions cannot be read: in a live process
 * (the target's pid given) no frame of it is resolved, as the call-site
 * check cannot apply (an entry kept without them let every later frame of
 * that code object past the check): its thread is torn.  A memory image
 * (no pid), which need not record instructions, is unwound without the
 * check for that code object. */
void test_unreadable_instructions(void **state)
{
    (void)state;
    for (size_t i = 0; i < NLAYOUTS; i++) {
        const char *id = LAYOUTS[i];
        for (int live = 0; live < 2; live++) {
            scene sc;
            built b;
            build_scene(id, 0, &sc, &b);
            const fpi_layout *l = synth_layout(b.img);
            uint64_t caller = synth_frame_addr(b.img, 0, 1), code; /* called the top frame directly */
            memcpy(&code, synth_bytes(b.img, caller + (uint64_t)l->fr_executable, 8), 8);
            code &= ~l->executable_tag_mask;
            hole_reader hr = {b.rd, code + (uint64_t)l->co_code_adaptive, code + (uint64_t)l->co_code_adaptive + 2};
            fp_reader holed = {&HOLE_OPS, &hr};
            fp_target_desc td;
            synth_target(b.img, &td);
            td.pid = live ? (int)getpid() : 0;
            fp_session_free(b.s);
            fp_options o;
            fp_options_init(&o);
            assert_int_equal(fp_session_new(&o, &b.s), FP_OK);
            assert_int_equal(fp_session_attach_reader(b.s, &holed, &td), FP_OK);
            for (int k = 0; k < 2; k++) { /* the second sample must not find it cached */
                int rc = fp_session_sample(b.s, b.sm);
                if (!live) {
                    if (rc)
                        fail_msg("%s, image: %s", id, fp_session_get_errmsg(b.s));
                    check_thread(id, b.sm, 0, EXPECT_T1, 4);
                    continue;
                }
                if (rc != FP_E_INCOMPLETE || fp_sample_get_thread(b.sm, 0)->error != FP_E_INCOMPLETE)
                    fail_msg("%s, live, sample %d: %s (thread error %d), expected the thread torn", id, k,
                             fp_error_describe(rc), fp_sample_get_thread(b.sm, 0)->error);
                assert_non_null(strstr(fp_session_get_errmsg(b.s), "cannot be read"));
                check_thread(id, b.sm, 1, EXPECT_T2, 3);
            }
            unbuild(&b);
        }
    }
}
