/* test_synth_thread_list.c — synthetic images: the thread list changing
 * under a sample: frameless states recreated, threads started in front,
 * bounded restarts, threads starting and exiting, a head not set up, states
 * with the main thread's ids. */
#include "synth_fixture.h"
#include "synth_tests.h"

/* The head thread state is unlinked, freed and allocated again for a new
 * thread that is not linked yet (no frames, no next link). */
static void head_recreated(racing_reader *r)
{
    uint64_t zero = 0;
    memcpy(synth_bytes(r->img, r->interp + (uint64_t)r->l->interp_threads_head, 8), &r->other, 8);
    memcpy(synth_bytes(r->img, r->ts + (uint64_t)r->l->ts_next, 8), &zero, 8);
}

/* A thread state with no frames is read back like any other: copied while
 * it was being re-created at the same address, its empty next link would
 * otherwise end the thread list early and drop every thread after it
 * (3.15: the main thread missing from a sample returned as good). */
void test_frameless_thread_recreated(void **state)
{
    (void)state;
    for (size_t i = 0; i < NLAYOUTS; i++) {
        const char *id = LAYOUTS[i];
        synth_frame main_frames[] = {{&CODE_A, 0, false, false, 0}};
        synth_thread th[] = {{4243, 0x7f0000002000ull, false, NULL, 0},
                             {4242, 0x7f0000001000ull, true, main_frames, 1}};
        synth_desc d = {th, 2, NULL, 0};
        /* The change lands when the state is read (pass 0, 1: the second
         * reads ahead), or later, at the read-back of the main thread, whose
         * link the re-created state holds (pass 2, 3): followed as it is
         * then, that empty link lost the main thread (ci/live thread_churn,
         * debug builds, with the walk going on from a moved link). */
        for (int pass = 0; pass < 4; pass++) {
            int primed = pass % 2;
            built b;
            build(id, &d, 0, &b);
            racing_reader rr = racing_over(&b, synth_thread_state_addr(b.img, 0), head_recreated);
            if (pass >= 2) {
                rr.watch = synth_frame_addr(b.img, 1, 0);
                rr.skip = 1; /* its copy, then its read-back */
            }
            rr.interp = first_interp(b.img);
            rr.ts = synth_thread_state_addr(b.img, 0);
            rr.other = synth_thread_state_addr(b.img, 1);
            fp_reader racing = {&RACING_OPS, &rr};
            reattach(&b, &racing);
            if (primed) {
                assert_int_equal(fp_session_sample(b.s, b.sm), FP_OK);
                assert_int_equal(fp_sample_get_thread_count(b.sm), 2);
            }
            rr.armed = true;
            int rc = fp_session_sample(b.s, b.sm);
            assert_false(rr.armed);
            /* The re-created state is torn (it left the list); the walk goes
             * on from the head as it is now: the main thread alone. */
            if (rc != FP_OK || fp_sample_get_thread_count(b.sm) != 1 ||
                fp_sample_get_thread(b.sm, 0)->native_id != 4242)
                fail_msg("%s (pass %d): a sample of %zu thread(s) returned %s, expected the main thread alone", id,
                         pass, fp_sample_get_thread_count(b.sm), fp_error_describe(rc));
            fp_read_stats st;
            assert_int_equal(fp_session_get_read_stats(b.s, &st), FP_OK);
            assert_true(st.torn >= 1);
            unbuild(&b);
        }
    }
}

/* A new thread's state becomes the list's head in front of the thread
 * being walked (its link, the head, names the new state from then on). */
static void head_pushed(racing_reader *r)
{
    memcpy(synth_bytes(r->img, r->interp + (uint64_t)r->l->interp_threads_head, 8), &r->other, 8);
}

/* A thread started in front of the walked one while it was read: every
 * retry through the same link would tear the same way, so the walk makes
 * one attempt and the list is walked again from its head, with the new
 * thread (ci/live thread_churn, colocated: 8 attempts, each torn, per
 * thread started during a sample). */
