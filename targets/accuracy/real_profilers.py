"""real_profilers.py — the interpreters, workloads and profilers of the
real-workload accuracy verdict (ci/accuracy real), and how each profiler
is run on a workload to completion and read back into leaves (leaves.py).

The profiler list is a table (profiler_table): frameproof's modes are
named by what they are (the reference, the default, the old default, the
mutants); the flags that select each come from what `frameproof record
--help` offers, so the table follows the build it runs."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

import leaves

HERE = os.path.dirname(os.path.abspath(__file__))
REAL_DIR = os.path.join(HERE, "real")
SAMPLER_SCRIPT = os.path.join(HERE, "remote_unwinder_record.py")
sys.path.insert(0, os.path.join(HERE, "..", "..", "facts"))
import fpfacts  # noqa: E402

RUN_TIMEOUT_S = 900
DEBUG_SCALE = 0.3           # Py_DEBUG builds run the same work several times slower
CPYTHON_SAMPLING_MINOR = 15  # profiling.sampling first shipped in 3.15
REMOTE_UNWINDER_MINOR = 14   # _remote_debugging.RemoteUnwinder first shipped in 3.14
AUSTIN_MINORS = (8, 13)      # austin 3.7's README: "Austin supports Python 3.8 through 3.13"

# workload: (script in real/, its arguments for a scale and a Py_DEBUG build)
WORKLOADS = {
    # the test suite's list is fixed: a scale of N >= 2 runs it N times (rounded)
    "testsuite": ("testsuite.py", lambda scale, debug: ["short" if debug or scale < 1 else "full",
                                                        str(max(1, round(scale)))]),
    "gevent": ("gevent_pool.py", lambda scale, debug: ["%g" % (scale * (DEBUG_SCALE if debug else 1))]),
    "asyncio": ("asyncio_tasks.py", lambda scale, debug: ["%g" % (scale * (DEBUG_SCALE if debug else 1))]),
    # the asyncio workload with two functions timed from inside
    # (selftimed.py; ci/accuracy_inside.py names them); {dir} is the place's directory
    "asyncio-inside": ("selftimed.py", lambda scale, debug: [
        "selectors:EpollSelector.select,asyncio.base_events:BaseEventLoop.call_soon",
        "{dir}/inside.txt", "{dir}/asyncio_tasks.py", "%g" % (scale * (DEBUG_SCALE if debug else 1))]),
}
WORKLOADS["asyncio-tasks"] = WORKLOADS["asyncio"]
# The workloads seen as task stacks (the async-aware profilers,
# task_profiler_table): their script, its coroutines, a frame of which on a
# thread's stack means a task is running there (main: the TaskGroup's
# owner, task: each worker, handle: gather's children and the workers'
# callee, fetch: below handle), and the plain functions they call.
TASK_COROUTINES = {"asyncio-tasks": ("asyncio_tasks.py", ("main", "task", "handle", "fetch"),
                                     ("build", "digest", "score", "<genexpr>"))}
# Workloads whose rows take this many references and runs of each profiler
# unless --references and --runs say otherwise: asyncio-tasks keeps about 1 600 samples a run, and its floor
# from three references' three pairs came out at 0.016 and 0.020 on 3.14,
# below the about 0.036 that sampling noise alone puts between two such
# runs (and that fifteen pairs measured), which failed the judged profiler.
MIN_RUNS = {"asyncio-tasks": 6}
# what ci/accuracy real judges against its reference; asyncio-inside is judged
# against the truth from inside, by ci/accuracy inside alone
REAL_WORKLOADS = ("testsuite", "gevent", "asyncio", "asyncio-tasks")
ASYNC_MINOR = 11            # frameproof reads asyncio task graphs of 3.11+ (docs/async.md)


class ProfileError(Exception):
    """A profiler run that gave no profile; the message says why (one line)."""


def last_line(text, fallback):
    lines = [ln for ln in (text or "").strip().splitlines() if ln.strip()]
    return lines[-1].strip() if lines else fallback


def minor_of(entry):
    return int(entry["version"].split(".")[1])


class Interp:
    """A row's interpreter: a manifest entry, run with the entry's "env" on
    top of this process's environment without PYTHON_JIT, so the JIT is on
    exactly for the JIT ids ("3.15+jit": PYTHON_JIT=1, docs/jit.md)."""

    def __init__(self, entry):
        self.entry = entry
        self.jit = bool(entry.get("jit"))
        self.id = entry["id"]
        self.extra_env = dict(entry.get("env") or {})
        self.root = entry.get("root", "/")
        self.minor = minor_of(entry)
        self.debug = bool(entry.get("debug"))
        self.free_threaded = bool(entry.get("free_threaded"))

    def prefix(self):
        return ["chroot", self.root] if self.root != "/" else []

    def env(self):
        env = dict(os.environ)
        env.pop("PYTHON_JIT", None)
        env.update(self.extra_env)
        return env


class Place:
    """The workload scripts and the RemoteUnwinder sampler copied into a
    fresh directory of the interpreter's root (its /tmp), where profiles are
    written too: inner(name) is a file's path as the target sees it,
    host(name) as this process does."""

    def __init__(self, interp):
        self.dir = tempfile.mkdtemp(prefix="fp-real-", dir=os.path.join(interp.root, "tmp"))
        os.chmod(self.dir, 0o755)
        for name in os.listdir(REAL_DIR):
            if name.endswith(".py"):
                shutil.copy(os.path.join(REAL_DIR, name), self.dir)
        shutil.copy(SAMPLER_SCRIPT, self.dir)

    def inner(self, name):
        return "/tmp/" + os.path.basename(self.dir) + "/" + name

    def host(self, name):
        return os.path.join(self.dir, name)

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def workload_args(interp, place, workload, scale):
    """The workload's command as seen inside the interpreter's root, without the interpreter."""
    script, args = WORKLOADS[workload]
    return [place.inner(script)] + [a.replace("{dir}", place.inner("").rstrip("/")) for a in args(scale, interp.debug)]


def check_workload(interp, place, workload):
    """None when the workload can run on interp, else why not (its `check` mode)."""
    script = WORKLOADS[workload][0]
    r = subprocess.run(interp.prefix() + list(interp.entry["argv"]) + [place.inner(script), "check"],
                       capture_output=True, text=True, timeout=120, env=interp.env())
    return None if r.returncode == 0 else last_line(r.stderr or r.stdout, f"exit {r.returncode}")


def run(cmd, env):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        raise ProfileError(f"did not finish within {RUN_TIMEOUT_S} s") from None


def task_keep(workload):
    """On a task-stack workload, the samples every profile is read for:
    those of a task of the workload running (leaves.tasks_of) — of a
    thread-stack profile (the reference's) the samples holding a frame of
    the workload's coroutines, of a task-stack profile those whose own
    frames do; None elsewhere (every sample)."""
    return leaves.tasks_of(*TASK_COROUTINES[workload]) if workload in TASK_COROUTINES else None


# --- the profilers ------------------------------------------------------------------
# Each runner: (ctx, interp, place, workload, scale, flags) -> (Leaves, ticks or None).

def run_frameproof(ctx, interp, place, workload, scale, flags):
    out = place.host("frameproof.json")
    cmd = [ctx.frameproof, "record", "--no-progress", "--format", "json", "-o", out, "--rate", str(ctx.rate)] + \
        flags + ["--"] + interp.prefix() + list(interp.entry["argv"]) + workload_args(interp, place, workload, scale)
    r = run(cmd, interp.env())
    if r.returncode != 0 or not os.path.exists(out):
        raise ProfileError(last_line(r.stderr, f"frameproof exited {r.returncode}"))
    got, summary = leaves.frameproof_json(out, task_keep(workload))
    return got, summary.get("attempts")


def run_cpython_sampling(ctx, interp, place, workload, scale, flags):
    # every thread (-a); with --async-aware, which refuses -a, every task
    threads = [] if "--async-aware" in flags else ["-a"]
    cmd = interp.prefix() + list(interp.entry["argv"]) + \
        ["-m", "profiling.sampling", "run"] + threads + ["-r", str(ctx.rate), "--collapsed", "-o", place.inner("cpython.txt")] + \
        flags + workload_args(interp, place, workload, scale)
    r = run(cmd, interp.env())
    if r.returncode != 0 or not os.path.exists(place.host("cpython.txt")):
        raise ProfileError(last_line(r.stderr, f"profiling.sampling exited {r.returncode}"))
    # Its closing summary: "Captured N samples in S seconds" (attempts, failed ones included).
    m = re.search(r"Captured (\d+) samples", r.stdout + r.stderr)
    return leaves.collapsed(place.host("cpython.txt"), task_keep(workload)), int(m.group(1)) if m else None


def run_remote_unwinder(ctx, interp, place, workload, scale, flags):
    target = subprocess.Popen(interp.prefix() + list(interp.entry["argv"]) + workload_args(interp, place, workload, scale),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=interp.env())
    sampler = subprocess.Popen(interp.prefix() + list(interp.entry["argv"]) +
                               [place.inner(os.path.basename(SAMPLER_SCRIPT)), str(target.pid), str(ctx.rate),
                                place.inner("remote.txt")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _, target_err = target.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        target.kill()
        target.wait()
        sampler.kill()
        sampler.wait()
        raise ProfileError(f"the target did not finish within {RUN_TIMEOUT_S} s") from None
    sampler.send_signal(signal.SIGTERM)
    out, err = sampler.communicate(timeout=60)
    if target.returncode != 0:
        raise ProfileError("the target failed: " + last_line(target_err, f"exit {target.returncode}"))
    if sampler.returncode != 0 or not out.strip():
        raise ProfileError("the sampler failed: " + last_line(err, f"exit {sampler.returncode}"))
    return leaves.collapsed(place.host("remote.txt")), json.loads(last_line(out, "{}")).get("ticks")


def austin_prefix(interp):
    """How austin runs for interp (as harness/adapters/austin.c does):
    inside a chrooted target's root; for a host target, on the host through
    the loader and libraries of the root austin is installed in."""
    facts = fpfacts.load()
    if interp.root != "/":
        return ["chroot", interp.root, facts["AUSTIN_EXE"]]
    home = os.environ.get("FRAMEPROOF_HOME") or facts["FRAMEPROOF_HOME_DEFAULT"]
    root = os.path.join(home, facts["AUSTIN_HOST_ROOT"])
    return [root + facts["AUSTIN_LOADER"], "--library-path", root + facts["AUSTIN_LIBDIR"], root + facts["AUSTIN_EXE"]]


def run_austin(ctx, interp, place, workload, scale, flags):
    prefix = austin_prefix(interp)
    exe = prefix[-1] if interp.root == "/" else interp.root + prefix[-1]
    if not os.access(exe, os.X_OK):
        raise ProfileError(f"no austin at {exe} (targets/provision installs it)")
    out_seen = place.inner("austin.txt") if interp.root != "/" else place.host("austin.txt")
    cmd = prefix + ["-i", str(max(1, round(1e6 / ctx.rate))), "-o", out_seen] + flags + \
        list(interp.entry["argv"]) + workload_args(interp, place, workload, scale)
    r = run(cmd, interp.env())
    if r.returncode != 0 or not os.path.exists(place.host("austin.txt")):
        raise ProfileError(last_line(r.stderr, f"austin exited {r.returncode}"))
    # Its closing statistics: "Error rate : E/N (...) invalid samples", N the samples taken.
    m = re.search(r"Error rate\D*\d+/(\d+)", re.sub(r"\x1b\[[0-9;]*m", "", r.stderr))
    return leaves.austin(place.host("austin.txt")), int(m.group(1)) if m else None


# --- the table ----------------------------------------------------------------------

class Profiler:
    """name (the table's), role: "reference" (exact by construction),
    "judged" (must pass the verdict), "mutant" (must fail it), "field"
    (reported, not judged); runner and flags; applies(interp) -> None or
    why it cannot run there."""

    def __init__(self, name, role, runner, flags=(), applies=None):
        self.name, self.role, self.runner, self.flags = name, role, runner, list(flags)
        self.applies = applies or (lambda interp: None)


def missing_flags(help_text, flags):
    """The flags (and flag values) that help_text does not mention."""
    return [f for f in flags if f not in help_text]


def frameproof_modes(help_text):
    """{mode: flags} for the build whose `record --help` is help_text: the
    new default (colocated, torn threads paused) is plain `record` once
    --no-colocate exists, `--colocate --pause-torn` before."""
    if "--no-colocate" in help_text:
        return {"default": [], "old default": ["--no-colocate", "--no-pause-torn"]}
    return {"default": ["--colocate", "--pause-torn"], "old default": []}


def cpython_sampling_applies(interp):
    if interp.minor < CPYTHON_SAMPLING_MINOR:
        return f"profiling.sampling first shipped in CPython 3.{CPYTHON_SAMPLING_MINOR}"
    return None


def async_applies(interp):
    if interp.minor < ASYNC_MINOR:
        return f"frameproof reads asyncio task graphs of CPython 3.{ASYNC_MINOR}+ (docs/async.md)"
    return None


def remote_unwinder_applies(interp):
    if interp.minor < REMOTE_UNWINDER_MINOR:
        return f"RemoteUnwinder first shipped in CPython 3.{REMOTE_UNWINDER_MINOR}"
    if interp.minor > REMOTE_UNWINDER_MINOR:
        return "run on 3.14 only: from 3.15 on profiling.sampling, which samples with it, stands for it"
    return None


def austin_applies(interp):
    if not AUSTIN_MINORS[0] <= interp.minor <= AUSTIN_MINORS[1]:
        return f"austin 3.7 supports CPython 3.{AUSTIN_MINORS[0]} to 3.{AUSTIN_MINORS[1]}"
    return None


def reference_from_afar(help_text):
    """The reference with its stop asked from another CPU (--no-colocate):
    the stop lands when the kernel's interruption reaches the thread, or
    at its next system call when that comes first, which over-weights
    stacks that make system calls.  The mutant of ci/accuracy inside's
    check of the reference (not a row of ci/accuracy real: there it would
    fail only on rows rich in system calls)."""
    return needs_flags(Profiler("frameproof --blocking from afar", "mutant", run_frameproof,
                                ["--blocking", "--realtime", "--no-colocate"]), help_text)


def needs_flags(p, help_text):
    """p, which does not apply when help_text (`record --help`) lacks one
    of its flags."""
    gone = missing_flags(help_text, p.flags)
    if gone:
        p.applies = lambda interp: "this frameproof build has no " + " ".join(gone)
    return p


def profiler_table(help_text):
    """Every profiler of the verdict, the reference first."""
    modes = frameproof_modes(help_text)
    table = [
        # --realtime: a stopped sample costs more than a tick on a loaded
        # machine; at real-time priority the reference holds far more of
        # the rate, and its floor is lower (it stays exact either way).
        Profiler("frameproof --blocking", "reference", run_frameproof, ["--blocking", "--realtime"]),
        Profiler("frameproof", "judged", run_frameproof, modes["default"]),
        Profiler("frameproof old default", "field", run_frameproof, modes["old default"]),
        # the default before the hold: colocated, the thread free to run on another CPU while read
        Profiler("frameproof --no-hold", "field", run_frameproof, ["--no-hold"]),
        Profiler("mutant drop-torn", "mutant", run_frameproof, ["--inject-fault", "drop-torn"]),
        Profiler("mutant retry-quiet", "mutant", run_frameproof, ["--inject-fault", "retry-quiet"]),
        Profiler("cpython profiling.sampling", "field", run_cpython_sampling, [], cpython_sampling_applies),
        Profiler("cpython profiling.sampling --blocking", "field", run_cpython_sampling, ["--blocking"],
                 cpython_sampling_applies),
        Profiler("cpython RemoteUnwinder", "field", run_remote_unwinder, [], remote_unwinder_applies),
        Profiler("austin", "field", run_austin, [], austin_applies),
    ]
    return [needs_flags(p, help_text) if p.runner is run_frameproof else p for p in table]


def task_profiler_table(help_text):
    """Every profiler of the task-stack workloads (TASK_COROUTINES), the
    reference first: profiler_table's, read for its samples of a task running."""
    table = [
        profiler_table(help_text)[0],
        Profiler("frameproof --async", "judged", run_frameproof, ["--async"], async_applies),
        Profiler("mutant no-task-step", "mutant", run_frameproof, ["--async", "--inject-fault", "no-task-step"],
                 async_applies),
        Profiler("cpython profiling.sampling --async-aware", "field", run_cpython_sampling, ["--async-aware"],
                 cpython_sampling_applies),
    ]
    return [table[0]] + [needs_flags(p, help_text) if p.runner is run_frameproof else p for p in table[1:]]


def table_of(workload, help_text):
    """The profiler table of a workload: task stacks or thread stacks."""
    return task_profiler_table(help_text) if workload in TASK_COROUTINES else profiler_table(help_text)
