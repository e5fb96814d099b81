/* test_synth_read_plan.c — synthetic images: what a sample reads: the read
 * statistics, read-backs per link and per walk, top frames without slots,
 * the chunk header read once, the generation beside the head, read-backs in
 * chain order. */
#include "synth_fixture.h"
#include "synth_tests.h"

/* A reader that counts what it is asked, batched reads once each. */
/* Counts reads and, when `log` is set, records every range read in order
 * (those of a readv one by one). */
#define LOG_READS_MAX 4096
typedef struct read_log {
    size_t n;
    uint64_t addr[LOG_READS_MAX], len[LOG_READS_MAX];
} read_log;

typedef struct counting_reader {
    fp_reader inner;
    uint64_t calls, bytes;
    read_log *log;
} counting_reader;

static void log_range(counting_reader *r, uint64_t addr, size_t len)
{
    r->bytes += len;
    if (r->log && r->log->n < LOG_READS_MAX) {
        r->log->addr[r->log->n] = addr;
        r->log->len[r->log->n++] = len;
    }
}

static int counting_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    counting_reader *r = ctx;
    r->calls++;
    log_range(r, addr, len);
    return fp_reader_read(&r->inner, addr, buf, len);
}

static int counting_readv(void *ctx, const fp_iov *iov, size_t n)
{
    counting_reader *r = ctx;
    r->calls++;
    for (size_t i = 0; i < n; i++)
        log_range(r, iov[i].addr, iov[i].len);
    return fp_reader_readv(&r->inner, iov, n);
}

static const fp_reader_ops COUNTING_OPS = {.name = "counting", .read = counting_read, .readv = counting_readv};

/* fp_session_get_read_stats counts exactly the reader calls and bytes the
 * samples make (not those of attaching). */
static void read_stats_count_every_read(size_t layout, const char *id, built *b)
{
    counting_reader cr = {.inner = b->rd};
    fp_reader counting = {&COUNTING_OPS, &cr};
    reattach(b, &counting);
    fp_read_stats st;
    assert_int_equal(fp_session_get_read_stats(b->s, &st), FP_OK);
    assert_true(st.calls == 0 && st.bytes == 0 && st.torn == 0);
    cr.calls = cr.bytes = 0;
    for (int k = 0; k < 3; k++) {
        sample_is(id, b, 0, EXPECT_T1, 4);
        assert_int_equal(fp_session_get_read_stats(b->s, &st), FP_OK);
        if (st.calls != cr.calls || st.bytes != cr.bytes)
            fail_msg("%s: sample %d: counted %llu reads, %llu bytes; the reader saw %llu, %llu", id, k,
                     (unsigned long long)st.calls, (unsigned long long)st.bytes, (unsigned long long)cr.calls,
                     (unsigned long long)cr.bytes);
    }
    uint64_t before = st.calls;
    assert_int_equal(fp_session_sample(b->s, b->sm), FP_OK);
    assert_int_equal(fp_session_get_read_stats(b->s, &st), FP_OK);
    if (st.calls - before != STEADY_READS[layout])
        fail_msg("%s: a steady-state sample made %llu reads, expected %u", id,
                 (unsigned long long)(st.calls - before), STEADY_READS[layout]);
    assert_int_equal(st.torn, 0); /* nothing changed under any walk */
    assert_int_equal(fp_session_get_read_stats(NULL, &st), FP_E_INVALID_ARG);
}

void test_read_stats(void **state)
{
    (void)state;
    each_scene(read_stats_count_every_read);
}

#define BELOW_LOWEST_FRAME 8u /* an address this far below a chunk's lowest frame: its header */

/* A loop that Brent's check has not closed when the walk reaches
 * max_depth is still named a cycle, not a stack deeper than the limit:
 * the frame there was followed before. */
#define CALL_UNIT_APART 4u /* a caller's unit past the widest CALL's cache units (3.11) */

/* How many ranges of the steady state's one read hold the lowest frame
 * of thread t: its copy and each read-back. */