void test_thread_started_in_front(void **state)
{
    (void)state;
    for (size_t i = 0; i < NLAYOUTS; i++) {
        const char *id = LAYOUTS[i];
        synth_frame main_frames[] = {{&CODE_A, 0, false, false, 0}, {&CODE_LATIN1, 0, false, false, 0}};
        synth_thread th[] = {{4243, 0x7f0000002000ull, false, NULL, 0},
                             {4242, 0x7f0000001000ull, true, main_frames, 2}};
        synth_desc d = {th, 2, NULL, 0};
        built b;
        build(id, &d, 0, &b);
        racing_reader rr = racing_over(&b, synth_frame_addr(b.img, 1, 0), head_pushed);
        rr.interp = first_interp(b.img);
        rr.other = synth_thread_state_addr(b.img, 0);
        /* Not started yet: the head is the main thread's state (the new
         * one already names it as its next, as a state pushed at the head
         * does). */
        uint64_t main_ts = synth_thread_state_addr(b.img, 1);
        memcpy(synth_bytes(b.img, rr.interp + (uint64_t)rr.l->interp_threads_head, 8), &main_ts, 8);
        rr.count_at = rr.interp + (uint64_t)rr.l->interp_threads_head;
        fp_reader racing = {&RACING_OPS, &rr};
        reattach(&b, &racing);
        rr.armed = true;
        int rc = fp_session_sample(b.s, b.sm);
        assert_false(rr.armed);
        if (rc != FP_OK || fp_sample_get_thread_count(b.sm) != 2)
            fail_msg("%s: a sample of %zu thread(s) returned %s, expected both threads", id,
                     fp_sample_get_thread_count(b.sm), fp_error_describe(rc));
        /* The link (here the list head) is read after the change by the
         * walk's read-back (it names another), by the check that it still
         * does, and by the new head thread's read-back: the restart takes
         * the check's verdict, and the head the check read, rather than
         * reading the link again (the builds before read it 5 and 4 times). */
        if (rr.counted != 3)
            fail_msg("%s: the moved link was read %u times after the change, expected 3", id, rr.counted);
        const fp_thread *mt = fp_sample_get_thread(b.sm, 1);
        if (mt->native_id != 4242 || mt->error || mt->frame_count != 2)
            fail_msg("%s: the main thread came back as %llu with %zu frames (%s)", id,
                     (unsigned long long)mt->native_id, mt->frame_count, fp_error_describe(mt->error));
        fp_read_stats st;
        assert_int_equal(fp_session_get_read_stats(b.s, &st), FP_OK);
        if (st.torn != 1)
            fail_msg("%s: %llu torn walks, expected 1 (no retry through the moved link)", id,
                     (unsigned long long)st.torn);
        unbuild(&b);
    }
}

/* The head thread exits and another starts in front of the main thread,
 * each time the head's state is read (re-armed for the new head, until
 * MAX_HEAD_SWAPS): every walk of the list tears at its head. */
#define MAX_HEAD_SWAPS 64u

static void head_swapped(racing_reader *r)
{
    uint64_t now = r->watch == r->ts ? r->other : r->ts;
    memcpy(synth_bytes(r->img, r->interp + (uint64_t)r->l->interp_threads_head, 8), &now, 8);
    if (r->changes < MAX_HEAD_SWAPS) {
        r->watch = now;
        r->skip = 0;
        r->armed = true;
    }
}

/* Two threads other than the main one (4243, 4244, each running
 * `others`), then the main thread (4242, one frame), last in the list. */
static void build_main_last(const char *id, const synth_frame *others, size_t nothers, built *b)
{
    synth_frame main_frames[] = {{&CODE_A, 0, false, false, 0}};
    synth_thread th[] = {{4243, 0x7f0000002000ull, false, others, nothers},
                         {4244, 0x7f0000003000ull, false, others, nothers},
                         {4242, 0x7f0000001000ull, true, main_frames, 1}};
    synth_desc d = {th, 3, NULL, 0};
    build(id, &d, 0, b);
}

/* A thread list that changes under every walk of it is walked again from
 * its head a bounded number of times (FPI_THREAD_LIST_RESTARTS), then the
 * sample is rejected as incomplete: never a sample without the thread in
 * front, and never a walk that goes on as long as the list keeps moving. */
