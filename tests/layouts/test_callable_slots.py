"""test_callable_slots — the callee-function check's premise, on every
provisioned interpreter: targets/layouts/probe_callable_slots.py, run by
the interpreter itself, must find every form of call that pushes its callee
directly (CALL, CALL_KW, and from 3.12 CALL_FUNCTION_EX) leaving the
function where the walk looks for it (3.11-3.13 at the saved stack depth,
3.14+ where the saved stack pointer points), but at the specialised
instructions gen_call_sites leaves out of that set (CALLABLE_ELSEWHERE),
which must be met where expected.  One case per id of the provisioning
matrix; ids not provisioned are skipped."""
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "facts"))
from tap_results import check, report, skip  # noqa: E402
import fpfacts  # noqa: E402

PROBE = os.path.join(HERE, "..", "..", "targets", "layouts", "probe_callable_slots.py")
GEN = os.path.join(HERE, "..", "..", "targets", "layouts", "gen_call_sites")
CHECKED_MINORS = (11, 12, 13, 14, 15)
TIMEOUT = 60
# The forms each version must report as checked (pushed directly, the
# function where the walk looks): a probe that stopped seeing one would
# otherwise pass by calling it "through C".
DIRECT = {
    11: ["CALL f(a, b)", "CALL_KW f(a, b=1)", "CALL obj.method()"],
    12: ["CALL f(a, b)", "CALL_KW f(a, b=1)", "CALL obj.method()", "CALL_FUNCTION_EX f(*args)",
         "CALL_FUNCTION_EX f(**kwargs)"],
    13: ["CALL f(a, b)", "CALL_KW f(a, b=1)", "CALL obj.method()", "CALL_FUNCTION_EX f(*args)",
         "CALL_FUNCTION_EX f(**kwargs)"],
}
DIRECT[14] = DIRECT[15] = DIRECT[13]
# The forms that must reach an instruction of CALLABLE_ELSEWHERE: without
# it the callee check refused every stack through such a call (3.13: a
# bound method object called with fewer arguments than parameters).
SPECIALISED_FREE_THREADED = 14  # a free-threaded 3.13 does not specialise its instructions
ELSEWHERE = {13: ["CALL bound() with a default (specialised)", "CALL Klass.classmethod() with a default (specialised)"]}


def callable_elsewhere(minor):
    """gen_call_sites's CALLABLE_ELSEWHERE forms of that minor version."""
    loader = importlib.machinery.SourceFileLoader("gen_call_sites", GEN)
    spec = importlib.util.spec_from_loader("gen_call_sites", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return [f for f, (lo, hi) in mod.CALLABLE_ELSEWHERE.items() if lo <= minor <= hi]


def run(entry, elsewhere):
    root = entry.get("root", "/")
    tmp = tempfile.mkdtemp(prefix="fp-slots-", dir=os.path.join(root, "tmp"))
    try:
        shutil.copy(PROBE, tmp)
        script = os.path.join(tmp, os.path.basename(PROBE))
        argv = list(entry["argv"]) + ["-I", script[len(root.rstrip("/")):] if root != "/" else script] + elsewhere
        if root != "/":
            argv = ["chroot", root] + argv
        return subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    for iid, entry in fpfacts.matrix(fpfacts.load())[1]:
        name = f"{iid}: callers keep the function they called"
        if entry is None:
            skip(name, "not provisioned")
            continue
        minor = int(entry["version"].split(".")[1])
        if minor not in CHECKED_MINORS:
            skip(name, "a version the probe does not know")
            continue
        r = run(entry, callable_elsewhere(minor))
        lines = dict(ln.split("\t")[1:3] for ln in r.stdout.splitlines() if ln.count("\t") == 2)
        missing = [f for f in DIRECT[minor] if not lines.get(f, "").startswith(("function", "NULL"))]
        specialises = not (entry.get("free_threaded") and minor < SPECIALISED_FREE_THREADED)
        unmet = [f for f in ELSEWHERE.get(minor, []) if specialises and not lines.get(f, "").startswith("elsewhere")]
        check(name, r.returncode == 0 and not missing and not unmet,
              f"status {r.returncode}, not checked: {missing}, not met elsewhere: {unmet}, "
              f"output {r.stdout!r} {r.stderr!r}")
    report()


main()