static unsigned lowest_frame_reads(built *b, size_t t)
{
    read_log *lr = calloc(1, sizeof *lr);
    assert_non_null(lr);
    counting_reader cr = {.inner = b->rd, .log = lr};
    fp_reader rd = {&COUNTING_OPS, &cr};
    reattach(b, &rd);
    for (int k = 0; k < 4; k++) /* the last one: the steady state's one read */
    {
        lr->n = 0;
        assert_int_equal(fp_session_sample(b->s, b->sm), FP_OK);
    }
    uint64_t f2 = synth_frame_addr(b->img, t, 2);
    unsigned hits = 0;
    for (size_t i = 0; i < lr->n; i++)
        if (lr->addr[i] <= f2 && f2 - lr->addr[i] < lr->len[i])
            hits++;
    reattach(b, &b->rd);
    free(lr);
    return hits;
}

/* Thread t's three frames, each suspended in a CALL of the frame above it,
 * every link comparable by the callee check; false on a layout without it
 * (none since 3.14's stack pointer is read).  Frame 2 moved to the CALL at unit 4 (3.11: 4 cache
 * units after it), so that its instruction and frame 1's do not overlap. */
static bool every_link_comparable(built *b, size_t t)
{
    const fpi_layout *l = synth_layout(b->img);
    if (l->fr_localsplus == FPI_OFF_NONE)
        return false;
    uint64_t start, unit, units, f2 = synth_frame_addr(b->img, t, 2);
    wipe_code(b, f2, &start, &unit, &units);
    uint64_t ip = start + 2u * CALL_UNIT_APART;
    memcpy(synth_bytes(b->img, f2 + (uint64_t)l->fr_instr_ptr, 8), &ip, 8);
    assert_true(call_with_slots_on(b, t, FUNC_CALLED, 0));
    uint64_t f0 = synth_frame_addr(b->img, t, 0), f1 = synth_frame_addr(b->img, t, 1), func = FUNC_OTHER;
    int32_t depth = saved_depth(b, f1);
    assert_true(depth >= 0);
    memcpy(synth_bytes(b->img, f0 + (uint64_t)l->fr_funcobj, 8), &func, 8);
    memcpy(synth_bytes(b->img, f1 + (uint64_t)l->fr_localsplus + 8u * (uint64_t)depth, 8), &func, 8);
    return true;
}

/* Thread t's top frame with its function unknown: the link under it is
 * not compared. */
static void top_function_unknown(built *b, size_t t)
{
    uint64_t unknown = 0;
    memcpy(synth_bytes(b->img, synth_frame_addr(b->img, t, 0) + (uint64_t)synth_layout(b->img)->fr_funcobj, 8),
           &unknown, 8);
}

/* The callee-function check applies on every layout (3.11-3.13 through
 * the stack depth, 3.14+ through the stack pointer): a walk whose every
 * link between shown frames it compared is read back once; one with a link
 * it did not compare (here: the top frame's function unknown) twice.  A
 * thread of three frames, each suspended in a CALL of the frame above it. */
static void read_backs_per_link(size_t layout, const char *id, built *b)
{
    (void)layout;
    if (!every_link_comparable(b, 0))
        fail_msg("%s: the callee-function check does not apply to this layout", id);
    unsigned want = 1 + FPI_VERIFY_READS_CHECKED, got = lowest_frame_reads(b, 0);
    if (got != want)
        fail_msg("%s: every link compared: the lowest frame read %u times in a steady-state sample, expected %u "
                 "(its copy and %u read-backs)", id, got, want, want - 1);
    top_function_unknown(b, 0);
    want = 1 + FPI_VERIFY_READS;
    if ((got = lowest_frame_reads(b, 0)) != want)
        fail_msg("%s: a link not compared: the lowest frame read %u times in a steady-state sample, expected %u",
                 id, got, want);
    print_message("# %s: read back once when every link was compared, twice otherwise\n", id);
}

