"""conform's unwinder and interpreter selection: --python-path runs the
suite on an interpreter binary without a manifest (version and build
detected), and bad selections are usage errors with one-line messages.
usage: test_options.py FRAMEPROOF TAP_HELPER_DIR WORK_DIR"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, sys.argv[2])
from tap_results import check, one_line_error, report, skip  # noqa: E402

TIMEOUT = 300
HOST_PYTHON = "/usr/bin/python3.11"


def conform(fp, *args, env=None):
    return subprocess.run([fp, "conform", *args], capture_output=True, text=True, timeout=TIMEOUT, env=env)


def main():
    fp, work = sys.argv[1], sys.argv[3]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    # No manifest anywhere: --python-path alone must be enough.
    env = dict(os.environ, FRAMEPROOF_HOME=os.path.join(work, "no-home"))
    if os.access(HOST_PYTHON, os.X_OK):
        rep = os.path.join(work, "path")
        r = conform(fp, "--python-path", HOST_PYTHON, "--scenario", "plain_calls", "--report-dir", rep, env=env)
        check("--python-path runs without a manifest", r.returncode == 0, f"status {r.returncode}: {r.stderr[-800:]}")
        try:
            report_json = json.load(open(os.path.join(rep, "report.json"), encoding="utf-8"))
            interp = report_json["interpreters"][0]
            check("--python-path detects the version and build",
                  interp["version"].startswith("3.11.") and interp["free_threaded"] is False
                  and interp["debug"] is False and interp["untested"] is False and interp["root"] == "/",
                  json.dumps(interp))
            case = report_json["cases"][0]
            check("--python-path case compared by every frameproof configuration",
                  case["status"] == "pass" and len(case["unwinders"]) == 6
                  and all(u["samples"] > 0 for u in case["unwinders"]), json.dumps(case)[:800])
        except (OSError, ValueError, KeyError, IndexError) as e:
            check("--python-path report", False, repr(e))
        # Regression: an unwinder that does not apply (cpython on 3.11) must
        # not turn the case into a skip for the one that does.
        rep = os.path.join(work, "mixed")
        r = conform(fp, "--unwinder", "cpython", "--unwinder", "frameproof", "--python-path", HOST_PYTHON,
                    "--scenario", "plain_calls", "--report-dir", rep, env=env)
        try:
            case = json.load(open(os.path.join(rep, "report.json"), encoding="utf-8"))["cases"][0]
            check("an inapplicable unwinder is n/a while the other runs",
                  r.returncode == 0 and case["status"] == "pass"
                  and case["verdicts"] == {"cpython": "n/a", "frameproof": "pass"}, json.dumps(case)[:800])
        except (OSError, ValueError, KeyError, IndexError) as e:
            check("an inapplicable unwinder is n/a while the other runs", False, repr(e))
    else:
        skip("--python-path runs without a manifest", HOST_PYTHON + " is not installed")
    r = conform(fp, "--python-path", "/bin/true", "--report-dir", os.path.join(work, "true"), env=env)
    check("--python-path on a non-Python binary", *one_line_error(r, 1, "is it a CPython interpreter?"))
    r = conform(fp, "--python-path", os.path.join(work, "missing"), env=env)
    check("--python-path on a missing file", *one_line_error(r, 1, "No such file or directory"))
    r = conform(fp, "--unwinder", "nosuch", "--python-path", HOST_PYTHON, env=env)
    check("unknown unwinder", *one_line_error(r, 2, 'unknown unwinder "nosuch"; known: frameproof cpython austin command'))
    r = conform(fp, "--unwinder", "frameproof:vm+cach", "--python-path", HOST_PYTHON, env=env)
    check("unknown configuration", *one_line_error(
        r, 2, 'unknown configuration "vm+cach" of frameproof; known: vm+cache vm+nocache mem+cache mem+nocache '
        'vm+cache+blocking vm+cache+pause-torn'))
    r = conform(fp, "--unwinder", "command:x", env=env)
    check("--unwinder command:CONFIG without --unwinder-cmd", r.returncode == 2 and "needs --unwinder-cmd" in r.stderr,
          r.stderr)
    r = conform(fp, "--unwinder", "command", env=env)
    lines = r.stderr.strip().splitlines()
    check("--unwinder command without --unwinder-cmd",
          r.returncode == 2 and "needs --unwinder-cmd" in lines[0], r.stderr)
    r = conform(fp, "--unwinder-cmd", "x", env=env)
    check("--unwinder-cmd without {pid}", r.returncode == 2 and "must contain {pid}" in r.stderr, r.stderr)
    r = conform(fp, "--differential", env=env)
    check("--differential is gone", r.returncode == 2 and "differential" in r.stderr, r.stderr)
    report()


if __name__ == "__main__":
    main()