void test_thread_list_restarts_bounded(void **state)
{
    (void)state;
    for (size_t i = 0; i < NLAYOUTS; i++) {
        const char *id = LAYOUTS[i];
        built b;
        build_main_last(id, NULL, 0, &b);
        uint64_t first = synth_thread_state_addr(b.img, 0), second = synth_thread_state_addr(b.img, 1);
        uint64_t main_ts = synth_thread_state_addr(b.img, 2);
        racing_reader rr = racing_over(&b, first, head_swapped);
        rr.interp = first_interp(b.img);
        rr.ts = first;
        rr.other = second;
        /* Either one in front: both name the main thread as their next. */
        memcpy(synth_bytes(b.img, second + (uint64_t)rr.l->ts_next, 8), &main_ts, 8);
        memcpy(synth_bytes(b.img, first + (uint64_t)rr.l->ts_next, 8), &main_ts, 8);
        fp_reader racing = {&RACING_OPS, &rr};
        reattach(&b, &racing);
        rr.armed = true;
        int rc = fp_session_sample(b.s, b.sm);
        if (rc != FP_E_INCOMPLETE)
            fail_msg("%s: a list moving under every walk gave %s with %zu thread(s), expected incomplete", id,
                     fp_error_describe(rc), fp_sample_get_thread_count(b.sm));
        if (fp_sample_is_usable(b.sm, rc))
            fail_msg("%s: a list that could not be walked to its end was usable", id);
        /* The first walk and every walk again from the head: each read
         * the head's state once and moved the head. */
        if (rr.changes != FPI_THREAD_LIST_RESTARTS + 1)
            fail_msg("%s: the list's head was read and moved %u times, expected %u", id, rr.changes,
                     FPI_THREAD_LIST_RESTARTS + 1);
        unbuild(&b);
    }
}

static void apply_all(built *b, const synth_write *w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        synth_apply(b->img, &w[i]);
}

/* The threads' scene: the main thread (native id 4242, one frame) and
 * another (4243, two frames). */
static void build_lifecycle(const char *id, built *b)
{
    synth_frame main_frames[] = {{&CODE_A, 0, false, false, 0}};
    synth_frame other_frames[] = {{&CODE_A, 0, false, false, 0}, {&CODE_A, 0, false, false, 0}};
    synth_thread th[] = {{4242, 0x7f0000001000ull, true, main_frames, 1},
                         {4243, 0x7f0000002000ull, false, other_frames, 2}};
    synth_desc d = {th, 2, NULL, 0};
    build(id, &d, 0, b);
}

/* Warm samples after which a sample of three threads is the batched walk:
 * one read for the list, the threads and their read-back (the second and
 * third sample still read the list and the threads apart;
 * test_main_unlisted checks it). */
#define WARM_BATCHED 4

/* Runs `body` on the threads' scene of every layout, cold, after two
 * samples (which read the thread list ahead) and after WARM_BATCHED;
 * unbuilt after. */
typedef void (*lifecycle_case)(const char *id, int warm, built *b);

static void each_lifecycle(lifecycle_case body)
{
    for (size_t i = 0; i < NLAYOUTS; i++)
        for (int warm = 0; warm <= WARM_BATCHED; warm += 2) {
            built b;
            build_lifecycle(LAYOUTS[i], &b);
            body(LAYOUTS[i], warm, &b);
            unbuild(&b);
        }
}

void test_thread_exit_and_start(void **state)
{
    (void)state;
    for (size_t i = 0; i < NLAYOUTS; i++) {
        const char *id = LAYOUTS[i];
        built b;
        build_lifecycle(id, &b);
        synth_write w[MAX_LIFECYCLE_WRITES];
        size_t n = 0;
        assert_int_equal(fp_session_sample(b.s, b.sm), FP_OK);
        assert_int_equal(fp_sample_get_thread_count(b.sm), 2);
        assert_int_not_equal(synth_plan_thread_exit(b.img, 0, w, MAX_LIFECYCLE_WRITES, &n), 0); /* main */
        assert_int_equal(synth_plan_thread_exit(b.img, 1, w, MAX_LIFECYCLE_WRITES, &n), 0);
        apply_all(&b, w, n);
        assert_int_equal(fp_session_sample(b.s, b.sm), FP_OK);
        assert_int_equal(fp_sample_get_thread_count(b.sm), 1);
        assert_int_equal(fp_sample_get_thread(b.sm, 0)->native_id, 4242);
        n = 0;
        assert_int_not_equal(synth_plan_advance(b.img, 1, 1, w, MAX_LIFECYCLE_WRITES, &n), 0);
        assert_int_not_equal(synth_plan_move(b.img, 1, 1, NULL, 0, w, MAX_LIFECYCLE_WRITES, &n), 0);
        assert_int_equal(synth_plan_thread_start(b.img, 1, 4243, NEW_THREAD_ID, w, MAX_LIFECYCLE_WRITES, &n), 0);
        apply_all(&b, w, n);
        for (int pass = 0; pass < 2; pass++) { /* cold, then reading ahead */
            if (fp_session_sample(b.s, b.sm) != FP_OK)
                fail_msg("%s: after a thread started: %s", id, fp_session_get_errmsg(b.s));
            assert_int_equal(fp_sample_get_thread_count(b.sm), 2);
            const fp_thread *t0 = fp_sample_get_thread(b.sm, 0), *t1 = fp_sample_get_thread(b.sm, 1);
            assert_int_equal(t0->native_id, 4243);
            assert_int_equal(t0->thread_id, NEW_THREAD_ID);
            assert_false(t0->main);
            assert_int_equal(t0->frame_count, 0);
            assert_int_equal(t1->native_id, 4242);
            assert_true(t1->main);
            assert_int_equal(t1->frame_count, 1);
        }
        unbuild(&b);
    }
}

