/* test_synth_read_retry.c — synthetic images: reads after a tear: the
 * batched read-back torn, a retry in one read, read-ahead ranges that
 * moved, a thread-local bytecode array that moved, an unreadable batch. */
#include "synth_fixture.h"
#include "synth_tests.h"

/* The top frame of the first thread runs another function from now on. */
static void top_frame_replaced(racing_reader *r)
{
    const fpi_layout *l = r->l;
    memcpy(synth_bytes(r->img, r->ts + (uint64_t)l->fr_executable, 8),
           synth_bytes(r->img, r->other + (uint64_t)l->fr_executable, 8), 8);
    memcpy(synth_bytes(r->img, r->ts + (uint64_t)l->fr_instr_ptr, 8),
           synth_bytes(r->img, r->other + (uint64_t)l->fr_instr_ptr, 8), 8);
}

/* Samples after which the batched path reads every thread in its one
 * steady-state read.  3.14t and 3.15t need one more: their second sample
 * reads the thread-local bytecode entries fresh between its two read-backs, and a
 * read-back is recorded for reading ahead only while nothing else was read,
 * so the read-back owed after its frames is read ahead from the fourth. */
static int steady_after(const char *id)
{
    return has_tlbc(id) ? 4 : 3;
}

/* The thread's native id changes (as when its state is reused by a new
 * thread): its walk is torn, with every range it read unchanged. */
static void native_id_changed(racing_reader *r)
{
    uint8_t *at = synth_bytes(r->img, r->ts + (uint64_t)r->l->ts_native_thread_id, 8);
    uint64_t id;
    memcpy(&id, at, 8);
    id++;
    memcpy(at, &id, 8);
}

/* A walk torn by a running thread is retried in one read: the thread
 * state, its chunks where the torn attempt found them and, after them,
 * the torn attempt's read-backs (retry_read.c), which the retry's
 * read-backs take in place when they plan the same ranges.  One thread, in
 * its steady state (one read a sample); its thread state changes between
 * the copy and the read-back: the sample makes the torn first read and
 * the retry's one read (3.11, 3.15; read afresh, six on 3.11).  On
 * 3.12-3.14 the retry still reads on its own what the sample's first read
 * brought from the frame cache (a frame outside the data stack), and its
 * read-backs are then read on their own too; with thread-local bytecode
 * (3.14t, 3.15t) the retry resolves that afresh. */
static const unsigned RETRY_SAMPLE_READS[] = {2, 5, 5, 5, 5, 8, 2, 6};

