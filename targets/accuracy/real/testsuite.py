"""testsuite.py — a real workload of the accuracy verdict (ci/accuracy
real): CPython's own regression tests, `python -m test -q MODULE...`, run
in this process (regrtest without -j runs its tests sequentially in the
process that started it, so the profiled pid is the one running them).  A
FIXED module list that exists in the test suite of every interpreter of the
matrix (3.11 to 3.15, Debian's libpython3.X-testsuite and 3.13t's own
Lib/test); it runs to completion (see gevent_pool.py for why).

usage: testsuite.py [full | short | check] [REPEAT]   (short: the list for
Py_DEBUG builds, which run the same tests several times slower, and for
quick runs; REPEAT: run the list that many times in this process, default
1; check: exit 0 when every module of both lists is installed here, else
name the missing ones)"""
import importlib.util
import runpy
import sys

# About 5 s on CPython 3.11 and 4 s on 3.15 (non-debug, 2 cores, nothing
# else running); each runs to completion.  test_json and test_itertools are
# left out: they spend seconds waiting for children or in one big test, and
# the full reference of every interpreter must stay within about 40 minutes.
FULL = ["test_re", "test_textwrap", "test_difflib", "test_fractions", "test_functools", "test_enum",
        "test_dataclasses", "test_generators", "test_collections", "test_heapq"]
# Py_DEBUG builds and quick runs: a shorter list of the same kind (about 2 s on 3.11).
SHORT = ["test_re", "test_textwrap", "test_fractions", "test_heapq"]
LISTS = {"full": FULL, "short": SHORT}


def main():
    which = sys.argv[1] if len(sys.argv) > 1 else "full"
    if which == "check":
        missing = [m for m in FULL + SHORT if importlib.util.find_spec("test." + m) is None]
        if missing:
            sys.exit(f"CPython's test suite is not installed for this interpreter (no test.{missing[0]}; "
                     f"Debian: libpython3.X-testsuite)")
        return
    if which not in LISTS:
        sys.exit(f"testsuite.py: unknown list {which!r} (one of {', '.join(LISTS)})")
    status = 0
    for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 1):
        sys.argv = ["python -m test", "-q"] + LISTS[which]
        try:   # regrtest ends with sys.exit(status)
            runpy.run_module("test", run_name="__main__", alter_sys=True)
        except SystemExit as e:
            status = status or e.code
    sys.exit(status)


if __name__ == "__main__":
    main()
