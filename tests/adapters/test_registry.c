/* test_registry.c — which adapter configurations an --unwinder name
 * selects: a plain name every configuration but those that run only when
 * named, NAME:CONFIG exactly that one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "adapter.h"
#include "conform.h"
#include "registry.h"

#define ERR_LEN 512u
#define PAUSE_TORN "vm+cache+pause-torn"

static void test_plain_name_leaves_out_named_only(void **state)
{
    (void)state;
    const char *names[] = {"frameproof"};
    cf_adapter_opts o = {0};
    cf_adapter_set set;
    char err[ERR_LEN] = "";
    assert_int_equal(cf_adapter_set_build(names, 1, &o, &set, err, sizeof err), CF_OK);
    assert_int_equal(set.count, 6);
    for (size_t i = 0; i < set.count; i++) {
        assert_false(set.defs[i].named_only);
        assert_string_not_equal(set.defs[i].config, PAUSE_TORN);
    }
    cf_adapter_set_free(&set);
}

static void test_named_config_selected(void **state)
{
    (void)state;
    const char *names[] = {"frameproof:" PAUSE_TORN, "frameproof:vm+cache"};
    cf_adapter_opts o = {0};
    cf_adapter_set set;
    char err[ERR_LEN] = "";
    assert_int_equal(cf_adapter_set_build(names, 2, &o, &set, err, sizeof err), CF_OK);
    assert_int_equal(set.count, 2);
    assert_string_equal(set.defs[0].config, PAUSE_TORN);
    assert_true(set.defs[0].named_only);
    assert_string_equal(set.defs[1].config, "vm+cache");
    cf_adapter_set_free(&set);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_name_leaves_out_named_only),
        cmocka_unit_test(test_named_config_selected),
    };
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