static void retry_in_one_read(size_t layout, const char *id, built *b)
{
    (void)layout;
    uint64_t ts = synth_thread_state_addr(b->img, 0);
    racing_reader rr = racing_over(b, ts, native_id_changed);
    rr.ts = ts;
    fp_reader racing = {&RACING_OPS, &rr};
    reattach(b, &racing);
    retry_heard heard = {0, 0};
    assert_int_equal(fp_session_set_retry_hook(b->s, on_retry, &heard), FP_OK);
    assert_int_equal(fp_session_set_retry_hook(NULL, on_retry, &heard), FP_E_INVALID_ARG);
    fp_retry_hook got = NULL;
    void *got_ctx = NULL;
    assert_int_equal(fp_session_get_retry_hook(b->s, &got, &got_ctx), FP_OK);
    assert_ptr_equal(got, on_retry);
    assert_ptr_equal(got_ctx, &heard);
    assert_int_equal(fp_session_get_retry_hook(NULL, &got, &got_ctx), FP_E_INVALID_ARG);
    assert_int_equal(fp_session_get_retry_hook(b->s, NULL, &got_ctx), FP_E_INVALID_ARG);
    assert_int_equal(fp_session_get_retry_hook(b->s, &got, NULL), FP_E_INVALID_ARG);
    fp_read_stats st0, st;
    for (int k = 0; k < steady_after(id); k++) {
        assert_int_equal(fp_session_get_read_stats(b->s, &st0), FP_OK);
        if (fp_session_sample(b->s, b->sm) != FP_OK)
            fail_msg("%s: %s", id, fp_session_get_errmsg(b->s));
    }
    assert_int_equal(fp_session_get_read_stats(b->s, &st), FP_OK);
    if (st.calls - st0.calls != 1)
        fail_msg("%s: %llu reads in the steady state, not one", id, (unsigned long long)(st.calls - st0.calls));
    uint64_t before = fp_sample_get_thread(b->sm, 0)->native_id;
    rr.armed = true;
    rr.skip = 1; /* the copy reads the thread state; the change comes before the read-back */
    st0 = st;
    if (fp_session_sample(b->s, b->sm) != FP_OK)
        fail_msg("%s: %s", id, fp_session_get_errmsg(b->s));
    assert_false(rr.armed);
    assert_int_equal(fp_session_get_read_stats(b->s, &st), FP_OK);
    if (st.torn - st0.torn != 1 || st.calls - st0.calls != RETRY_SAMPLE_READS[layout])
        fail_msg("%s: a walk torn once: %llu torn, %llu reads in the sample, expected 1 and %u", id,
                 (unsigned long long)(st.torn - st0.torn), (unsigned long long)(st.calls - st0.calls),
                 RETRY_SAMPLE_READS[layout]);
    assert_int_equal(fp_sample_get_thread(b->sm, 0)->error, FP_OK);
    assert_int_equal(fp_sample_get_thread(b->sm, 0)->frame_count, 3);
    assert_int_equal(fp_sample_get_thread(b->sm, 0)->native_id, before + 1);
    /* The hook heard of the torn walk once, before its retry, with the
     * thread's native id as the torn walk read it; of nothing before. */
    if (heard.calls != 1 || heard.native_id != before)
        fail_msg("%s: the retry hook was called %u times (last with native id %llu), expected once with %llu", id,
                 heard.calls, (unsigned long long)heard.native_id, (unsigned long long)before);
    assert_int_equal(fp_session_set_retry_hook(b->s, NULL, &heard), FP_OK);
    assert_int_equal(fp_session_get_retry_hook(b->s, &got, &got_ctx), FP_OK); /* removed: no context kept either */
    assert_null(got);
    assert_null(got_ctx);
    reattach(b, &b->rd);
    print_message("# %s: a torn walk retried in one read, its read-back taken from it\n", id);
}

void test_retry_in_one_read(void **state)
{
    (void)state;
    each_chain_scene(retry_in_one_read);
}

/* Threads read ahead are read back together, in one batch; a thread that
 * changed between its copy and that read-back must not be returned as it
 * was copied: the sample is walked again, thread by thread, and gives what
 * the thread runs now.  After one sample the read-backs are read on their
 * own; in the steady state (steady_after), with the sample's first read,
 * right after the copy (readback_ahead.c: the whole sample is that one
 * read): the change lands between the two inside that read. */
