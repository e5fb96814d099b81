/* test_sampler.c — the sampling API (harness/sampler) against a real
 * interpreter: count, duration and rate bounds, the callback stopping a
 * run, a target killed under it, invalid configurations, the error
 * classification, missed ticks without catch-up and Poisson spacing, and
 * a paced run's timer slack and time slice, given back afterwards (a
 * caller's own slice too), and a real-time run's priority, given back
 * too, or refused with its reason; a colocated run's moves to the CPU of
 * the target's GIL holder, and the caller's affinity given back; the
 * self-test faults: drop-torn names torn threads to leave out, retry-quiet
 * takes a torn attempt again, each with the session's hook chained and
 * put back.
 * The cases are in test_sampler_*.c, one file per topic (sampler_tests.h),
 * and share sampler_fixture.h.
 * usage: test_sampler PYTHON (empty: skipped) */
#include "sampler_fixture.h"
#include "sampler_tests.h"

int main(int argc, char **argv)
{
    sampler_python = argc > 1 ? argv[1] : "";
    if (!*sampler_python || access(sampler_python, X_OK) != 0) {
        printf("1..0 # SKIP no python3.11 interpreter\n");
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classify),
        cmocka_unit_test_setup_teardown(test_count, setup, teardown),
        cmocka_unit_test_setup_teardown(test_target_time, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missed_ticks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_callback_stops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_poisson, setup, teardown),
        cmocka_unit_test_setup_teardown(test_target_killed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_invalid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_take_hook, setup, teardown),
        cmocka_unit_test_setup_teardown(test_realtime, setup, teardown),
        cmocka_unit_test_setup_teardown(test_realtime_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_custom_slice_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_colocate_run, setup, teardown),
        cmocka_unit_test_setup_teardown(test_colocate_follows_gil_holder, setup_spin, teardown),
        cmocka_unit_test_setup_teardown(test_colocate_mover, setup, teardown),
        cmocka_unit_test_setup_teardown(test_colocate_escapes, setup_spin, teardown),
        cmocka_unit_test_setup_teardown(test_colocate_hold, setup_spin, teardown),
        cmocka_unit_test_setup_teardown(test_colocate_hold_guard, setup_spin, teardown),
        cmocka_unit_test_setup_teardown(test_offload_run, setup_spin, teardown),
        cmocka_unit_test_setup_teardown(test_offload_strings, setup_codegen, teardown),
        cmocka_unit_test_setup_teardown(test_paused_returning_top, setup_returning, teardown),
        cmocka_unit_test_setup_teardown(test_fault_drop_torn, setup_churn, teardown),
        cmocka_unit_test_setup_teardown(test_fault_retry_quiet, setup_churn, teardown),
    };
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests_name("sampler", tests, NULL, NULL);
}
