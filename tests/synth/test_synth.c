/* test_synth.c — synthetic images of every layout (3.11, 3.12, 3.13, 3.13t,
 * 3.14, 3.14t, 3.15, 3.15t) unwind to exactly their description: names of
 * every PEP 393 kind (compact and not), long-form positions and absent
 * ones, generator frames, entry frames, frames hidden before their first
 * traceable instruction, thread-local bytecode on free-threaded 3.14+.
 * Then corrupted images give a precise error on the damaged thread and an
 * exact stack on the others.  TAP via cmocka; the cases are in
 * test_synth_*.c, one file per topic (synth_tests.h), and share
 * synth_fixture.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "synth_tests.h"

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layouts_round_trip),
        cmocka_unit_test(test_async_graph_layouts), cmocka_unit_test(test_async_graph_thread_too_deep),
        cmocka_unit_test(test_async_chain_at_max_depth), cmocka_unit_test(test_dict_lookup_hint),
        cmocka_unit_test(test_dict_rebuilt),
        cmocka_unit_test(test_weakref_type_proven),
        cmocka_unit_test(test_set_in_flight),
        cmocka_unit_test(test_inline_values_cleared),
        cmocka_unit_test(test_corruptions),
        cmocka_unit_test(test_cache_byte_like_send),
        cmocka_unit_test(test_running_under_generator),
        cmocka_unit_test(test_callee_was_called),
        cmocka_unit_test(test_read_backs_per_link),
        cmocka_unit_test(test_thread_list_changes),
        cmocka_unit_test(test_untested_version),
        cmocka_unit_test(test_frame_cache_aba),
        cmocka_unit_test(test_shim_not_checked),
        cmocka_unit_test(test_unlinked_generator),
        cmocka_unit_test(test_switched_stack),
        cmocka_unit_test(test_position_bounds),
        cmocka_unit_test(test_frameless_thread_recreated),
        cmocka_unit_test(test_thread_started_in_front),
        cmocka_unit_test(test_thread_list_restarts_bounded),
        cmocka_unit_test(test_thread_exit_and_start), cmocka_unit_test(test_thread_exits_during_walk),
        cmocka_unit_test(test_read_stats),
        cmocka_unit_test(test_batched_read_back_torn), cmocka_unit_test(test_retry_in_one_read), cmocka_unit_test(test_top_frame_without_slots), cmocka_unit_test(test_popped_top_stopped), cmocka_unit_test(test_read_back_ahead_ranges_moved),
        cmocka_unit_test(test_tlbc_array_moved),
        cmocka_unit_test(test_code_confirmed_per_walk),
        cmocka_unit_test(test_code_generation_checked),
        cmocka_unit_test(test_late_code_read_back),
        cmocka_unit_test(test_late_code_read_back_batched),
        cmocka_unit_test(test_head_not_set_up),
        cmocka_unit_test(test_main_unlisted),
        cmocka_unit_test(test_cleared_between_reads),
        cmocka_unit_test(test_read_back_in_chain_order), cmocka_unit_test(test_stopped_top_from_cache),
        cmocka_unit_test(test_waiting_generator_top),
        cmocka_unit_test(test_resuming_caller_from_cache),
        cmocka_unit_test(test_generator_callee_resumed),
        cmocka_unit_test(test_batched_read_back_unreadable),
        cmocka_unit_test(test_unreadable_instructions),
        cmocka_unit_test(test_new_thread_with_main_ids),
        cmocka_unit_test(test_unstarted_state_not_main),
        cmocka_unit_test(test_read_back_from_lowest_frame),
        cmocka_unit_test(test_cycle_at_max_depth),
        cmocka_unit_test(test_generation_read_beside_head),
    };
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
