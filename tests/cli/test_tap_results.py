"""tap_results itself (TAP): a check whose condition is None or another
false value fails, and only skip() marks a result skipped.
usage: test_tap_results.py"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from tap_results import check, report  # noqa: E402

# What a test with these results prints.
INNER = ("import sys; sys.path.insert(0, %r); from tap_results import check, skip, report; "
         "check('none', None); check('zero', 0); check('empty', ''); check('match', 're'); "
         "skip('absent', 'why'); report()") % HERE


def main():
    out = subprocess.run([sys.executable, "-c", INNER], capture_output=True, text=True, timeout=60).stdout
    lines = [x for x in out.splitlines() if not x.startswith("#")]
    want = ["1..5", "not ok 1 - none", "not ok 2 - zero", "not ok 3 - empty", "ok 4 - match",
            "ok 5 - absent # SKIP why"]
    check("None, 0 and '' fail; a true value passes; skip() skips", lines == want,
          "printed:\n%s" % out)
    report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