/* A thread exits while the sample reads it (unlinked between its copy and
 * its read-back, its state freed): the link that led to it leads past it
 * now, so the sample goes on without it and is good — the thread is not
 * in the list at the instant the rest of the sample was proven.  It was
 * rejected as incomplete after every attempt (ci/live thread_churn: a
 * worker exiting under the walk).  Cold and reading ahead. */
typedef struct exiting_reader {
    racing_reader rr;          /* first: the change gets a pointer to it */
    synth_write w[MAX_LIFECYCLE_WRITES];
    size_t n;
} exiting_reader;

static void thread_exits(racing_reader *r)
{
    const exiting_reader *e = (const exiting_reader *)r;
    for (size_t i = 0; i < e->n; i++)
        synth_apply(r->img, &e->w[i]);
}

static void thread_exits_during_walk(const char *id, int warm, built *b)
{
    exiting_reader er = {.rr = racing_over(b, synth_frame_addr(b->img, 1, 0), thread_exits)};
    assert_int_equal(synth_plan_thread_exit(b->img, 1, er.w, MAX_LIFECYCLE_WRITES, &er.n), 0);
    fp_reader racing = {&RACING_OPS, &er.rr};
    reattach(b, &racing);
    for (int k = 0; k < warm; k++)
        assert_int_equal(fp_session_sample(b->s, b->sm), FP_OK);
    er.rr.armed = true;
    er.rr.skip = 1; /* the copy reads the frame; the thread exits before the read-back */
    if (fp_session_sample(b->s, b->sm) != FP_OK)
        fail_msg("%s (after %d samples): %s", id, warm, fp_session_get_errmsg(b->s));
    assert_false(er.rr.armed);
    assert_int_equal(fp_sample_get_thread_count(b->sm), 1);
    assert_int_equal(fp_sample_get_thread(b->sm, 0)->native_id, 4242);
    assert_int_equal(fp_sample_get_thread(b->sm, 0)->frame_count, 1);
    fp_read_stats st;
    assert_int_equal(fp_session_get_read_stats(b->s, &st), FP_OK);
    assert_true(st.torn >= 1);
    reattach(b, &b->rd); /* the racing reader goes out of scope */
}

void test_thread_exits_during_walk(void **state)
{
    (void)state;
    each_lifecycle(thread_exits_during_walk);
}

/* 3.11's new_threadstate makes a new thread state the list's head before
 * it sets it up: its interpreter, next link and ids are still the
 * template's zeros.  A sample that meets the list so (its thread stopped in
 * that window, as in blocking mode) is incomplete, never a good sample of
 * one frameless thread without the main thread (ci/live thread_churn, 3.11,
 * blocking).  Cold, then after samples that read the list ahead. */