void test_batched_read_back_torn(void **state)
{
    (void)state;
    for (size_t i = 0; i < NLAYOUTS; i++) {
        const char *id = LAYOUTS[i];
        const int steady = steady_after(id);
        for (int warm = 1; warm <= steady; warm += steady - 1) {
            scene sc;
            built b;
            build_scene(id, 0, &sc, &b);
            racing_reader rr = racing_over(&b, synth_frame_addr(b.img, 0, 0), top_frame_replaced);
            rr.ts = rr.watch;
            rr.other = synth_frame_addr(b.img, 0, 3);
            fp_reader racing = {&RACING_OPS, &rr};
            reattach(&b, &racing);
            retry_heard heard = {0, 0};
            assert_int_equal(fp_session_set_retry_hook(b.s, on_retry, &heard), FP_OK);
            fp_read_stats st, st0;
            for (int k = 0; k < warm; k++) { /* the next one reads both threads ahead */
                assert_int_equal(fp_session_get_read_stats(b.s, &st0), FP_OK);
                sample_is(id, &b, 0, EXPECT_T1, 4);
            }
            assert_int_equal(fp_session_get_read_stats(b.s, &st), FP_OK);
            if (warm == steady && STEADY_READS[i] == 1 && st.calls - st0.calls != 1)
                fail_msg("%s: the last sample before the change made %llu reads, not the one read of a steady "
                         "state", id, (unsigned long long)(st.calls - st0.calls));
            rr.armed = true;
            rr.skip = 1; /* the copy reads the frame; the change comes before the read-back */
            if (fp_session_sample(b.s, b.sm))
                fail_msg("%s (after %d samples): %s", id, warm, fp_session_get_errmsg(b.s));
            assert_false(rr.armed);
            assert_int_equal(fp_session_get_read_stats(b.s, &st), FP_OK);
            if (st.torn != 1)
                fail_msg("%s (after %d samples): %llu torn walks counted, expected the one the change tore", id,
                         warm, (unsigned long long)st.torn);
            expect_frame ex[4];
            memcpy(ex, EXPECT_T1, sizeof ex);
            ex[0] = (expect_frame){&CODE_UCS2, 0, 0, false};
            check_thread(id, b.sm, 0, ex, 4);
            check_thread(id, b.sm, 1, EXPECT_T2, 3);
            /* Torn in the batch or on its own, the thread's retry was
             * announced once, with its native id. */
            if (heard.calls != 1 || heard.native_id != fp_sample_get_thread(b.sm, 0)->native_id)
                fail_msg("%s (after %d samples): the retry hook was called %u times (last with native id %llu), "
                         "expected once with %llu", id, warm, heard.calls, (unsigned long long)heard.native_id,
                         (unsigned long long)fp_sample_get_thread(b.sm, 0)->native_id);
            unbuild(&b);
        }
    }
}

/* A code object's thread-local copies move to a new array (CPython
 * replaces co_tlbc when a thread with a higher index needs a copy), with a
 * new copy for the frame's index there, the old array left as it was: the
 * frame's position is found through the new array.  The new copy lies
 * TLBC_SHIFT units before the old one (the walk reads no copy's bytes), so
 * that the old array's entry, which the first read reads again where the
 * last sample found it, would put the frame TLBC_SHIFT units further on,
 * on another line, and nothing would look wrong. */
#define TLBC_IDX 3
#define TLBC_SHIFT 8u
static void tlbc_array_moved(size_t layout, const char *id, built *b)
{
    (void)layout;
    if (!has_tlbc(id))
        return;
    for (int k = 0; k < 3; k++)
        sample_is(id, b, 1, EXPECT_T2, 3);
    const fpi_layout *l = synth_layout(b->img);
    uint64_t f = synth_frame_addr(b->img, 1, 0), code, arr, size, old;
    memcpy(&code, synth_bytes(b->img, f + (uint64_t)l->fr_executable, 8), 8);
    code &= ~l->executable_tag_mask;
    memcpy(&arr, synth_bytes(b->img, code + (uint64_t)l->co_tlbc, 8), 8);
    memcpy(&size, synth_bytes(b->img, arr, 8), 8);
    memcpy(&old, synth_bytes(b->img, arr + 8 * (1 + TLBC_IDX), 8), 8);
    uint64_t unit = (uint64_t)(loc_start(&CODE_UCS4, 1) + 7), copy = old - 2 * TLBC_SHIFT;
    uint64_t moved = synth_alloc(b->img, 8 * (1 + size));
    assert_true(moved != 0);
    memcpy(synth_bytes(b->img, moved, 8 * (1 + size)), synth_bytes(b->img, arr, 8 * (1 + size)), 8 * (1 + size));
    memcpy(synth_bytes(b->img, moved + 8 * (1 + TLBC_IDX), 8), &copy, 8);
    memcpy(synth_bytes(b->img, code + (uint64_t)l->co_tlbc, 8), &moved, 8);
    uint64_t instr = copy + 2 * unit;
    memcpy(synth_bytes(b->img, f + (uint64_t)l->fr_instr_ptr, 8), &instr, 8);
    for (int k = 0; k < 2; k++) /* through the new array, then reading it ahead */
        sample_is(id, b, 1, EXPECT_T2, 3);
}

