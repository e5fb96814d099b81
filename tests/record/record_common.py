"""record_common.py — what the tests of `frameproof record` share: the
binary under test (the test's first argument), the target script and its
lines, the interpreters' placement, the record runner and the collapsed
profile's parser."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "facts"))
import fpfacts  # noqa: E402,F401  (re-exported: the facts the tests read)

FP = os.path.abspath(sys.argv[1])
HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = os.path.join(HERE, "record_target.py")
PARKED = os.path.join(HERE, "..", "..", "targets", "bench", "parked.py")  # threads blocked on a lock for good
PARKED_SHAPE = ("3", "4")  # threads, frames
DEEP_THREAD = os.path.join(HERE, "..", "..", "targets", "bench", "deep_thread.py")  # one thread 50+ calls deep
LOAD_SPEEDSCOPE = os.path.join(HERE, "load_speedscope.py")
LOAD_GECKO = os.path.join(HERE, "load_gecko.py")
CPYTHON_GECKO_ID = "3.15"   # the interpreter whose own sampler's gecko output is the reference shape
TIMEOUT = 120
RUN_SECONDS = 1.5        # how long record_target.py runs when launched
LONG_SECONDS = 60        # a target that outlives the test's own actions
STREAM_SECONDS = 4       # a launched target whose json stream is read as it comes
STREAM_RATE = 20         # Hz: slow enough that a buffered stream (4 KiB) would arrive only at the end
RATE = 200
# The hot/cold share checks sample at Poisson-spaced instants: at a fixed rate,
# a target whose hot()+cold() cycle lasts about one period (5.9 ms on the
# debug 3.15 build against 5 ms at 200 Hz) is seen at the same phase every
# time, and cold() can get more samples than hot() (seen: 149 against 134).
SHARE_SAMPLING = ("--poisson", "--seed", 11)
INTERRUPT_AFTER_S = 1.5
STARTUP_S = 1.0          # time for a --pid target's runtime to come up
UNHOLDABLE_RATE = 100000 # Hz, --rate's maximum: above any sample's cost, so --realtime misses ticks
UNHOLDABLE_SECONDS = 0.3 # short: such a run holds one CPU at real-time priority
STALE_BYTES = 1 << 20   # an earlier file at -o, longer than any profile of these runs
KEPT = re.compile(rb"thread samples kept: (\d+)")
WROTE = re.compile(rb"wrote (\S+) profile to (.+?): (\d+) distinct stacks in \d+ threads, (\d+) thread samples\n")
TOP_ROW = re.compile(rb"^ +([\d.]+) %  +([\d.]+) %  (\S+) \(", re.M)
DEFAULT_NAME = re.compile(r"^frameproof-(\d+)\.(txt|speedscope\.json|jsonl|gecko\.json)$")
SPIN_SHARE = 0.9         # the least share of hot()/cold() samples inside spin()


def schema_path(facts):
    home = os.environ.get("FRAMEPROOF_HOME") or facts["FRAMEPROOF_HOME_DEFAULT"]
    return os.path.join(home, "speedscope-" + facts["SPEEDSCOPE_VERSION"], "package", "dist", "release",
                        "file-format-schema.json")


class Interp:
    """An interpreter of the manifest with record_target.py placed in its root."""

    def __init__(self, entry):
        self.entry = entry
        self.root = entry.get("root", "/")
        self.tmp = tempfile.mkdtemp(prefix="fp-record-", dir=os.path.join(self.root, "tmp"))
        shutil.copy(TARGET, self.tmp)
        self.script = "/tmp/" + os.path.basename(self.tmp) + "/record_target.py"

    def argv(self, seconds):
        pre = ["chroot", self.root] if self.root != "/" else []
        return pre + list(self.entry["argv"]) + [self.script, str(seconds)]

    def close(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


WORKDIR = tempfile.mkdtemp(prefix="fp-record-cwd-")  # the current directory of every record run


def record(*args, timeout=TIMEOUT, cwd=None):
    return subprocess.run([FP, "record", "--no-progress", *map(str, args)], capture_output=True, timeout=timeout,
                          cwd=cwd or WORKDIR)


def default_profile(r, cwd):
    """The profile a launched command's run wrote to its default file (whose
    name the summary gives: frameproof-PID.EXT in cwd), removed after
    reading; None when the summary names no such file."""
    m = WROTE.search(r.stderr)
    name = m.group(2).decode() if m else ""
    if not DEFAULT_NAME.match(name) or not os.path.exists(os.path.join(cwd, name)):
        return None
    path = os.path.join(cwd, name)
    with open(path, "rb") as f:
        body = f.read()
    os.unlink(path)
    return body


def parse_collapsed(text):
    """{(thread label, (frame, ...)): count}, frames root first."""
    out = {}
    for line in text.decode().splitlines():
        stack, _, count = line.rpartition(" ")
        parts = stack.split(";")
        out[(parts[0], tuple(parts[1:]))] = out.get((parts[0], tuple(parts[1:])), 0) + int(count)
    return out


def func(frame):
    return frame.split(" (", 1)[0]


def target_lines():
    """{function: set of lines a sample may show it at} in record_target.py
    (a function entering shows its `def` line)."""
    with open(TARGET, encoding="utf-8") as f:
        src = f.read().splitlines()
    at = {text.strip(): i for i, text in enumerate(src, 1)}
    spin = at["def spin(n):"]
    return {"hot": {at["def hot():"], at["return spin(3 * UNIT)"]},
            "cold": {at["def cold():"], at["return spin(UNIT)"]},
            "spin": set(range(spin, at["return x"] + 1))}


def line_of(frame):
    return int(frame.rsplit(":", 1)[1].rstrip(")"))


LINES = target_lines()