/* One sample of the call-chain scene, returned whole: thread 0's three
 * frames. */
static void chain_sampled(const char *id, built *b)
{
    if (fp_session_sample(b->s, b->sm) != FP_OK)
        fail_msg("%s: %s", id, fp_session_get_errmsg(b->s));
    assert_int_equal(fp_sample_get_thread(b->sm, 0)->error, FP_OK);
    assert_int_equal(fp_sample_get_thread(b->sm, 0)->frame_count, 3);
}

/* 3.14+: the slot and f_funcobj hold stack references, compared without
 * their tag bits (the callee's f_funcobj took the caller's reference over,
 * and either may carry a deferred or borrowed bit).  A caller whose stack
 * pointer is NULL (a debug build stores NULL while the frame runs) names
 * no slot: its link is not compared, and the walk is read back twice. */
static void read_backs_stack_refs(size_t layout, const char *id, built *b)
{
    (void)layout;
    const fpi_layout *l = synth_layout(b->img);
    if (l->fr_stackpointer == FPI_OFF_NONE)
        return;
    assert_true(every_link_comparable(b, 0));
    assert_true(l->executable_tag_mask != 0);
    uint64_t f0 = synth_frame_addr(b->img, 0, 0), f1 = synth_frame_addr(b->img, 0, 1);
    uint64_t tagged = FUNC_OTHER | l->executable_tag_mask;
    memcpy(synth_bytes(b->img, f0 + (uint64_t)l->fr_funcobj, 8), &tagged, 8);
    unsigned want = 1 + FPI_VERIFY_READS_CHECKED, got = lowest_frame_reads(b, 0);
    if (got != want)
        fail_msg("%s: a tagged f_funcobj over its untagged slot: the lowest frame read %u times, expected %u", id, got,
                 want);
    int32_t depth = saved_depth(b, f1);
    assert_true(depth >= 0);
    uint64_t untagged = FUNC_OTHER;
    memcpy(synth_bytes(b->img, f0 + (uint64_t)l->fr_funcobj, 8), &untagged, 8);
    memcpy(synth_bytes(b->img, f1 + (uint64_t)l->fr_localsplus + 8u * (uint64_t)depth, 8), &tagged, 8);
    if ((got = lowest_frame_reads(b, 0)) != want)
        fail_msg("%s: a tagged slot under its untagged f_funcobj: the lowest frame read %u times, expected %u", id,
                 got, want);
    uint64_t null_sp = 0;
    memcpy(synth_bytes(b->img, f1 + (uint64_t)l->fr_stackpointer, 8), &null_sp, 8);
    want = 1 + FPI_VERIFY_READS;
    if ((got = lowest_frame_reads(b, 0)) != want)
        fail_msg("%s: a caller with a NULL stack pointer: the lowest frame read %u times, expected %u", id, got, want);
    chain_sampled(id, b);
    print_message("# %s: stack references compared without tags; a NULL stack pointer leaves the link unchecked\n",
                  id);
}

/* A call made by JIT code leaves the callee's frame, not the function, in
 * the caller's callable slot (_INIT_CALL_PY_EXACT_ARGS then _PUSH_FRAME as
 * two uops of a trace, the frame passed through memory; 3.14+jit): the
 * thread is returned whole, its link not compared, so the walk is read back
 * twice.  It was refused as torn ("a call of another function"). */
static void jit_pushed_frame_in_slot(size_t layout, const char *id, built *b)
{
    (void)layout;
    const fpi_layout *l = synth_layout(b->img);
    assert_true(every_link_comparable(b, 0));
    uint64_t f0 = synth_frame_addr(b->img, 0, 0), f1 = synth_frame_addr(b->img, 0, 1);
    int32_t depth = saved_depth(b, f1);
    assert_true(depth >= 0);
    uint64_t ref = f0 | l->executable_tag_mask;
    memcpy(synth_bytes(b->img, f1 + (uint64_t)l->fr_localsplus + 8u * (uint64_t)depth, 8), &ref, 8);
    unsigned want = 1 + FPI_VERIFY_READS, got = lowest_frame_reads(b, 0);
    if (got != want)
        fail_msg("%s: the callee's frame in its caller's slot: the lowest frame read %u times, expected %u", id, got,
                 want);
    chain_sampled(id, b);
    print_message("# %s: a frame pushed by JIT code (its address in the caller's slot) is returned, read back twice\n",
                  id);
}

