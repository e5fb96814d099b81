"""A short `frameproof conform --live` run of every live scenario on one
interpreter with the frameproof unwinder, then the same with
--inject-fault splice-previous, reported as TAP.
usage: run_live.py FRAMEPROOF REPORT_DIR ID [--samples N] [--duration S]
(the budget of the plain run; the splice run samples for 1.5 s)

Verdict: both runs complete without harness errors; in the plain run every
scenario that applies gives every configuration valid samples (its wrong and
rejected counts are printed as TAP comments, not judged: the live unwinder
is being fixed); in the splice run every scenario catches the mutant (a
spliced sample judged wrong whose original was not) in at least one
configuration.
The manifest is read when the test runs ($FRAMEPROOF_HOME/interpreters.json):
an interpreter that is not provisioned skips the test ("1..0 # SKIP")."""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "facts"))
import fpfacts  # noqa: E402  (the shared facts)

TIMEOUT = 1500
# The splice run samples by time: the mutant needs the target to move on
# between two samples, which a loaded machine slows down.
SPLICE_BUDGET = ["--samples", "50000", "--duration", "1.5"]


def run(fp, report_dir, interp, budget, extra):
    shutil.rmtree(report_dir, ignore_errors=True)
    proc = subprocess.run([fp, "conform", "--live", "--python", interp, "--report-dir", report_dir,
                           *budget, *extra], capture_output=True, text=True, timeout=TIMEOUT)
    path = os.path.join(report_dir, "live.json")
    if not os.path.exists(path):
        return None, proc
    with open(path, encoding="utf-8") as f:
        return json.load(f), proc


MIN_SAMPLES_JUDGED = 20  # fewer samples than this in a configuration's budget: no verdict on "valid"


def configs(case):
    return [c for c in case.get("unwinders") or [] if c["status"] != "n/a"]


def plain_lines(report, proc):
    lines = []
    for case in report["cases"]:
        name = "%s %s" % (case["interpreter"], case["scenario"])
        if case["status"] == "skip":
            lines.append(("skip", name, case.get("summary", ""), []))
            continue
        if case["status"] == "error" or not configs(case):
            lines.append(("fail", name + " (harness error)", case.get("error", case.get("summary", "")), []))
            continue
        for c in configs(case):
            notes = ["samples %d, valid %d, rejected %d, wrong %d, %.0f samples/s" % (
                c["samples"], c["valid"], c["rejected"], c["wrong"], c["samples_per_second"])]
            if c["wrong"]:
                notes.append("wrong by rule: %s" % json.dumps(c["wrong_by_rule"], sort_keys=True))
            ok = c["valid"] > 0 and not c.get("attach_error")
            title = "%s [%s] gives valid samples" % (name, c["name"])
            if not ok and not c.get("attach_error") and c["samples"] < MIN_SAMPLES_JUDGED:
                # A loaded machine can leave a slow configuration a handful
                # of samples in the short budget: too few to judge.
                lines.append(("skip", title, "only %d samples in the budget" % c["samples"], notes))
                continue
            lines.append(("pass" if ok else "fail", title, c.get("attach_error", "no valid sample"), notes))
    lines.append(("pass" if proc.returncode in (0, 1) else "fail", "conform --live exit status",
                  "exit %d: %s" % (proc.returncode, proc.stderr[-500:]), []))
    return lines


def splice_lines(report, proc):
    lines = []
    for case in report["cases"]:
        name = "%s %s" % (case["interpreter"], case["scenario"])
        if case["status"] == "skip":
            continue
        if case["status"] == "error" or not configs(case):
            lines.append(("fail", name + " splice-previous (harness error)", case.get("error", ""), []))
            continue
        # Per scenario and interpreter, over all configurations: one
        # configuration may see few splices that differ (its samples rejected
        # as torn, or consecutive stacks alike), the declaration must still
        # catch the mutant in the scenario.
        cs = configs(case)
        caught = sum(c["splice_caught"] for c in cs)
        spliced = sum(c["spliced_threads"] for c in cs)
        samples = sum(c["samples"] for c in cs)
        lines.append(("pass" if caught > 0 else "fail", "%s catches splice-previous" % name,
                      "no spliced sample was judged wrong (%d threads spliced in %d samples)" % (spliced, samples),
                      ["%s: %d of %d samples caught" % (c["name"], c["splice_caught"], c["samples"]) for c in cs]))
    lines.append(("pass" if proc.returncode == 1 else "fail", "conform --live exits 1 on wrong samples",
                  "exit %d" % proc.returncode, []))
    return lines


def main(argv):
    fp, report_dir, interp, budget = argv[1], argv[2], argv[3], argv[4:]
    manifest, entries = fpfacts.provisioned(fpfacts.load())
    if interp not in entries:
        print("1..0 # SKIP interpreter %s not provisioned (no entry in %s)" % (interp, manifest))
        return 0
    lines = []
    for label, runs, extra, judge in (("plain", budget, [], plain_lines),
                                      ("splice", SPLICE_BUDGET, ["--inject-fault", "splice-previous"],
                                       splice_lines)):
        sub = os.path.join(report_dir, label)
        report, proc = run(fp, sub, interp, runs, extra)
        if report is None:
            lines.append(("fail", "conform --live (%s) produced live.json" % label,
                          "exit %d; stderr: %s" % (proc.returncode, proc.stderr[-2000:]), []))
            continue
        lines += judge(report, proc)
    print("1..%d" % len(lines))
    for i, (status, name, detail, notes) in enumerate(lines, 1):
        if status == "skip":
            print("ok %d - %s # SKIP %s" % (i, name, detail))
            continue
        print("%s %d - %s" % ("ok" if status == "pass" else "not ok", i, name))
        for n in notes:
            print("# " + n)
        if status != "pass":
            for d in str(detail).splitlines()[:20]:
                print("# " + d)
    print("# reports: %s" % report_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
