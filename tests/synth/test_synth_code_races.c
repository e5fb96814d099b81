/* test_synth_code_races.c — synthetic images: code objects and frames
 * changing under a sample: code confirmed per walk, the code generation,
 * late code read-backs, a caller cleared between reads, frame slots reused
 * (the frame cache's ABA). */
#include "synth_fixture.h"
#include "synth_tests.h"

/* The frame cache against reused frame addresses (the "ABA" case): between
 * two samples the frames at the same addresses start running other code or
 * another instruction, as when another call chain reuses the slots.  Every
 * sample must report what the frames hold now.  A cache keyed on the frame
 * address alone (or on address and code object) fails this test; so does
 * taking a generator frame's bytes from the previous sample without the
 * read-back's check, and taking them again for the walk that follows the
 * batched read-back's finding (two torn walks where one is due). */
static void frames_reused_not_cached(size_t layout, const char *id, built *b)
{
    (void)layout;
    const fpi_layout *l = synth_layout(b->img);
    uint64_t f0 = synth_frame_addr(b->img, 0, 0), f2 = synth_frame_addr(b->img, 0, 2);
    uint64_t f3 = synth_frame_addr(b->img, 0, 3);
    expect_frame ex[4];
    memcpy(ex, EXPECT_T1, sizeof ex);
    retry_heard heard = {0, 0};
    assert_int_equal(fp_session_set_retry_hook(b->s, on_retry, &heard), FP_OK);
    for (int round = 0; round < 2; round++) { /* the second round hits the cache */
        sample_is(id, b, 0, ex, 4);
    }
    /* The top frame moves to another instruction of the same code. */
    move_instr(b, f0, -2);
    ex[0] = (expect_frame){&CODE_A, 0, 0, false};
    sample_is(id, b, 0, ex, 4);
    /* The same slot now runs another code object. */
    memcpy(synth_bytes(b->img, f0 + (uint64_t)l->fr_executable, 8),
           synth_bytes(b->img, f3 + (uint64_t)l->fr_executable, 8), 8);
    memcpy(synth_bytes(b->img, f0 + (uint64_t)l->fr_instr_ptr, 8),
           synth_bytes(b->img, f3 + (uint64_t)l->fr_instr_ptr, 8), 8);
    ex[0] = (expect_frame){&CODE_UCS2, 0, 0, false};
    sample_is(id, b, 0, ex, 4);
    /* Frames on the data stack are read with it: none of that tore. */
    if (heard.calls != 0)
        fail_msg("%s: the retry hook called %u times for frames read with their data stack", id, heard.calls);
    /* The generator frame (outside the data stack) moved on: the walk that
     * took its bytes from the frame cache (in the batched walk of both
     * threads) is torn, once — the walk again reads it afresh rather than
     * taking the cache's bytes a second time. */
    fp_read_stats st0, st;
    assert_int_equal(fp_session_get_read_stats(b->s, &st0), FP_OK);
    move_instr(b, f2, -2);
    ex[2] = (expect_frame){&CODE_GEN, 0, 0, true};
    sample_is(id, b, 0, ex, 4);
    assert_int_equal(fp_session_get_read_stats(b->s, &st), FP_OK);
    if (st.torn - st0.torn != 1 || heard.calls != 1 || heard.native_id != fp_sample_get_thread(b->sm, 0)->native_id)
        fail_msg("%s: a cached generator frame that moved on: %llu torn walks, the hook called %u times (last with "
                 "%llu), expected 1, once, with %llu",
                 id, (unsigned long long)(st.torn - st0.torn), heard.calls, (unsigned long long)heard.native_id,
                 (unsigned long long)fp_sample_get_thread(b->sm, 0)->native_id);
    check_thread(id, b->sm, 1, EXPECT_T2, 3);
    assert_int_equal(fp_session_set_retry_hook(b->s, NULL, NULL), FP_OK);
}

void test_frame_cache_aba(void **state)
{
    (void)state;
    each_scene(frames_reused_not_cached);
}

