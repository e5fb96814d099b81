/* test_profile.c — the profile of `frameproof record` (harness/record/
 * profile.c) on hand-built threads: frames and stacks interned once and
 * unfolded root first; a code object address that comes back with another
 * function gets that function's name (the (address, line) hint is only a
 * hint); the modes keep and count exactly the threads they should; torn
 * and idle threads are counted, never added; the top functions (top.c)
 * by self and total samples, a recursive function counted once per sample,
 * and the distinct stacks per thread; the off-CPU share (idle.c) of this
 * process's own threads, one running and one blocked, within its budget. */
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "idle.h"
#include "profile.h"
#include "top.h"

#define CODE_A 0x7f0000001000ull
#define NATIVE_ID 4242u

static fp_frame frame(const char *function, const char *file, int32_t line, uint64_t code)
{
    return (fp_frame){.function = function, .name = function, .file = file, .line = line, .code_addr = code};
}

static fp_thread thread(size_t nframes)
{
    return (fp_thread){.native_id = NATIVE_ID, .holds_gil = FP_YES, .on_cpu = FP_NO, .frame_count = nframes};
}

static void name_it(void *ctx, uint64_t native_id, char *buf, size_t size)
{
    (void)ctx;
    snprintf(buf, size, "t%llu", (unsigned long long)native_id);
}

static void test_interning(void **state)
{
    (void)state;
    fpr_profile *p;
    assert_int_equal(fpr_profile_new(FPR_MODE_WALL, name_it, NULL, &p), FP_OK);
    fp_frame a[3] = {frame("leaf", "x.py", 3, CODE_A), frame("mid", "x.py", 7, CODE_A + 64),
                     frame("<module>", "x.py", 9, CODE_A + 128)};
    fp_thread th = thread(3);
    for (int i = 0; i < 5; i++)
        assert_int_equal(fpr_profile_add_thread(p, &th, a, i), FP_OK);
    assert_int_equal(fpr_profile_frame_count(p), 3);
    assert_int_equal(fpr_profile_stack_count(p), 3);
    assert_int_equal(fpr_profile_points(p), 5);
    assert_int_equal(fpr_profile_thread_count(p), 1);
    const fpr_thread *t = fpr_profile_thread(p, 0);
    assert_string_equal(t->name, "t4242");
    uint32_t out[3];
    assert_int_equal(fpr_profile_unfold(p, t->points[4].stack, out), 3);
    assert_string_equal(fpr_profile_frame(p, out[0])->function, "<module>");
    assert_string_equal(fpr_profile_frame(p, out[2])->function, "leaf");
    assert_int_equal(fpr_profile_frame(p, out[2])->line, 3);

    /* The leaf's code object freed, another function's at its address,
     * stopped at the same line: a frame of its own, under its own name. */
    char other[] = "other_leaf";
    a[0] = frame(other, "y.py", 3, CODE_A);
    assert_int_equal(fpr_profile_add_thread(p, &th, a, 5), FP_OK);
    assert_int_equal(fpr_profile_frame_count(p), 4);
    assert_int_equal(fpr_profile_unfold(p, t->points[5].stack, out), 3);
    assert_string_equal(fpr_profile_frame(p, out[2])->function, "other_leaf");
    assert_string_equal(fpr_profile_frame(p, out[2])->file, "y.py");
    /* ... and the same string storage reused for yet another name. */
    memcpy(other, "third_leaf", sizeof other);
    assert_int_equal(fpr_profile_add_thread(p, &th, a, 6), FP_OK);
    assert_int_equal(fpr_profile_frame_count(p), 5);
    assert_int_equal(fpr_profile_unfold(p, t->points[6].stack, out), 3);
    assert_string_equal(fpr_profile_frame(p, out[2])->function, "third_leaf");
    fpr_profile_free(p);
}

