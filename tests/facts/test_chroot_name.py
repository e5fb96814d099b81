"""targets/groundtruth/run_scenario.py names a checkout's copy inside a
chroot as the harness does (cf_chroot_targets): the known name of one path,
which conform_unit/target_sync asserts of the C spelling too, and the
name of this checkout's targets directory.
usage: test_chroot_name.py SOURCE_DIR"""
import os
import sys

SOURCE = sys.argv[1]
sys.path.insert(0, os.path.join(SOURCE, "targets", "groundtruth"))
sys.path.insert(0, os.path.join(SOURCE, "tests", "cli"))
import run_scenario  # noqa: E402
from tap_results import check, report  # noqa: E402

# The same path and name as KNOWN_PATH / KNOWN_NAME in test_target_sync.c.
KNOWN_PATH = "/frameproof/no-such-checkout/targets"
KNOWN_NAME = "/tmp/frameproof-targets-b454cbd606347065"

got = run_scenario.chroot_targets(KNOWN_PATH)
check("the known path has the known name", got == KNOWN_NAME, got)
check("another path has another name", run_scenario.chroot_targets(KNOWN_PATH + "2") != KNOWN_NAME)
here = run_scenario.chroot_targets(os.path.join(SOURCE, "targets"))
check("this checkout's copy is the one the runner uses", run_scenario.CHROOT_TARGETS == here,
      "%s against %s" % (run_scenario.CHROOT_TARGETS, here))
report()