void test_tlbc_array_moved(void **state)
{
    (void)state;
    each_scene(tlbc_array_moved);
}

/* A read-back whose ranges are not those of the last sample's is read,
 * not taken from the ranges read ahead: here the first thread's data-stack
 * top moves up a word between two samples (a deeper stack moves it more),
 * so its chunk is read back a word longer.  Taken from the ranges read
 * ahead, every range after that chunk would be compared a word off, and
 * the walk torn for nothing (or, with no match required, worse). */
static void moved_ranges_read_back(size_t layout, const char *id, built *b)
{
    for (int k = 0; k < 3; k++)
        assert_int_equal(fp_session_sample(b->s, b->sm), FP_OK);
    const fpi_layout *l = synth_layout(b->img);
    uint8_t *top = synth_bytes(b->img, synth_thread_state_addr(b->img, 0) + (uint64_t)l->ts_datastack_top, 8);
    uint64_t v;
    memcpy(&v, top, 8);
    v += 8;
    memcpy(top, &v, 8);
    fp_read_stats st0, st;
    assert_int_equal(fp_session_get_read_stats(b->s, &st0), FP_OK);
    if (fp_session_sample(b->s, b->sm))
        fail_msg("%s: %s", id, fp_session_get_errmsg(b->s));
    check_thread(id, b->sm, 0, EXPECT_T1, 4);
    check_thread(id, b->sm, 1, EXPECT_T2, 3);
    assert_int_equal(fp_session_get_read_stats(b->s, &st), FP_OK);
    if (st.torn != 0)
        fail_msg("%s: %llu walks found torn; nothing changed during the sample", id,
                 (unsigned long long)st.torn);
    /* After reads of their own, thread-local bytecode is resolved afresh
     * (tlbc_ahead.c): three reads more on 3.14t and 3.15t. */
    unsigned tlbc = has_tlbc(id) ? 3u : 0u;
    if (st.calls - st0.calls != STEADY_READS[layout] + 2 + tlbc)
        fail_msg("%s: %llu reads, expected the steady state's %u, two read-backs of its own and %u for thread-local "
                 "bytecode", id, (unsigned long long)(st.calls - st0.calls), STEADY_READS[layout], tlbc);
}

void test_read_back_ahead_ranges_moved(void **state)
{
    (void)state;
    each_scene(moved_ranges_read_back);
}

/* The read fails, as a read of memory just unmapped does. */
static void read_fails(racing_reader *r)
{
    r->fail = FP_E_READ;
}

/* A batched read-back that cannot be read at all blames no thread: the
 * sample is walked again thread by thread and is whole (a regression: the
 * batch took the failure for the walk at index SIZE_MAX). */
static void unreadable_batch_walked_again(size_t layout, const char *id, built *b)
{
    (void)layout;
    racing_reader rr = racing_over(b, synth_frame_addr(b->img, 0, 0), read_fails);
    fp_reader racing = {&RACING_OPS, &rr};
    reattach(b, &racing);
    assert_int_equal(fp_session_sample(b->s, b->sm), FP_OK); /* the next one reads both threads ahead */
    rr.armed = true;
    rr.skip = 1; /* the copy reads the frame; the first read-back fails */
    if (fp_session_sample(b->s, b->sm))
        fail_msg("%s: %s", id, fp_session_get_errmsg(b->s));
    assert_false(rr.armed);
    check_thread(id, b->sm, 0, EXPECT_T1, 4);
    check_thread(id, b->sm, 1, EXPECT_T2, 3);
}

void test_batched_read_back_unreadable(void **state)
{
    (void)state;
    each_scene(unreadable_batch_walked_again);
}
