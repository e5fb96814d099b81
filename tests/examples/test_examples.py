"""The examples (examples/) against a real CPython (TAP): dump_pid prints a
parked target's known stack; sample_rate samples a running target at a rate
and keeps samples; both refuse bad usage with status 2.  The target is the
host's CPython (python3.11, else the interpreter running this test).
usage: test_examples.py DUMP_PID SAMPLE_RATE"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from tap_results import check, host_python, report  # noqa: E402

DUMP, RATE = sys.argv[1:3]
TIMEOUT = 120
PARKED = ("import time\n"
          "def parked_inner():\n"
          "    print('ready', flush=True); time.sleep(60)\n"
          "def parked_outer():\n"
          "    parked_inner()\n"
          "parked_outer()\n")
RUNNING = ("import time\n"
           "def spin(n):\n"
           "    return sum(range(n))\n"
           "print('ready', flush=True)\n"
           "end = time.monotonic() + 60\n"
           "while time.monotonic() < end:\n"
           "    spin(1000)\n")


def with_target(script, fn):
    p = subprocess.Popen([host_python(), "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        p.stdout.readline()
        fn(p.pid)
    finally:
        p.kill()
        p.wait()


def dump(pid):
    r = subprocess.run([DUMP, str(pid)], capture_output=True, text=True, timeout=TIMEOUT)
    lines = r.stdout.splitlines()
    frames = [line.split()[0] for line in lines if line.startswith("    ")]
    check("dump_pid exits 0", r.returncode == 0, r.stderr)
    check("dump_pid names the interpreter", bool(lines) and "CPython 3." in lines[0], r.stdout[:400])
    check("dump_pid prints the main thread's stack innermost first",
          frames == ["parked_inner", "parked_outer", "<module>"], r.stdout[:800])


def rate(pid):
    r = subprocess.run([RATE, str(pid), "200", "100"], capture_output=True, text=True, timeout=TIMEOUT)
    words = r.stdout.split()
    counts = dict(zip(words[0:6:2], words[1:6:2])) if len(words) >= 6 else {}
    check("sample_rate exits 0", r.returncode == 0, r.stderr)
    check("sample_rate counts every sample kept or torn",
          counts.get("samples") == "100" and int(counts.get("kept", 0)) + int(counts.get("torn", 0)) == 100,
          r.stdout)
    check("sample_rate keeps samples of a running target", int(counts.get("kept", 0)) > 0, r.stdout)


with_target(PARKED, dump)
with_target(RUNNING, rate)
for exe, args in ((DUMP, []), (DUMP, ["x"]), (RATE, ["1", "0", "5"])):
    r = subprocess.run([exe, *args], capture_output=True, text=True, timeout=TIMEOUT)
    check("%s %s: usage, status 2" % (os.path.basename(exe), " ".join(args)),
          r.returncode == 2 and ("usage" in r.stderr or "not a pid" in r.stderr), r.stderr)
gone = subprocess.run([DUMP, "2147483646"], capture_output=True, text=True, timeout=TIMEOUT)
check("dump_pid on no process: status 1, the library's message", gone.returncode == 1 and gone.stderr.strip(),
      gone.stderr)
report()