/* A cached code object is trusted for a walk only when confirmed inside
 * the window that walk is proven in (before 3.14: no code-object
 * generation).  The sample's first attempt confirms the bottom frame's
 * code object with its last read-back and is torn (frame 1 moved); before
 * the walk is tried again, that code object is replaced at its address by
 * one with another qualname, and frame 1 is back.  Trusted for the whole
 * sample, as it was, the entry gave the old qualname (ci/live code_churn,
 * 3.13, under load: `work_g36` calling `inner_g05`, an entry confirmed
 * milliseconds earlier in the same sample). */
typedef struct code_replacer {
    racing_reader rr;          /* first: the change gets a pointer to it */
    int stage;
    uint64_t f1_instr, instr, qualname_at, qualname;
} code_replacer;

static void confirm_then_replace(racing_reader *r)
{
    code_replacer *c = (code_replacer *)r;
    if (c->stage++ == 0) {
        /* Before the last read-back reads frame 1 again: it moved. */
        uint64_t moved = c->instr + 2;
        memcpy(synth_bytes(r->img, c->f1_instr, 8), &moved, 8);
        r->skip = 1; /* past the read-back's own read of the thread state, to the next walk's */
        r->armed = true;
        return;
    }
    memcpy(synth_bytes(r->img, c->f1_instr, 8), &c->instr, 8);
    memcpy(synth_bytes(r->img, c->qualname_at, 8), &c->qualname, 8);
}

static void code_confirmed_per_walk(size_t layout, const char *id, built *b)
{
    (void)layout;
    const fpi_layout *l = synth_layout(b->img);
    if (l->interp_code_generation != FPI_OFF_NONE)
        return;
    uint64_t f0 = synth_frame_addr(b->img, 0, 0), f1 = synth_frame_addr(b->img, 0, 1);
    uint64_t f3 = synth_frame_addr(b->img, 0, 3), code_a, code_u;
    memcpy(&code_a, synth_bytes(b->img, f0 + (uint64_t)l->fr_executable, 8), 8);
    memcpy(&code_u, synth_bytes(b->img, f3 + (uint64_t)l->fr_executable, 8), 8);
    code_a &= ~l->executable_tag_mask;
    code_u &= ~l->executable_tag_mask;
    code_replacer c = {.rr = racing_over(b, f1 + (uint64_t)l->fr_instr_ptr, confirm_then_replace),
                       .f1_instr = f1 + (uint64_t)l->fr_instr_ptr,
                       .qualname_at = code_u + (uint64_t)l->co_qualname};
    memcpy(&c.instr, synth_bytes(b->img, c.f1_instr, 8), 8);
    memcpy(&c.qualname, synth_bytes(b->img, code_a + (uint64_t)l->co_qualname, 8), 8);
    fp_reader racing = {&RACING_OPS, &c.rr};
    reattach(b, &racing);
    for (int k = 0; k < 3; k++) /* warm: both threads read ahead, every code object cached */
        sample_is(id, b, 0, EXPECT_T1, 4);
    c.rr.armed = true;
    c.rr.skip = 2; /* the copy and the first read-back read frame 1; the last one meets the move */
    if (fp_session_sample(b->s, b->sm) != FP_OK)
        fail_msg("%s: %s", id, fp_session_get_errmsg(b->s));
    if (c.stage != 2)
        fail_msg("%s: the change ran %d of its 2 stages", id, c.stage);
    const fp_thread *th = fp_sample_get_thread(b->sm, 0);
    assert_int_equal(th->frame_count, 4);
    const fp_frame *bottom = fp_sample_get_frame(b->sm, th->first_frame + 3);
    if (strcmp(bottom->function, CODE_A.qualname) != 0)
        fail_msg("%s: the replaced code object is named %s, expected %s", id, bottom->function, CODE_A.qualname);
    reattach(b, &b->rd); /* the racing reader goes out of scope */
}

void test_code_confirmed_per_walk(void **state)
{
    (void)state;
    each_scene(code_confirmed_per_walk);
}

