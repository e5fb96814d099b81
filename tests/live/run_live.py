"""A short `frameproof conform --live` run of every live scenario on one
interpreter with the frameproof unwinder, then the same with each live
mutant (--inject-fault splice-previous, frame-cache-by-address), reported
as TAP.
usage: run_live.py FRAMEPROOF REPORT_DIR ID [--samples N] [--duration S]
(the budget of the plain run; each mutant run samples for 1.5 s)

Verdict: every run completes without harness errors; in the plain run every
scenario that applies is sampled by every configuration (wrong and rejected
counts are printed as TAP comments, not judged, but for the blocking
configuration, which must give valid samples and no wrong one) and gives
valid samples over its non-blocking configurations together; in each mutant
run every scenario catches the mutant (a mutated sample judged wrong whose
original was not) in at least one configuration.
A liveness verdict that fails (no valid sample, mutant not caught) is run
once more for that scenario alone with a ten times larger budget, and the
second run decides it (both are printed): a loaded machine can starve a
short run, but no budget excuses a wrong blocking sample or a harness
error, which are never run again.
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
# The mutants every scenario must catch.
FAULTS = ("splice-previous", "frame-cache-by-address")
# The mutant runs sample by time: a mutant needs the target to move on
# between two samples, which a loaded machine slows down.
FAULT_BUDGET = ["--samples", "50000", "--duration", "1.5"]
RETRY_SCALE = 10  # the budget of a liveness verdict's second run, times the first


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


def judged(title, valid, samples, scenario):
    """A TAP line: some valid sample, or a skip when the budget left too few
    samples to judge (a loaded machine can starve a slow configuration).
    The scenario is named: a failure may be run again."""
    if valid == 0 and samples < MIN_SAMPLES_JUDGED:
        return ("skip", title, "only %d samples in the budget" % samples, [], None)
    return ("pass" if valid > 0 else "fail", title, "no valid sample in %d" % samples,
            ["valid %d of %d samples" % (valid, samples)], scenario)


def scaled(budget):
    """The budget of a second run: every --samples and --duration times RETRY_SCALE."""
    out = list(budget)
    for i, arg in enumerate(out[:-1]):
        if arg in ("--samples", "--duration"):
            v = float(out[i + 1]) * RETRY_SCALE
            out[i + 1] = str(int(v)) if arg == "--samples" else "%g" % v
    return out


def plain_lines(report, proc):
    lines = []
    for case in report["cases"]:
        name = "%s %s" % (case["interpreter"], case["scenario"])
        if case["status"] == "skip":
            lines.append(("skip", name, case.get("summary", ""), [], None))
            continue
        if case["status"] == "error" or not configs(case):
            lines.append(("fail", name + " (harness error)", case.get("error", case.get("summary", "")), [], None))
            continue
        live_valid = live_samples = 0
        for c in configs(case):
            notes = ["samples %d, valid %d, rejected %d, wrong %d, %.0f samples/s" % (
                c["samples"], c["valid"], c["rejected"], c["wrong"], c["samples_per_second"])]
            if c["wrong"]:
                notes.append("wrong by rule: %s" % json.dumps(c["wrong_by_rule"], sort_keys=True))
            lines.append(("fail" if c.get("attach_error") else "pass", "%s [%s] attaches and samples" % (
                name, c["name"]), c.get("attach_error", ""), notes, None))
            if c["name"].endswith("+blocking"):
                # Every thread stopped for each sample: correct by construction.
                lines.append(("pass" if c["wrong"] == 0 else "fail", "%s [%s] returns no wrong sample" % (
                    name, c["name"]), "%d wrong samples" % c["wrong"], [], None))
                lines.append(judged("%s [%s] gives valid samples" % (name, c["name"]), c["valid"], c["samples"],
                                     case["scenario"]))
            else:
                live_valid += c["valid"]
                live_samples += c["samples"]
        # A running target tears some samples of every configuration (a
        # fast-switching scenario most of them); over the non-blocking
        # configurations together each scenario must still give valid ones.
        lines.append(judged("%s gives valid samples without stopping the target" % name, live_valid, live_samples,
                             case["scenario"]))
    lines.append(("pass" if proc.returncode in (0, 1) else "fail", "conform --live exit status",
                  "exit %d: %s" % (proc.returncode, proc.stderr[-500:]), [], None))
    return lines


def fault_lines(fault):
    """The verdict of a run with a live fault: per scenario and interpreter,
    over all configurations, the declaration catches the mutant (one
    configuration may see few mutated samples that differ: its samples
    rejected as torn, or consecutive stacks alike)."""
    def judge(report, proc):
        lines = []
        for case in report["cases"]:
            name = "%s %s" % (case["interpreter"], case["scenario"])
            if case["status"] == "skip":
                continue
            if case["status"] == "error" or not configs(case):
                lines.append(("fail", "%s %s (harness error)" % (name, fault), case.get("error", ""), [], None))
                continue
            cs = configs(case)
            caught = sum(c["splice_caught"] for c in cs)
            changed = sum(c["spliced_threads"] for c in cs)
            samples = sum(c["samples"] for c in cs)
            lines.append(("pass" if caught > 0 else "fail", "%s catches %s" % (name, fault),
                          "no mutated sample was judged wrong (%d threads changed in %d samples)" % (changed, samples),
                          ["%s: %d of %d samples caught" % (c["name"], c["splice_caught"], c["samples"]) for c in cs], case["scenario"]))
        lines.append(("pass" if proc.returncode == 1 else "fail", "conform --live exits 1 on wrong samples (%s)" % fault,
                      "exit %d" % proc.returncode, [], None))
        return lines
    return judge


def second_run(fp, sub, interp, budget, extra, judge, first, scenarios):
    """Runs the scenarios whose liveness verdicts failed again, alone, with a
    larger budget; their failed liveness lines take the second run's verdict
    (the first run's evidence kept as comments), and any failure of the
    second run that no budget excuses is added."""
    retry = []
    for sc in scenarios:
        retry += ["--scenario", sc]
    report, proc = run(fp, sub + "-again", interp, scaled(budget), extra + retry)
    if report is None:
        return first + [("fail", "conform --live (second run of %s) produced live.json" % ", ".join(scenarios),
                         "exit %d; stderr: %s" % (proc.returncode, proc.stderr[-2000:]), [], None)]
    second = {ln[1]: ln for ln in judge(report, proc)}
    out = []
    for ln in first:
        if ln[0] == "fail" and ln[4] and ln[1] in second:
            st, name, detail, notes, sc = second[ln[1]]
            out.append((st, name + " (run again, %dx budget)" % RETRY_SCALE, detail,
                        ["first run: " + ln[2]] + ln[3] + ["second run:"] + notes, sc))
        else:
            out.append(ln)
    names = {ln[1] for ln in first}
    out += [(st, name + " (second run)", detail, notes, None)
            for st, name, detail, notes, sc in second.values()
            if st == "fail" and (not sc or name not in names)]
    return out


def main(argv):
    fp, report_dir, interp, budget = argv[1], argv[2], argv[3], argv[4:]
    manifest, entries = fpfacts.provisioned(fpfacts.load())
    if interp not in entries:
        print("1..0 # SKIP interpreter %s not provisioned (no entry in %s)" % (interp, manifest))
        return 0
    lines = []
    runs_to_do = [("plain", budget, [], plain_lines)]
    for fault in FAULTS:
        runs_to_do.append((fault, FAULT_BUDGET, ["--inject-fault", fault], fault_lines(fault)))
    for label, runs, extra, judge in runs_to_do:
        sub = os.path.join(report_dir, label)
        report, proc = run(fp, sub, interp, runs, extra)
        if report is None:
            lines.append(("fail", "conform --live (%s) produced live.json" % label,
                          "exit %d; stderr: %s" % (proc.returncode, proc.stderr[-2000:]), [], None))
            continue
        first = judge(report, proc)
        again = sorted({ln[4] for ln in first if ln[0] == "fail" and ln[4]})
        if again:
            first = second_run(fp, sub, interp, runs, extra, judge, first, again)
        lines += first
    print("1..%d" % len(lines))
    for i, (status, name, detail, notes, _) in enumerate(lines, 1):
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