static void test_modes_and_dropped(void **state)
{
    (void)state;
    fp_frame a[1] = {frame("f", "x.py", 1, CODE_A)};
    fp_thread on = thread(1), off = thread(1), unknown = thread(1), torn = thread(0), idle = thread(0);
    on.on_cpu = FP_YES;
    on.holds_gil = FP_NO;
    unknown.on_cpu = unknown.holds_gil = FP_UNKNOWN;
    torn.error = FP_E_INCOMPLETE;
    const struct {
        int mode;
        uint64_t kept, mode_threads, unknown;
    } want[] = {{FPR_MODE_WALL, 3, 0, 0}, {FPR_MODE_CPU, 1, 2, 1}, {FPR_MODE_GIL, 1, 2, 1}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        fpr_profile *p;
        assert_int_equal(fpr_profile_new(want[i].mode, NULL, NULL, &p), FP_OK);
        const fp_thread *all[] = {&on, &off, &unknown, &torn, &idle};
        for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
            assert_int_equal(fpr_profile_add_thread(p, all[k], all[k]->frame_count ? a : NULL, 0), FP_OK);
        const fpr_dropped *d = fpr_profile_dropped(p);
        assert_int_equal(fpr_profile_points(p), want[i].kept);
        assert_int_equal(d->mode_threads, want[i].mode_threads);
        assert_int_equal(d->unknown_state, want[i].unknown);
        assert_int_equal(d->torn_threads, 1);
        assert_int_equal(d->idle_threads, 1);
        fpr_profile_free(p);
    }
}

static void test_mode_names(void **state)
{
    (void)state;
    for (int m = FPR_MODE_WALL; m <= FPR_MODE_GIL; m++)
        assert_int_equal(fpr_mode_parse(fpr_mode_name(m)), m);
    assert_int_equal(fpr_mode_parse("exception"), -1);
}

/* Adds n samples of one thread whose stack is frames[0..depth), innermost first. */
static void add_n(fpr_profile *p, uint64_t native_id, const fp_frame *frames, size_t depth, int n)
{
    fp_thread th = thread(depth);
    th.native_id = native_id;
    for (int i = 0; i < n; i++)
        assert_int_equal(fpr_profile_add_thread(p, &th, frames, i), FP_OK);
}

static void test_top(void **state)
{
    (void)state;
    fpr_profile *p;
    assert_int_equal(fpr_profile_new(FPR_MODE_WALL, NULL, NULL, &p), FP_OK);
    const fp_frame mod = frame("<module>", "m.py", 1, CODE_A), f5 = frame("f", "m.py", 5, CODE_A + 64),
                   f6 = frame("f", "m.py", 6, CODE_A + 64), f7 = frame("f", "m.py", 7, CODE_A + 64),
                   g = frame("g", "m.py", 10, CODE_A + 128), other_g = frame("g", "other.py", 3, CODE_A + 192);
    const fp_frame fg[] = {g, f5, mod}, f_at_6[] = {f6, mod}, recursive[] = {f7, f5, mod}, lone[] = {other_g};
    add_n(p, 1, fg, 3, 3);
    add_n(p, 1, f_at_6, 2, 1);
    add_n(p, 1, recursive, 3, 2); /* f twice on the stack: once in its total */
    add_n(p, 2, lone, 1, 1);      /* another function of the same name */
    add_n(p, 2, fg, 3, 1);        /* thread 1's stack again: another (thread, stack) pair */
    fpr_top t;
    assert_int_equal(fpr_top_compute(p, 3, &t), FP_OK);
    assert_int_equal(t.samples, 8);
    assert_int_equal(t.stacks, 5);
    assert_int_equal(t.functions, 4);
    assert_int_equal(t.count, 3);
    const struct {
        const char *function, *file;
        int32_t line;
        uint64_t self, total;
    } want[] = {{"g", "m.py", 10, 4, 4}, {"f", "m.py", 7, 3, 7}, {"g", "other.py", 3, 1, 1}};
    for (size_t i = 0; i < 3; i++) {
        assert_string_equal(t.top[i].function, want[i].function);
        assert_string_equal(t.top[i].file, want[i].file);
        assert_int_equal(t.top[i].line, want[i].line);
        assert_int_equal(t.top[i].self, want[i].self);
        assert_int_equal(t.top[i].total, want[i].total);
    }
    fpr_top_free(&t);
    /* All of them: <module> last, no self sample, so no line. */
    assert_int_equal(fpr_top_compute(p, 10, &t), FP_OK);
    assert_int_equal(t.count, 4);
    assert_string_equal(t.top[3].function, "<module>");
    assert_int_equal(t.top[3].self, 0);
    assert_int_equal(t.top[3].total, 7);
    assert_int_equal(t.top[3].line, FP_POS_NONE);
    fpr_top_free(&t);
    fpr_profile_free(p);
    /* An empty profile. */
    assert_int_equal(fpr_profile_new(FPR_MODE_WALL, NULL, NULL, &p), FP_OK);
    assert_int_equal(fpr_top_compute(p, 3, &t), FP_OK);
    assert_int_equal(t.samples + t.stacks + t.functions + t.count, 0);
    fpr_top_free(&t);
    fpr_profile_free(p);
}

