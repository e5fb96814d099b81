/* sampler_tests.h — the sampling-API test cases, one file per topic
 * (test_sampler_*.c), run by test_sampler.c. */
#ifndef SAMPLER_TESTS_H
#define SAMPLER_TESTS_H

/* test_sampler_runs.c */
void test_count(void **state);
void test_target_time(void **state);
void test_rate(void **state);
void test_realtime(void **state);
void test_realtime_refused(void **state);
void test_custom_slice_kept(void **state);
void test_missed_ticks(void **state);
void test_callback_stops(void **state);
void test_poisson(void **state);
void test_target_killed(void **state);
void test_invalid(void **state);
void test_take_hook(void **state);
void test_fault_drop_torn(void **state);
void test_fault_retry_quiet(void **state);
void test_classify(void **state);

/* test_sampler_colocate.c */
void test_colocate_run(void **state);
void test_colocate_escapes(void **state);
void test_paused_returning_top(void **state);
void test_colocate_hold(void **state);
void test_colocate_hold_guard(void **state);
void test_colocate_follows_gil_holder(void **state);
void test_colocate_mover(void **state);

/* test_sampler_offload.c */
void test_offload_run(void **state);
void test_offload_strings(void **state);

#endif