/* 3.14+: the interpreter's code-object generation grows whenever a code
 * object is freed, and the read-back reads it once for all the walks it
 * proves.  Here, in a steady-state sample (after the first read took the
 * generation, while the chunks are copied), the bottom frame's cached code
 * object is replaced at its address, the generation bumped: the walk made
 * with the cached entry is torn, the cache dropped, and the frame named
 * by the replacement.  Without the generation's check, the stale name came
 * back. */
typedef struct generation_bumper {
    racing_reader rr;          /* first: the change gets a pointer to it */
    uint64_t generation_at, qualname_at, qualname;
} generation_bumper;

static void replace_and_bump(racing_reader *r)
{
    const generation_bumper *g = (const generation_bumper *)r;
    uint64_t gen;
    memcpy(&gen, synth_bytes(r->img, g->generation_at, 8), 8);
    gen++;
    memcpy(synth_bytes(r->img, g->generation_at, 8), &gen, 8);
    memcpy(synth_bytes(r->img, g->qualname_at, 8), &g->qualname, 8);
}

static void code_generation_checked(size_t layout, const char *id, built *b)
{
    (void)layout;
    const fpi_layout *l = synth_layout(b->img);
    if (l->interp_code_generation == FPI_OFF_NONE)
        return;
    uint64_t f0 = synth_frame_addr(b->img, 0, 0), f3 = synth_frame_addr(b->img, 0, 3), code_a, code_u;
    memcpy(&code_a, synth_bytes(b->img, f0 + (uint64_t)l->fr_executable, 8), 8);
    memcpy(&code_u, synth_bytes(b->img, f3 + (uint64_t)l->fr_executable, 8), 8);
    code_a &= ~l->executable_tag_mask;
    code_u &= ~l->executable_tag_mask;
    uint64_t interp = first_interp(b->img);
    generation_bumper g = {.rr = racing_over(b, f3, replace_and_bump),
                           .generation_at = interp + (uint64_t)l->interp_code_generation,
                           .qualname_at = code_u + (uint64_t)l->co_qualname};
    memcpy(&g.qualname, synth_bytes(b->img, code_a + (uint64_t)l->co_qualname, 8), 8);
    fp_reader racing = {&RACING_OPS, &g.rr};
    reattach(b, &racing);
    for (int k = 0; k < 3; k++) /* warm: both threads read ahead, every code object cached */
        sample_is(id, b, 0, EXPECT_T1, 4);
    g.rr.armed = true; /* the copy of the chunk that holds the bottom frame */
    if (fp_session_sample(b->s, b->sm) != FP_OK)
        fail_msg("%s: %s", id, fp_session_get_errmsg(b->s));
    assert_false(g.rr.armed);
    const fp_thread *th = fp_sample_get_thread(b->sm, 0);
    assert_int_equal(th->frame_count, 4);
    const fp_frame *bottom = fp_sample_get_frame(b->sm, th->first_frame + 3);
    if (strcmp(bottom->function, CODE_A.qualname) != 0)
        fail_msg("%s: the replaced code object is named %s, expected %s", id, bottom->function, CODE_A.qualname);
    check_thread(id, b->sm, 1, EXPECT_T2, 3);
    reattach(b, &b->rd); /* the racing reader goes out of scope */
}

void test_code_generation_checked(void **state)
{
    (void)state;
    each_scene(code_generation_checked);
}

/* A code object first seen in a sample is read after the walk's read-back,
 * when its frame may have returned and the code object been freed and
 * replaced at its address.  Here the top frame returns just before its
 * code object's header is read, and the code object is replaced (its
 * qualname now the caller's): the walk is read back once more, found torn,
 * and walked again: the one-frame stack the thread has now.  Without that
 * read-back, the returned frame came back under the replacement's name. */
typedef struct late_replacer {
    racing_reader rr;          /* first: the change gets a pointer to it */
    synth_write w[MAX_LIFECYCLE_WRITES];
    size_t n;
    uint64_t qualname_at, qualname;
} late_replacer;

static void return_and_replace(racing_reader *r)
{
    const late_replacer *c = (const late_replacer *)r;
    for (size_t i = 0; i < c->n; i++)
        synth_apply(r->img, &c->w[i]);
    memcpy(synth_bytes(r->img, c->qualname_at, 8), &c->qualname, 8);
}

