"""Bad-input tests of `frameproof dump`, `bench` and `replay` (TAP): every failure is a clean
one-line message and a defined exit status, never a crash or a hang.
usage: test_errors.py FRAMEPROOF_BINARY"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from tap_results import check, host_python, one_line_error, report, skip

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "facts"))
import fpfacts  # noqa: E402  (the shared facts)

FP = os.path.abspath(sys.argv[1])
TIMEOUT = 60


def dump(*args, user=None):
    cmd = [FP, "dump", *map(str, args)]
    if user is not None:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)


def free_pid():
    pid_max = int(open("/proc/sys/kernel/pid_max").read())
    for pid in range(pid_max - 1, 1, -1):
        if not os.path.exists(f"/proc/{pid}"):
            return pid
    raise RuntimeError("no free pid")


# 1. a pid that does not exist
r = dump("--pid", free_pid())
check("nonexistent pid", *one_line_error(r, 1, "does not exist"))

# 2. a process that is not Python
p = subprocess.Popen(["sleep", "60"])
try:
    time.sleep(0.1)
    r = dump("--pid", p.pid)
    check("non-Python process", *one_line_error(r, 1, f"process {p.pid} is not running Python (searched:"))
finally:
    p.kill()
    p.wait()

# 3. usage errors
for args, needle in ((["--pid", "0"], "invalid pid"), (["--pid", "abc"], "invalid pid"),
                     ([], "--pid is required"), (["--pid", "1", "--reader", "x"], "--reader"),
                     (["--pid", "1", "--async", "--count", "5"], "--count needs --async --json"),
                     (["--pid", "1", "--json", "--count", "5"], "--count needs --async --json"),
                     (["--pid", "1", "--async", "--json", "--count", "0"], "--count must be 1 to"),
                     (["--pid", "1", "--async", "--json", "--inject-fault", "stale-awaiter"],
                      "--inject-fault stale-awaiter needs --count"),
                     (["--pid", "1", "--async", "--json", "--count", "2", "--inject-fault", "x"],
                      "--inject-fault must be stale-awaiter")):
    r = dump(*args)
    ok = r.returncode == 2 and needle in r.stderr
    check(f"usage error {' '.join(args) or '(no args)'}", ok, f"status {r.returncode}, stderr {r.stderr!r}")

# 4. a process that exits while being sampled: every attempt ends cleanly
p = subprocess.Popen([host_python(), "-c",
                      "import time\nfor i in range(400): time.sleep(0.001)\n"])
statuses = set()
bad = None
deadline = time.time() + 30
while p.poll() is None and time.time() < deadline:
    r = dump("--pid", p.pid, "--json")
    statuses.add(r.returncode)
    if r.returncode not in (0, 1) or (r.returncode == 1 and len(r.stderr.strip().splitlines()) != 1):
        bad = f"status {r.returncode}, stderr {r.stderr[-500:]!r}"
        break
p.wait()
r = dump("--pid", p.pid)
check("process exiting while sampled", bad is None and r.returncode == 1 and
      ("exited" in r.stderr or "does not exist" in r.stderr), bad or f"after exit: {r.stderr!r}")

# 5. a process of another user, not privileged
if os.geteuid() == 0 and shutil.which("setpriv"):
    tmp = tempfile.mkdtemp()
    os.chmod(tmp, 0o755)
    fp_copy = os.path.join(tmp, "frameproof")
    shutil.copy2(FP, fp_copy)
    os.chmod(fp_copy, 0o755)
    p = subprocess.Popen([host_python(), "-c", "import time; time.sleep(60)"])
    try:
        time.sleep(0.3)
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", fp_copy, "dump", "--pid", str(p.pid)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
        check("other user's process", *one_line_error(r, 1, "permission denied reading process"))
    finally:
        p.kill()
        p.wait()
        shutil.rmtree(tmp)
else:
    skip("other user's process", "needs root and setpriv")

# 6. an unsupported CPython version (pyenv's 3.10, when the machine has it)
olds = sorted(glob.glob(os.path.join(os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv")),
                                     "versions", "3.10.*", "bin", "python3.10")))
if olds:
    p = subprocess.Popen([olds[0], "-c", "import time; time.sleep(60)"])
    try:
        time.sleep(0.3)
        r = dump("--pid", p.pid)
        check("CPython 3.10 rejected", *one_line_error(
            r, 1, "CPython 3.10: not supported (%s are)" % fpfacts.supported_range(fpfacts.load())))
    finally:
        p.kill()
        p.wait()
else:
    skip("CPython 3.10 rejected", "no CPython 3.10 on this machine")

# 7. a stack deeper than --max-depth is an error, never a truncated stack:
# that thread is printed failed (no frame), the others whole, exit 1
DEEP_THREAD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "targets", "bench", "deep_thread.py")
p = subprocess.Popen([host_python(), DEEP_THREAD, "50"], stdout=subprocess.PIPE, text=True)
try:
    p.stdout.readline()
    r = dump("--pid", p.pid, "--max-depth", "20")
    ok, detail = one_line_error(r, 1, "deeper than 20 frames")
    check("depth cap is an error", ok and "in other" in r.stdout and "in rec" not in r.stdout
          and "<stack not available: limit exceeded>" in r.stdout, detail + f", stdout {r.stdout[:300]!r}")
    r = dump("--pid", p.pid, "--max-depth", "20", "--json")
    threads = [t for i in json.loads(r.stdout)["interpreters"] for t in i["threads"]] if r.stdout else []
    failed = [t for t in threads if t.get("error")]
    check("depth cap in JSON: the deep thread failed, without frames, the other whole",
          r.returncode == 1 and len(threads) == 2 and len(failed) == 1 and not failed[0].get("frames")
          and any(f["function"] == "other" for t in threads for f in t.get("frames", [])), r.stderr + r.stdout[:300])
    r = dump("--pid", p.pid, "--json")
    check("the same stack below the cap", r.returncode == 0 and r.stdout.count('"function":"rec"') == 51, r.stderr)
finally:
    p.kill()
    p.wait()

# 8. --help tells the truth about the options
r = subprocess.run([FP, "dump", "--help"], capture_output=True, text=True, timeout=TIMEOUT)
check("dump --help", r.returncode == 0 and all(o in r.stdout for o in ("--pid", "--json", "--reader", "--max-depth")),
      r.stdout)

# 9. bench: bad pacing options are usage errors; --help names them
for args, needle in ((["--rate", "0"], "--rate"), (["--rate", "-1"], "--rate"), (["--rate", "nan"], "--rate"),
                     (["--rate", "1e9"], "--rate"), (["--duration", "abc"], "--duration"),
                     (["--duration", "0"], "--duration"), (["--duration", "inf"], "--duration")):
    r = subprocess.run([FP, "bench", "--pid", "1", *args], capture_output=True, text=True, timeout=TIMEOUT)
    check(f"bench usage error {' '.join(args)}", *one_line_error(r, 2, needle))
r = subprocess.run([FP, "bench", "--help"], capture_output=True, text=True, timeout=TIMEOUT)
check("bench --help", r.returncode == 0 and all(o in r.stdout for o in ("--rate", "--duration", "--samples",
                                                                       "--floor", "peak_rss_kib", "floor_us",
                                                                       "transient", "fatal")), r.stdout)

# 10. bench: a target that exits mid-run is a fatal failure (one line, exit 1);
# with --rate the report gives the schedule
p = subprocess.Popen([host_python(), "-c", "import time\nprint('ready', flush=True)\ntime.sleep(0.5)\n"],
                     stdout=subprocess.PIPE, text=True)
try:
    p.stdout.readline()
    r = subprocess.run([FP, "bench", "--pid", str(p.pid), "--duration", "30"], capture_output=True, text=True,
                       timeout=TIMEOUT)
    ok, detail = one_line_error(r, 1, "exited")
    check("bench: target exits mid-run", ok and r.stdout == "", detail)
finally:
    p.kill()
    p.wait()
# A running target: samples fail transiently (torn), and --json still prints
# exactly one JSON document, the first failure inside it.
RUNNING = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "targets", "bench", "running.py")
p = subprocess.Popen([host_python(), RUNNING], stdout=subprocess.PIPE, text=True)
try:
    p.stdout.readline()
    r = subprocess.run([FP, "bench", "--pid", str(p.pid), "--samples", "3000", "--json"], capture_output=True,
                       text=True, timeout=TIMEOUT)
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        doc = None
    ok = (r.returncode == 0 and isinstance(doc, dict) and doc.get("samples") == 3000
          and (doc.get("failed") == 0 or isinstance(doc.get("first_failure"), str)))
    check("bench --json on a running target prints one JSON document", ok, f"status {r.returncode}, {r.stdout!r}")
finally:
    p.kill()
    p.wait()
p = subprocess.Popen([host_python(), "-c", "import time\nprint('ready', flush=True)\ntime.sleep(60)\n"],
                     stdout=subprocess.PIPE, text=True)
try:
    p.stdout.readline()
    r = subprocess.run([FP, "bench", "--pid", str(p.pid), "--rate", "200", "--samples", "20", "--json"],
                       capture_output=True, text=True, timeout=TIMEOUT)
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        doc = {}
    ok = (r.returncode == 0 and doc.get("samples") == 20 and doc.get("fatal") == 0
          and doc.get("failed") == doc.get("transient") and doc.get("rate_hz") == 200
          and 0 < doc.get("achieved_rate_hz", 0) <= 200 and isinstance(doc.get("missed_ticks"), int)
          and 0 < doc.get("held_s", 0) < 1)  # the default holds the target for each sample (target time)
    check("bench --rate --json reports the schedule", ok, f"status {r.returncode}, {r.stdout!r} {r.stderr!r}")
    # A parked one-thread target: a handful of reads per sample, every one counted.
    ok = (1 <= doc.get("reads_p50", 0) <= 16 and doc.get("reads_mean", 0) >= 1
          and doc.get("bytes_p50", 0) > 0 and doc.get("bytes_mean", 0) > 0)
    check("bench --json reports reads and bytes per sample", ok, f"{r.stdout!r}")
    check("bench --json reports its peak RSS", doc.get("peak_rss_kib", 0) > 0, f"{r.stdout!r}")
    # --floor: a bare read of the bytes per sample, timed from one of the target's mappings.
    r = subprocess.run([FP, "bench", "--pid", str(p.pid), "--samples", "20", "--floor", "--json"],
                       capture_output=True, text=True, timeout=TIMEOUT)
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        doc = {}
    ok = r.returncode == 0 and (doc.get("floor_us") or 0) > 0 and doc.get("peak_rss_kib", 0) > 0
    check("bench --floor --json reports floor_us", ok, f"status {r.returncode}, {r.stdout!r} {r.stderr!r}")
finally:
    p.kill()
    p.wait()

# 11. replay --async of an image that records no task graph (captured without
# --async): one line naming what is missing (3.14+: asyncio's table; before,
# the graph's bytes, whose first read fails)
IMAGES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "corpora", "images")
for ident, needle in (("3.15", "no address of asyncio's table"),
                      ("3.11", "an image holds a task graph when `snapshot --async` captured one")):
    plain = os.path.join(IMAGES, ident, "basic.fpimg")
    r = subprocess.run([FP, "replay", "--async", "--json", plain], capture_output=True, text=True, timeout=TIMEOUT)
    ok, detail = one_line_error(r, 1, needle)
    check("replay --async of a %s image without a task graph" % ident, ok and r.stdout == "", detail)

report()