typedef struct blocked {
    sem_t ready, release;
    uint64_t tid;
} blocked;

static void *block(void *arg)
{
    blocked *b = arg;
    b->tid = (uint64_t)syscall(SYS_gettid);
    sem_post(&b->ready);
    sem_wait(&b->release);
    return NULL;
}

/* The test's own threads: this one running ('R' while it reads), another
 * blocked on a semaphore ('S').  The budget of a whole second's run lets
 * the first sample be read; a second sample a nanosecond into the run,
 * after a read that cost more, is counted as not checked. */
static void test_idle(void **state)
{
    (void)state;
    blocked b = {.tid = 0};
    sem_init(&b.ready, 0, 0);
    sem_init(&b.release, 0, 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, block, &b), 0);
    sem_wait(&b.ready);
    usleep(20000); /* past sem_wait's way into the kernel */
    fpr_profile *p;
    fpr_idle *idle;
    assert_int_equal(fpr_profile_new(FPR_MODE_WALL, NULL, NULL, &p), FP_OK);
    assert_int_equal(fpr_idle_new((int)getpid(), 1.0, &idle), FP_OK);
    fp_frame a[1] = {frame("f", "x.py", 1, CODE_A)};
    fp_thread running = thread(1), waiting = thread(1), gone = thread(1);
    running.native_id = (uint64_t)syscall(SYS_gettid);
    waiting.native_id = b.tid;
    gone.native_id = UINT32_MAX; /* no such thread */
    const int64_t first = 1000000000, second = 1;
    const fp_thread *all[] = {&running, &waiting, &gone};
    for (size_t k = 0; k < 3; k++)
        assert_int_equal(fpr_profile_add_thread(p, all[k], a, first), FP_OK);
    assert_int_equal(fpr_idle_check(idle, p, first), FP_OK);
    assert_int_equal(fpr_profile_add_thread(p, &running, a, second), FP_OK); /* only this one in the second sample */
    assert_int_equal(fpr_idle_check(idle, p, second), FP_OK);
    const fpr_idle_counts *c = fpr_idle_totals(idle);
    assert_int_equal(c->checked, 2);
    assert_int_equal(c->off_cpu, 1);
    assert_int_equal(c->unknown, 1);
    assert_int_equal(c->unchecked, 1);
    uint64_t checked, off;
    fpr_idle_thread(idle, 1, &checked, &off);
    assert_int_equal(checked, 1);
    assert_int_equal(off, 1);
    fpr_idle_thread(idle, 0, &checked, &off);
    assert_int_equal(checked, 1);
    assert_int_equal(off, 0);
    fpr_idle_free(idle);
    fpr_profile_free(p);
    sem_post(&b.release);
    pthread_join(th, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interning),
        cmocka_unit_test(test_modes_and_dropped),
        cmocka_unit_test(test_mode_names),
        cmocka_unit_test(test_top),
        cmocka_unit_test(test_idle),
    };
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