/* 3.14+: a suspended caller's stack pointer that names no slot of its own
 * (unaligned, or below localsplus: FPI_DEPTH_UNKNOWN).  CPython never
 * leaves one (every frame's pointer is set when it is pushed and saved at
 * every call), and two such pointers need not be equal, so the read-back
 * never takes the frame as unchanged: the thread is reported torn, not
 * returned, and is returned again once the pointer names a slot. */
static void unknown_depth_read_back(size_t layout, const char *id, built *b)
{
    (void)layout;
    const fpi_layout *l = synth_layout(b->img);
    if (l->fr_stackpointer == FPI_OFF_NONE)
        return;
    uint64_t f1 = synth_frame_addr(b->img, 0, 1), sp;
    uint8_t *at = synth_bytes(b->img, f1 + (uint64_t)l->fr_stackpointer, 8);
    memcpy(&sp, at, 8);
    const uint64_t bad[] = {sp + 1u, f1 + (uint64_t)l->fr_localsplus - 8u};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        memcpy(at, &bad[k], 8);
        assert_int_equal(saved_depth(b, f1), FPI_DEPTH_UNKNOWN);
        int rc = fp_session_sample(b->s, b->sm);
        if (rc != FP_E_INCOMPLETE || !strstr(fp_session_get_errmsg(b->s), "a frame it followed changed"))
            fail_msg("%s: a caller whose stack pointer names no slot (%s) was not refused: %d %s", id,
                     k ? "below localsplus" : "unaligned", rc, fp_session_get_errmsg(b->s));
    }
    memcpy(at, &sp, 8);
    chain_sampled(id, b);
    print_message("# %s: a suspended frame whose stack pointer names no slot is refused\n", id);
}

/* Two such threads read back together (the batched path): only the walk
 * with a link not compared is read back a second time. */
static void read_backs_per_walk(size_t layout, const char *id, built *b)
{
    (void)layout;
    if (!every_link_comparable(b, 0) || !every_link_comparable(b, 1))
        fail_msg("%s: the callee-function check does not apply to this layout", id);
    top_function_unknown(b, 1);
    unsigned got0 = lowest_frame_reads(b, 0), got1 = lowest_frame_reads(b, 1);
    unsigned want0 = 1 + FPI_VERIFY_READS_CHECKED, want1 = 1 + FPI_VERIFY_READS;
    if (got0 != want0 || got1 != want1)
        fail_msg("%s: two threads, one link not compared in thread 1: their lowest frames read %u and %u times "
                 "in a steady-state sample, expected %u and %u", id, got0, got1, want0, want1);
    print_message("# %s: of two walks read back together, only the one owing it read back again\n", id);
}

void test_read_backs_per_link(void **state)
{
    (void)state;
    for (size_t i = 0; i < NLAYOUTS; i++) {
        for (size_t nthreads = 1; nthreads <= 2; nthreads++) {
            scene sc;
            built b;
            build_call_chain_scene(LAYOUTS[i], nthreads, &sc, &b);
            if (nthreads == 1)
                read_backs_per_link(i, LAYOUTS[i], &b);
            else
                read_backs_per_walk(i, LAYOUTS[i], &b);
            unbuild(&b);
        }
    }
    each_chain_scene(read_backs_stack_refs);
    each_chain_scene(jit_pushed_frame_in_slot);
    each_chain_scene(unknown_depth_read_back);
}