/* Arms r (the first read of a code object first seen: its header), takes
 * a sample, which must give thread 0's caller alone (CODE_A), and unbuilds b. */
static void late_race_leaves_caller(const char *id, built *b, racing_reader *r)
{
    r->armed = true;
    if (fp_session_sample(b->s, b->sm) != FP_OK)
        fail_msg("%s: %s", id, fp_session_get_errmsg(b->s));
    assert_false(r->armed);
    const fp_thread *t = fp_sample_get_thread(b->sm, 0);
    if (t->frame_count != 1)
        fail_msg("%s: %zu frames (the top one named %s), expected the caller alone", id, t->frame_count,
                 fp_sample_get_frame(b->sm, t->first_frame)->function);
    assert_string_equal(fp_sample_get_frame(b->sm, t->first_frame)->function, CODE_A.qualname);
    reattach(b, &b->rd); /* the racing reader goes out of scope */
    unbuild(b);
}

void test_late_code_read_back(void **state)
{
    (void)state;
    for (size_t i = 0; i < NLAYOUTS; i++) {
        const char *id = LAYOUTS[i];
        synth_frame frames[] = {{&CODE_LATIN1, loc_start(&CODE_LATIN1, 1), false, false, 0},
                                {&CODE_A, loc_start(&CODE_A, 1) + 1, false, false, 0}};
        synth_thread th[] = {{4242, 0x7f0000001000ull, true, frames, 2}};
        synth_desc d = {th, 1, NULL, 0};
        built b;
        build(id, &d, 0, &b);
        const fpi_layout *l = synth_layout(b.img);
        uint64_t code_top, code_bottom;
        memcpy(&code_top, synth_bytes(b.img, synth_frame_addr(b.img, 0, 0) + (uint64_t)l->fr_executable, 8), 8);
        memcpy(&code_bottom, synth_bytes(b.img, synth_frame_addr(b.img, 0, 1) + (uint64_t)l->fr_executable, 8), 8);
        code_top &= ~l->executable_tag_mask;
        code_bottom &= ~l->executable_tag_mask;
        late_replacer c = {.rr = racing_over(&b, code_top, return_and_replace),
                           .qualname_at = code_top + (uint64_t)l->co_qualname};
        memcpy(&c.qualname, synth_bytes(b.img, code_bottom + (uint64_t)l->co_qualname, 8), 8);
        assert_int_equal(synth_plan_move(b.img, 0, 1, NULL, 0, c.w, MAX_LIFECYCLE_WRITES, &c.n), 0);
        fp_reader racing = {&RACING_OPS, &c.rr};
        reattach(&b, &racing);
        late_race_leaves_caller(id, &b, &c.rr); /* at the first read of the top frame's code object */
    }
}

/* The same, on the batched path: the two threads' list was read ahead by
 * warm samples, so the interpreter's walks are read back together; then the
 * thread calls a function never seen before, and returns from it (its code
 * object replaced) just before that code object is first read, after the
 * batch's read-back.  The batch must read its walks back once more. */
