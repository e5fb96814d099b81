"""The harness survives bad targets (TAP): a target that hangs (with a child
process of its own), one that writes garbage on the channel, one that
crashes, and one that exits before saying "done" are each reported as a
harness error, the run exits 1, reports are still written, and no process
of those targets survives; Ctrl-C stops a run with status 130, partial
reports and no stray processes.
The manifest is read when the test runs; without a host interpreter in it
the test is skipped.
usage: test_robustness.py FRAMEPROOF TARGETS_DIR WORK_DIR"""
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "facts"))
import fpfacts  # noqa: E402  (the shared facts)

FP, TARGETS, WORK = sys.argv[1:4]
MARK = "fp-robustness-marker"
PROLOGUE = ("import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "
            "'..', 'groundtruth'))\nimport fpgt\n")
SCENARIOS = {
    "hang": PROLOGUE + "import subprocess, time\nfpgt.start('hang')\n"
            "subprocess.Popen(['sleep', '300', '%s'])\ntime.sleep(300)\n" % MARK,
    "garbage": PROLOGUE + "fpgt.start('garbage')\nos.write(int(os.environ['FP_GT_WFD']), b'this is not json\\n')\n"
               "import time\ntime.sleep(300)\n",
    "crash": PROLOGUE + "fpgt.start('crash')\nos.abort()\n",
    "early_exit": PROLOGUE + "fpgt.start('early_exit')\nos._exit(0)\n",
}

results = []


def check(name, ok, detail=""):
    results.append((name, ok, detail))


def marker_processes():
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = open("/proc/%s/cmdline" % pid, "rb").read()
        except OSError:
            continue
        if MARK.encode() in cmd or (WORK.encode() in cmd and b"scenarios" in cmd):
            found.append(pid)
    return found


MANIFEST, provisioned = fpfacts.provisioned(fpfacts.load())
host = [e for e in provisioned.values() if e["root"] == "/"]
shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(os.path.join(WORK, "targets", "scenarios"))
shutil.copytree(os.path.join(TARGETS, "groundtruth"), os.path.join(WORK, "targets", "groundtruth"))
index = {"scenarios": []}
for name, src in SCENARIOS.items():
    with open(os.path.join(WORK, "targets", "scenarios", name + ".py"), "w") as f:
        f.write(src)
    index["scenarios"].append({"name": name, "file": name + ".py", "min_version": "3.11", "max_version": None,
                               "builds": "any", "timeout": 3, "fast": True, "description": name})
json.dump(index, open(os.path.join(WORK, "targets", "scenarios", "index.json"), "w"))

if not host:
    print("1..1\nok 1 - harness robustness # SKIP no host interpreter in the manifest")
    sys.exit(0)
report = os.path.join(WORK, "report")
start = time.monotonic()
proc = subprocess.run([FP, "conform", "--manifest", MANIFEST, "--targets", os.path.join(WORK, "targets"),
                       "--python", host[0]["id"], "--report-dir", report, "--jobs", "2"],
                      capture_output=True, text=True, timeout=300)
elapsed = time.monotonic() - start
check("conform exits 1 on harness errors", proc.returncode == 1, "exit %d: %s" % (proc.returncode, proc.stderr[-800:]))
check("bad targets do not stall the run", elapsed < 60, "%.1f s" % elapsed)
try:
    rep = json.load(open(os.path.join(report, "report.json")))
    cases = {c["scenario"]: c for c in rep["cases"]}
except (OSError, ValueError) as e:
    rep, cases = None, {}
    check("report.json written", False, str(e))
for name in SCENARIOS:
    c = cases.get(name)
    check("%s reported as a harness error" % name, c is not None and c["status"] == "error",
          json.dumps(c)[:600] if c else "no case")
for f in ("junit.xml", "matrix.md"):
    check("%s written" % f, os.path.exists(os.path.join(report, f)))
time.sleep(0.5)
left = marker_processes()
check("no stray processes survive", not left, "still running: %s" % left)
for pid in left:
    try:
        os.kill(int(pid), 9)
    except OSError:
        pass

# Ctrl-C: the run stops at once with exit 130, partial reports, no strays.
import signal
report2 = os.path.join(WORK, "report-interrupted")
p = subprocess.Popen([FP, "conform", "--manifest", MANIFEST, "--targets", os.path.join(WORK, "targets"),
                      "--python", host[0]["id"], "--scenario", "hang", "--report-dir", report2],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
time.sleep(1.0)
p.send_signal(signal.SIGINT)
try:
    out, err = p.communicate(timeout=30)
    status = p.returncode
except subprocess.TimeoutExpired:
    p.kill()
    out, err = p.communicate()
    status = None
check("Ctrl-C stops the run with status 130", status == 130, "status %s: %s" % (status, err[-500:]))
check("Ctrl-C still writes the reports", os.path.exists(os.path.join(report2, "report.json")))
time.sleep(0.5)
left = marker_processes()
check("no stray processes after Ctrl-C", not left, "still running: %s" % left)
for pid in left:
    try:
        os.kill(int(pid), 9)
    except OSError:
        pass

print("1..%d" % len(results))
for i, (name, ok, detail) in enumerate(results, 1):
    print(("ok %d - %s" if ok else "not ok %d - %s") % (i, name))
    if not ok:
        for line in str(detail).splitlines()[:10]:
            print("# " + line)