/* A top frame with neither locals nor stack (3.11, 3.12: `def spin():
 * while True: pass`) ends fr_localsplus bytes after its start, short of
 * fr_size, at the data stack's top: its header is what the walk reads, and
 * it is live.  Refused as "beyond the live part" before, such a thread was
 * never sampled, not even stopped. */
static void top_frame_without_slots(size_t layout, const char *id, built *b)
{
    (void)layout;
    const fpi_layout *l = synth_layout(b->img);
    uint64_t ts = synth_thread_state_addr(b->img, 0), top = synth_frame_addr(b->img, 0, 0) + (uint64_t)l->fr_localsplus;
    memcpy(synth_bytes(b->img, ts + (uint64_t)l->ts_datastack_top, 8), &top, 8);
    for (int k = 0; k < 2; k++) { /* the first read, then the steady state's */
        if (fp_session_sample(b->s, b->sm) != FP_OK)
            fail_msg("%s: %s", id, fp_session_get_errmsg(b->s));
        check_thread(id, b->sm, 0, EXPECT_T2, 3);
    }
    print_message("# %s: a top frame of %d header bytes at the data stack's top (fr_size %d)\n", id,
                  (int)l->fr_localsplus, (int)l->fr_size);
}

void test_top_frame_without_slots(void **state)
{
    (void)state;
    each_chain_scene(top_frame_without_slots);
}

static int keeping_readv(void *ctx, const fp_iov *iov, size_t n)
{
    keeping_reader *r = ctx;
    r->nlast = n < KEPT_RANGES ? n : KEPT_RANGES;
    memcpy(r->last, iov, r->nlast * sizeof *iov);
    return fp_reader_readv(&r->inner, iov, n);
}

static int keeping_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    fp_iov one = {addr, buf, len};
    return keeping_readv(ctx, &one, 1);
}

static const fp_reader_ops KEEPING_OPS = {.name = "keeping synthetic image", .read = keeping_read,
                                          .readv = keeping_readv};

/* The read-backs read a chunk from its lowest followed frame up: the bytes
 * below it (the chunk's header) decide nothing and are not compared, and
 * with an entry frame between them and the first frame they were a remote
 * range of their own in each read-back.  In steady state only the copy
 * reads them. */
static void chunk_header_read_once(size_t layout, const char *id, built *b)
{
    (void)layout;
    uint64_t below = synth_frame_addr(b->img, 1, 3) - BELOW_LOWEST_FRAME;
    keeping_reader kr = {.inner = b->rd};
    fp_reader rd = {&KEEPING_OPS, &kr};
    reattach(b, &rd);
    fp_read_stats st0, st;
    for (int k = 0; k < 4; k++) { /* the last one: the steady state's one read */
        assert_int_equal(fp_session_get_read_stats(b->s, &st0), FP_OK);
        sample_is(id, b, 1, EXPECT_T2, 3);
    }
    assert_int_equal(fp_session_get_read_stats(b->s, &st), FP_OK);
    unsigned hits = 0;
    for (size_t i = 0; i < kr.nlast; i++)
        if (kr.last[i].addr <= below && below - kr.last[i].addr < kr.last[i].len)
            hits++;
    if (st.calls - st0.calls != 1 || hits != 1)
        fail_msg("%s: the bytes below a thread's lowest frame were read %u times in a steady-state sample of %llu "
                 "reads, expected once in one read (the copy)", id, hits, (unsigned long long)(st.calls - st0.calls));
}

void test_read_back_from_lowest_frame(void **state)
{
    (void)state;
    each_scene(chunk_header_read_once);
}

/* 3.14+: each read-back reads the code-object generation right after the
 * interpreter's list head (the head thread's link), a few hundred bytes
 * before it, so that process_vm_readv takes the two as one remote range;
 * read after the thread states, it was a range of its own. */
