"""ci/result_file.py (TAP): the command a result file names leaves out the
options that name this machine's paths, in both spellings, and keeps every
other argument in order.
usage: test_result_file.py SOURCE_DIR"""
import os
import sys

SOURCE = sys.argv[1]
sys.path.insert(0, os.path.join(SOURCE, "ci"))
sys.path.insert(0, os.path.join(SOURCE, "tests", "cli"))
import result_file  # noqa: E402
from tap_results import check, report  # noqa: E402

got = result_file.public_args(["--python", "3.11", "--frameproof", "/some/where/frameproof", "--runs", "3",
                               "--report-dir=/tmp/x", "--workload", "asyncio", "--report-dir", "out"])
check("paths left out, the rest kept in order", got == ["--python", "3.11", "--runs", "3", "--workload", "asyncio"],
      got)
check("nothing to leave out: unchanged", result_file.public_args(["--rate", "250"]) == ["--rate", "250"])
check("a path option's value is left out with it, even when it looks like an option",
      result_file.public_args(["--frameproof", "--runs", "2"]) == ["2"])
report()