static void head_not_set_up(const char *id, int warm, built *b)
{
    for (int k = 0; k < warm; k++)
        assert_int_equal(fp_session_sample(b->s, b->sm), FP_OK);
    const fpi_layout *l = synth_layout(b->img);
    uint64_t interp = first_interp(b->img), ts = synth_thread_state_addr(b->img, 1), zero = 0;
    int32_t template_zeros[] = {l->ts_interp, l->ts_next, l->ts_native_thread_id, l->ts_thread_id};
    for (size_t f = 0; f < sizeof template_zeros / sizeof template_zeros[0]; f++)
        memcpy(synth_bytes(b->img, ts + (uint64_t)template_zeros[f], 8), &zero, 8);
    memcpy(synth_bytes(b->img, interp + (uint64_t)l->interp_threads_head, 8), &ts, 8);
    int rc = fp_session_sample(b->s, b->sm);
    if (rc != FP_E_INCOMPLETE)
        fail_msg("%s (after %d samples): %s with %zu threads, expected an incomplete sample", id, warm,
                 rc ? fp_error_describe(rc) : "a good sample", fp_sample_get_thread_count(b->sm));
    /* The state being set up is in the sample as a thread that failed, torn;
     * a thread left without an error would read as good (ids 0/0, no frames). */
    size_t unset = 0;
    for (size_t k = 0; k < fp_sample_get_thread_count(b->sm); k++) {
        const fp_thread *t = fp_sample_get_thread(b->sm, k);
        if (t->native_id == 0 && t->thread_id == 0) {
            unset++;
            if (t->error != FP_E_INCOMPLETE)
                fail_msg("%s (after %d samples): the state being set up is thread %zu with error %d, expected %d",
                         id, warm, k, t->error, FP_E_INCOMPLETE);
        }
    }
    assert_int_equal(unset, 1);
    /* The list ends at the state being set up: the main thread is not in
     * the sample and no error names it, so the sample is not usable. */
    if (fp_sample_is_usable(b->sm, rc))
        fail_msg("%s (after %d samples): a sample without its main thread was usable", id, warm);
}

void test_head_not_set_up(void **state)
{
    (void)state;
    each_lifecycle(head_not_set_up);
}

/* A thread state created by the main thread for a thread that has not
 * started yet carries the main thread's ids (3.11: both thread id and
 * native id): only the interpreter's threads.main is the main thread (the
 * ids alone made such a state a second, frameless main thread, seen live
 * on 3.11 thread_churn). */
void test_new_thread_with_main_ids(void **state)
{
    (void)state;
    for (size_t i = 0; i < NLAYOUTS; i++) {
        const char *id = LAYOUTS[i];
        synth_frame main_frames[] = {{&CODE_A, 0, false, false, 0}};
        synth_thread th[] = {{4242, 0x7f0000001000ull, false, NULL, 0},
                             {4242, 0x7f0000001000ull, true, main_frames, 1}};
        synth_desc d = {th, 2, NULL, 0};
        built b;
        build(id, &d, 0, &b);
        if (fp_session_sample(b.s, b.sm))
            fail_msg("%s: %s", id, fp_session_get_errmsg(b.s));
        size_t mains = 0;
        for (size_t k = 0; k < fp_sample_get_thread_count(b.sm); k++) {
            const fp_thread *t = fp_sample_get_thread(b.sm, k);
            if (t->main && t->frame_count != 1)
                fail_msg("%s: thread %zu (%zu frames) taken for the main thread", id, k, t->frame_count);
            mains += t->main;
        }
        if (mains != 1)
            fail_msg("%s: %zu main threads", id, mains);
        unbuild(&b);
    }
}

/* A reader that sets an 8-byte word at `watch` to `value` when the walk
 * first reads that word alone (not within a larger range). */
typedef struct word_flip_reader {
    fp_reader inner;
    synth_image *img;
    uint64_t watch, value;
    bool done;
} word_flip_reader;

static int word_flip_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    word_flip_reader *r = ctx;
    if (!r->done && addr == r->watch && len == WORD_READ) {
        r->done = true;
        memcpy(synth_bytes(r->img, r->watch, WORD_READ), &r->value, WORD_READ);
    }
    return fp_reader_read(&r->inner, addr, buf, len);
}

static const fp_reader_ops WORD_FLIP_OPS = {.name = "word-flipping synthetic image", .read = word_flip_read};

/* 3.11, 3.12 (the main thread known by its ids): a thread state made for
 * a thread not started yet carries its creator's ids and no frames, and
 * sits at the list's head, before the main thread's own.  A walk that
 * does not reach the list's end (here: the thread after it fails, and its
 * next link changes before the list is followed on) must not return that
 * state as the main thread (ci/live thread_churn, 3.11: 4 wrong samples in
 * 20 million, a frameless "main thread" beside a thread that exited). */