static void generation_beside_head(size_t layout, const char *id, built *b)
{
    (void)layout;
    const fpi_layout *l = synth_layout(b->img);
    if (l->interp_code_generation == FPI_OFF_NONE)
        return;
    uint64_t interp = first_interp(b->img);
    uint64_t head = interp + (uint64_t)l->interp_threads_head, gen = interp + (uint64_t)l->interp_code_generation;
    keeping_reader kr = {.inner = b->rd};
    fp_reader rd = {&KEEPING_OPS, &kr};
    reattach(b, &rd);
    for (int k = 0; k < 4; k++) /* the last one: the steady state's one read */
        sample_is(id, b, 1, EXPECT_T2, 3);
    unsigned beside = 0; /* the copy reads it among the interpreter's other words */
    for (size_t i = 1; i < kr.nlast; i++)
        if (kr.last[i].addr == gen && kr.last[i].len == WORD_READ && kr.last[i - 1].addr == head &&
            kr.last[i - 1].len == WORD_READ)
            beside++;
    if (beside != 2) /* the two read-backs, taken with the first read */
        fail_msg("%s: the generation was read back right after the list head %u times in a steady-state sample, "
                 "expected 2", id, beside);
}

void test_generation_read_beside_head(void **state)
{
    (void)state;
    each_scene(generation_beside_head);
}

/* A read-back takes a chain in its order from the bottom, every caller
 * just before its callee: in the first thread (its generator frame, frame
 * 2, outside the data stack, between frame 3 below it and frame 1 above it
 * in the chunk) the generator frame is read right after the chunk bytes up
 * to frame 1 and right before those from frame 1 on.  Read after the whole
 * chunk (as before), a coroutine that had moved on to its next call was
 * read under the callee of its last one (ci/live generator_pingpong, 3.13). */
static void read_back_in_chain_order(size_t layout, const char *id, built *b)
{
    (void)layout;
    const fpi_layout *l = synth_layout(b->img);
    uint64_t gen = synth_frame_addr(b->img, 0, 2), below = synth_frame_addr(b->img, 0, 3);
    uint64_t above = synth_frame_addr(b->img, 0, 1), pre = fpi_outside_prefix(l);
    read_log *lr = calloc(1, sizeof *lr);
    assert_non_null(lr);
    counting_reader cr = {.inner = b->rd, .log = lr};
    fp_reader logging = {&COUNTING_OPS, &cr};
    reattach(b, &logging);
    assert_int_equal(fp_session_sample(b->s, b->sm), FP_OK);
    lr->n = 0;
    sample_is(id, b, 0, EXPECT_T1, 4);
    /* Around each read of the generator frame, the nearest reads that are
     * not of a whole frame (other frames outside the chunk, as an entry
     * frame above it on 3.12+, may come between) are chunk bytes. */
    uint64_t whole = pre + (uint64_t)l->fr_size;
    unsigned in_order = 0;
    for (size_t k = 0; k < lr->n; k++) {
        if (lr->addr[k] != gen - pre || lr->len[k] != whole)
            continue;
        size_t kb = k, ka = k;
        while (kb > 0 && lr->len[kb] == whole)
            kb--;
        while (ka + 1 < lr->n && lr->len[ka] == whole)
            ka++;
        bool before = lr->addr[kb] <= below && lr->addr[kb] + lr->len[kb] == above;
        bool after = lr->addr[ka] == above;
        if (!before || !after)
            fail_msg("%s: the generator frame read between 0x%llx+%llu and 0x%llx+%llu, not between its caller's "
                     "and its callee's chunk bytes",
                     id, (unsigned long long)lr->addr[kb], (unsigned long long)lr->len[kb],
                     (unsigned long long)lr->addr[ka], (unsigned long long)lr->len[ka]);
        in_order++;
    }
    if (in_order != FPI_VERIFY_READS)
        fail_msg("%s: the generator frame read back %u times in chain order, expected %u", id, in_order,
                 FPI_VERIFY_READS);
    free(lr);
}

void test_read_back_in_chain_order(void **state)
{
    (void)state;
    each_scene(read_back_in_chain_order);
}
