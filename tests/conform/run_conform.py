"""Runs `frameproof conform` on a selection and reports every case x
unwinder configuration as a TAP test (from the JSON report), so the test suite
counts what was really compared.
usage: run_conform.py FRAMEPROOF REPORT_DIR [conform options...]
With --expect-mismatch, the run must FAIL with readable diffs instead (used
with --inject-fault to prove the harness catches a wrong unwinder).
The manifest is read when the test runs (--manifest, else
$FRAMEPROOF_HOME/interpreters.json): when an interpreter named by --python
is not provisioned, the whole test is skipped (TAP "1..0 # SKIP").
--first-provisioned stands for --python with the manifest's first id."""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "facts"))
import fpfacts  # noqa: E402  (the shared facts)

TIMEOUT = 1200


def resolve_interpreters(rest):
    """(conform arguments, None) with --first-provisioned replaced, or
    (None, skip reason) when a requested interpreter is not provisioned."""
    given = rest[rest.index("--manifest") + 1] if "--manifest" in rest[:-1] else None
    manifest, entries = fpfacts.provisioned(fpfacts.load(), given)
    out = []
    for i, arg in enumerate(rest):
        if arg == "--first-provisioned":
            if not entries:
                return None, "no interpreter provisioned (no entries in %s)" % manifest
            out += ["--python", next(iter(entries))]
            continue
        if i > 0 and rest[i - 1] == "--python" and arg not in entries:
            return None, "interpreter %s not provisioned (no entry in %s)" % (arg, manifest)
        out.append(arg)
    return out, None


def main(argv):
    fp, report_dir, rest = argv[1], argv[2], argv[3:]
    expect_mismatch = "--expect-mismatch" in rest
    rest = [a for a in rest if a != "--expect-mismatch"]
    rest, why = resolve_interpreters(rest)
    if why:
        print("1..0 # SKIP %s" % why)
        return 0
    shutil.rmtree(report_dir, ignore_errors=True)
    proc = subprocess.run([fp, "conform", "--report-dir", report_dir, *rest],
                          capture_output=True, text=True, timeout=TIMEOUT)
    path = os.path.join(report_dir, "report.json")
    if not os.path.exists(path):
        print("1..1\nnot ok 1 - conform produced a report")
        print("# exit %d; stderr: %s" % (proc.returncode, proc.stderr[-2000:].replace("\n", "\n# ")))
        return 1
    report = json.load(open(path, encoding="utf-8"))
    lines = []
    for case in report["cases"]:
        name = "%s %s" % (case["interpreter"], case["scenario"])
        if case["status"] == "skip":
            lines.append(("skip", name, case.get("summary", "")))
            continue
        configs = [c for c in case.get("unwinders") or [] if c["status"] != "n/a"]
        if case["status"] == "error" or not configs:
            lines.append(("fail", name + " (harness error)", case.get("summary", "")))
            continue
        for c in configs:
            ok = c["status"] == "pass"
            detail = "; ".join(str(f) for f in c.get("failures", [])[:5])
            if expect_mismatch:
                ok = c["status"] == "fail" and ("missing frame" in detail or "expected" in detail)
                detail = "expected a readable mismatch, got: " + (detail or c["status"])
            lines.append(("pass" if ok else "fail", "%s [%s]" % (name, c["name"]), detail))
    if expect_mismatch:
        lines.append(("pass" if proc.returncode == 1 else "fail", "conform exits 1 on a mismatch",
                      "exit %d" % proc.returncode))
    elif proc.returncode not in (0, 1):
        lines.append(("fail", "conform exit status", "exit %d: %s" % (proc.returncode, proc.stderr[-500:])))
    print("1..%d" % len(lines))
    for i, (status, name, detail) in enumerate(lines, 1):
        if status == "skip":
            print("ok %d - %s # SKIP %s" % (i, name, detail))
        elif status == "pass":
            print("ok %d - %s" % (i, name))
        else:
            print("not ok %d - %s" % (i, name))
            for d in str(detail).splitlines()[:20]:
                print("# " + d)
    print("# report: %s" % report_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