void test_unstarted_state_not_main(void **state)
{
    (void)state;
    for (size_t i = 0; i < NLAYOUTS; i++) {
        const char *id = LAYOUTS[i];
        synth_frame w_frames[] = {{&CODE_A, 0, false, false, 0}};
        synth_frame main_frames[] = {{&CODE_LATIN1, 0, false, false, 0}};
        synth_thread th[] = {{4242, 0x7f0000001000ull, false, NULL, 0},
                             {4300, 0x7f0000003000ull, false, w_frames, 1},
                             {4242, 0x7f0000001000ull, true, main_frames, 1}};
        synth_desc d = {th, 3, NULL, 0};
        built b;
        build(id, &d, 0, &b);
        const fpi_layout *l = synth_layout(b.img);
        uint64_t w_ts = synth_thread_state_addr(b.img, 1), bogus = synth_thread_state_addr(b.img, 0);
        /* The worker's frame names no code object: its walk fails. */
        memcpy(synth_bytes(b.img, synth_frame_addr(b.img, 1, 0) + (uint64_t)l->fr_executable, 8), &bogus, 8);
        word_flip_reader fr = {.inner = b.rd, .img = b.img, .watch = w_ts + (uint64_t)l->ts_next, .value = bogus};
        fp_reader rd = {&WORD_FLIP_OPS, &fr};
        reattach(&b, &rd);
        int rc = fp_session_sample(b.s, b.sm);
        if (rc != FP_E_INCOMPLETE)
            fail_msg("%s: sampled as %d (%s), expected incomplete", id, rc, fp_session_get_errmsg(b.s));
        assert_true(fr.done);
        for (size_t k = 0; k < fp_sample_get_thread_count(b.sm); k++) {
            const fp_thread *t = fp_sample_get_thread(b.sm, k);
            if (t->main && t->frame_count != 1)
                fail_msg("%s: thread %zu (%zu frames, error %d) returned as the main thread", id, k,
                         t->frame_count, t->error);
        }
        /* Nor, known by the ids alone, as a good thread that is not the
         * main one: it may be the main thread itself, frameless. */
        const fp_thread *head = fp_sample_get_thread(b.sm, 0);
        if (l->interp_threads_main == FPI_OFF_NONE && (head->native_id != 4242 || head->error != FP_E_INCOMPLETE))
            fail_msg("%s: the frameless state with the main thread's ids came back with error %d", id, head->error);
        unbuild(&b);
    }
}

/* Three threads, every one good, the main thread last in the list: after
 * warm samples the walk reads the list ahead and, its head unchanged,
 * proves the threads it found all at once with one read-back.  The main
 * thread's state leaves the list.  However the threads were walked, a list that
 * lacks its main thread makes the sample incomplete and not usable; it is
 * never a good sample of the other threads. */
static void main_unlisted(const char *id, int warm)
{
    synth_frame other_frames[] = {{&CODE_A, 0, false, false, 0}, {&CODE_A, 0, false, false, 0}};
    built b;
    build_main_last(id, other_frames, 2, &b);
    fp_read_stats st0 = {0}, st = {0};
    for (int k = 0; k < warm; k++) {
        assert_int_equal(fp_session_get_read_stats(b.s, &st0), FP_OK);
        assert_int_equal(fp_session_sample(b.s, b.sm), FP_OK);
    }
    /* Warm, the last sample was the batched walk. */
    assert_int_equal(fp_session_get_read_stats(b.s, &st), FP_OK);
    if (warm >= WARM_BATCHED && st.calls - st0.calls != 1)
        fail_msg("%s: a warm sample of three threads took %llu reads, not the batched walk's one", id,
                 (unsigned long long)(st.calls - st0.calls));
    /* The main thread's state leaves the list, the others' links kept. */
    const fpi_layout *l = synth_layout(b.img);
    uint64_t main_ts = synth_thread_state_addr(b.img, 2), link = first_interp(b.img) + (uint64_t)l->interp_threads_head;
    for (int hops = 0; hops < 3; hops++) {
        uint64_t ts;
        memcpy(&ts, synth_bytes(b.img, link, 8), 8);
        if (ts == main_ts) {
            memcpy(synth_bytes(b.img, link, 8), synth_bytes(b.img, ts + (uint64_t)l->ts_next, 8), 8);
            break;
        }
        link = ts + (uint64_t)l->ts_next;
    }
    int rc = fp_session_sample(b.s, b.sm);
    if (rc != FP_E_INCOMPLETE || fp_sample_is_usable(b.sm, rc))
        fail_msg("%s (after %d samples): a list without its main thread came back as %s (%zu threads)%s", id, warm,
                 rc ? fp_error_describe(rc) : "a good sample", fp_sample_get_thread_count(b.sm),
                 rc ? ", usable" : "");
    unbuild(&b);
}

void test_main_unlisted(void **state)
{
    (void)state;
    for (size_t i = 0; i < NLAYOUTS; i++)
        for (int warm = 0; warm <= WARM_BATCHED; warm += WARM_BATCHED)
            main_unlisted(LAYOUTS[i], warm);
}
