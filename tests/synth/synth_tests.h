/* synth_tests.h — the synthetic-image test cases, one file per topic
 * (test_synth_*.c), run by test_synth.c. */
#ifndef SYNTH_TESTS_H
#define SYNTH_TESTS_H

/* test_synth_async.c */
void test_async_graph_layouts(void **state);
void test_async_graph_thread_too_deep(void **state);
void test_async_chain_at_max_depth(void **state);

/* test_synth_pyobj.c */
void test_dict_lookup_hint(void **state);
void test_dict_rebuilt(void **state);
void test_weakref_type_proven(void **state);
void test_set_in_flight(void **state);
void test_inline_values_cleared(void **state);

/* test_synth_layouts.c */
void test_layouts_round_trip(void **state);
void test_thread_list_changes(void **state);
void test_untested_version(void **state);
void test_position_bounds(void **state);
void test_cycle_at_max_depth(void **state);

/* test_synth_checks.c */
void test_corruptions(void **state);
void test_callee_was_called(void **state);
void test_running_under_generator(void **state);
void test_cache_byte_like_send(void **state);
void test_unlinked_generator(void **state);
void test_switched_stack(void **state);
void test_shim_not_checked(void **state);
void test_generator_callee_resumed(void **state);
void test_unreadable_instructions(void **state);

/* test_synth_code_races.c */
void test_frame_cache_aba(void **state);
void test_code_confirmed_per_walk(void **state);
void test_code_generation_checked(void **state);
void test_late_code_read_back(void **state);
void test_late_code_read_back_batched(void **state);
void test_cleared_between_reads(void **state);

/* test_synth_thread_list.c */
void test_frameless_thread_recreated(void **state);
void test_thread_started_in_front(void **state);
void test_thread_list_restarts_bounded(void **state);
void test_thread_exit_and_start(void **state);
void test_thread_exits_during_walk(void **state);
void test_head_not_set_up(void **state);
void test_main_unlisted(void **state);
void test_new_thread_with_main_ids(void **state);
void test_unstarted_state_not_main(void **state);

/* test_synth_read_plan.c */
void test_read_stats(void **state);
void test_read_backs_per_link(void **state);
void test_top_frame_without_slots(void **state);
void test_read_back_from_lowest_frame(void **state);
void test_generation_read_beside_head(void **state);
void test_read_back_in_chain_order(void **state);

/* test_synth_read_retry.c */
void test_retry_in_one_read(void **state);
void test_batched_read_back_torn(void **state);
void test_tlbc_array_moved(void **state);
void test_read_back_ahead_ranges_moved(void **state);
void test_batched_read_back_unreadable(void **state);

/* test_synth_tops.c */
void test_waiting_generator_top(void **state);
void test_popped_top_stopped(void **state);
void test_stopped_top_from_cache(void **state);
void test_resuming_caller_from_cache(void **state);

#endif
