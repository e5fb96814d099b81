/* test_pause_spin.c — a wait for a thread's stop spins (yielding the CPU)
 * only for a caller of normal priority: at real-time priority sched_yield()
 * never lets the tracee run on the caller's CPU, where a sampler holds it.
 * A regression: the sampler's policy carries SCHED_RESET_ON_FORK, so the
 * check, comparing the policy with SCHED_FIFO, spun 256 polls before each
 * stop of a held thread (about 0.5 ms of the target's time each). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <sched.h>

#include "pause_thread.h"

/* policy, which may carry SCHED_RESET_ON_FORK, at priority prio; false
 * when the kernel refuses it (no CAP_SYS_NICE). */
static bool set_policy(int policy, int prio)
{
    struct sched_param sp = {.sched_priority = prio};
    return sched_setscheduler(0, policy, &sp) == 0;
}

static void test_spin_only_at_normal_priority(void **state)
{
    (void)state;
    assert_true(fpi_pause_spin_polls() > 0);
    if (!set_policy(SCHED_FIFO | SCHED_RESET_ON_FORK, 1)) {
        print_message("# skipped: real-time priority refused (errno %d)\n", errno);
        skip();
    }
    const long fifo_reset = fpi_pause_spin_polls();
    assert_true(set_policy(SCHED_FIFO, 1));
    const long fifo = fpi_pause_spin_polls();
    assert_true(set_policy(SCHED_RR, 1));
    const long rr = fpi_pause_spin_polls();
    assert_true(set_policy(SCHED_OTHER, 0));
    assert_int_equal(fifo_reset, 0);
    assert_int_equal(fifo, 0);
    assert_int_equal(rr, 0);
    assert_true(fpi_pause_spin_polls() > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spin_only_at_normal_priority),
    };
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