void test_late_code_read_back_batched(void **state)
{
    (void)state;
    for (size_t i = 0; i < NLAYOUTS; i++) {
        const char *id = LAYOUTS[i];
        synth_frame frames[] = {{&CODE_A, loc_start(&CODE_A, 1) + 1, false, false, 0}};
        synth_frame other[] = {{&CODE_UCS2, 0, false, false, 0}};
        synth_frame callee = {&CODE_LATIN1, loc_start(&CODE_LATIN1, 1), false, false, 0};
        synth_thread th[] = {{4242, 0x7f0000001000ull, true, frames, 1}, {4243, 0x7f0000002000ull, false, other, 1}};
        synth_desc d = {th, 2, &CODE_LATIN1, 1};
        built b;
        build(id, &d, 0, &b);
        const fpi_layout *l = synth_layout(b.img);
        late_replacer c = {.rr = racing_over(&b, 0, return_and_replace)};
        fp_reader racing = {&RACING_OPS, &c.rr};
        reattach(&b, &racing);
        for (int k = 0; k < 3; k++) /* warm: the thread list is read ahead */
            sample_is(id, &b, 0, (expect_frame[]){{&CODE_A, 1, 2, false}}, 1);
        synth_write call[MAX_LIFECYCLE_WRITES];
        size_t ncall = 0;
        assert_int_equal(synth_plan_move(b.img, 0, 0, &callee, 1, call, MAX_LIFECYCLE_WRITES, &ncall), 0);
        for (size_t w = 0; w < ncall; w++)
            synth_apply(b.img, &call[w]);
        /* The callee's code object, found by a session of its own (this
         * one must not see it before the race). */
        fp_session *peek;
        fp_options o;
        fp_options_init(&o);
        fp_target_desc td;
        synth_target(b.img, &td);
        assert_int_equal(fp_session_new(&o, &peek), FP_OK);
        assert_int_equal(fp_session_attach_reader(peek, &b.rd, &td), FP_OK);
        if (fp_session_sample(peek, b.sm) != FP_OK)
            fail_msg("%s: a sample of the callee: %s", id, fp_session_get_errmsg(peek));
        const fp_thread *t = fp_sample_get_thread(b.sm, 0);
        assert_int_equal(t->frame_count, 2);
        uint64_t code_top = fp_sample_get_frame(b.sm, t->first_frame)->code_addr;
        uint64_t code_bottom = fp_sample_get_frame(b.sm, t->first_frame + 1)->code_addr;
        fp_session_free(peek);
        c.rr.watch = code_top;
        c.qualname_at = code_top + (uint64_t)l->co_qualname;
        memcpy(&c.qualname, synth_bytes(b.img, code_bottom + (uint64_t)l->co_qualname, 8), 8);
        assert_int_equal(synth_plan_move(b.img, 0, 1, NULL, 0, c.w, MAX_LIFECYCLE_WRITES, &c.n), 0);
        late_race_leaves_caller(id, &b, &c.rr); /* at the first read of the callee's code object */
    }
}

/* 3.13: the caller under the first thread's top returns between the copy
 * and the read-back (its stack depth cleared, the rest of its slot as it
 * was). */
static void caller_cleared(racing_reader *r)
{
    uint32_t zero = 0;
    memcpy(synth_bytes(r->img, r->watch + (uint64_t)r->l->fr_stacktop, 4), &zero, 4);
}

/* A suspended frame's stack depth is read back with it (3.11-3.13): a
 * caller copied in use and read back cleared (3.13) has returned, and the
 * thread is torn, not returned with it (a read-back that skips the depth
 * passes it).  (The top's depth is not read back: it changes whenever the
 * top calls, and the walk checks the copy's.) */
void test_cleared_between_reads(void **state)
{
    (void)state;
    int checked = 0;
    for (size_t i = 0; i < NLAYOUTS; i++) {
        const char *id = LAYOUTS[i];
        scene sc;
        built b;
        build_scene(id, 0, &sc, &b);
        racing_reader rr = racing_over(&b, synth_frame_addr(b.img, 0, 2), caller_cleared);
        if (rr.l->co_nlocalsplus == FPI_OFF_NONE) {
            unbuild(&b);
            continue;
        }
        fp_reader racing = {&RACING_OPS, &rr};
        reattach(&b, &racing);
        assert_int_equal(fp_session_sample(b.s, b.sm), FP_OK);
        rr.armed = true;
        rr.skip = 1; /* the copy reads the caller in use; it returns before the read-back */
        int rc = fp_session_sample(b.s, b.sm);
        assert_false(rr.armed);
        if (rc == FP_OK && fp_sample_get_thread(b.sm, 0)->error == 0)
            fail_msg("%s: a caller that returned under the walk was returned as part of the stack", id);
        assert_int_equal(fp_sample_get_thread(b.sm, 0)->error, FP_E_INCOMPLETE);
        check_thread(id, b.sm, 1, EXPECT_T2, 3);
        unbuild(&b);
        checked++;
    }
    assert_int_equal(checked, 2); /* 3.13 and 3.13t */
}
