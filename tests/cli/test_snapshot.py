"""Live tests of `frameproof snapshot` (TAP): the target is always resumed,
whether the capture succeeds, fails or this tool is killed in the middle of
it, and the image replays to exactly the live stack.
usage: test_snapshot.py FRAMEPROOF_BINARY CAPTURE_IMAGES_SCRIPT

1. every interpreter of the provisioning matrix (facts/facts.env; the
   manifest is read at run time, an id not provisioned is skipped), parked (targets/images/park_basic.py):
   snapshot, then no thread of the target is still stopped or traced, and
   `replay --json` of the image equals `dump --json` of the process;
2. a busy target with many threads: once the snapshot is seen tracing the
   target, it is sent SIGTERM, SIGINT, SIGHUP, SIGQUIT or SIGKILL; afterwards
   no thread is stopped or traced, the target keeps running (its heartbeat
   counter advances) and the output path holds either nothing or a complete
   image; most signals must land while the target is held;
   bench (its default: the running thread held on its CPU while read)
   killed by SIGKILL mid-run: every thread's CPU affinity is as before
   (its guard process gives a held thread its own back);
3. failures (no such pid, not Python, unwritable output) are one-line errors
   and leave the target running;
4. bench --pause-torn on a target whose threads switch call chains without
   pause: it stops threads whose walks tore (paused_walks > 0), every thread
   of the target keeps making progress while it samples, and none is left
   stopped or traced, also when bench is killed by any signal mid-run;
5. --keep-failed: a target stopped where `dump` refuses it (greenlets
   switching without pause, targets/images/switch_greenlets.py, on the first
   interpreter of the matrix that has greenlet): snapshot without the option
   fails with the dump's reason and writes nothing; with it, it writes the
   image, names the failure and exits 0, and the image replays the same
   refusal (exit 1, the dump's JSON and reason)."""
import importlib.machinery
import json
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from tap_results import check, one_line_error, report, skip

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "facts"))
import fpfacts  # noqa: E402  (the shared facts)

FP = os.path.abspath(sys.argv[1])
CAPTURE = os.path.abspath(sys.argv[2])
TIMEOUT = 60
# Threads of the busy target: enough that stopping them all takes a few ms.
BUSY_THREADS = 150
# Delays (seconds) before the signal, counted from the moment the target's
# main thread is seen traced by the snapshot (the capture is under way).
KILL_DELAYS = (0.0, 0.0005, 0.001, 0.002, 0.004, 0.008)
HELD_WAIT_S = 10.0
KILL_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGKILL)
# bench killed mid-hold: kills, the first as soon as a hold is seen, each next this much later.
HOLD_KILLS = 8
HOLD_KILL_STEP_S = 0.001
# How long the kernel may take to detach after the tracer died.
DETACH_GRACE_S = 2.0
HEARTBEAT_WAIT_S = 5.0
# The churning target of part 4: its threads, how long bench samples it,
# and the window in which the slowest thread must be seen progressing.
CHURN_THREADS = 4
PAUSE_TORN_SECONDS = 4
PROGRESS_WINDOW_S = 1.0
PROGRESS_AFTER_S = 0.5
SETTLE_TRIES = 20
SETTLE_PAUSE_S = 0.1

BUSY_TARGET = r"""
import os, sys, threading, time
path, n = sys.argv[1], int(sys.argv[2])
gate = threading.Event()
for _ in range(n):
    threading.Thread(target=gate.wait, daemon=True).start()
fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
print("ready", flush=True)
i = 0
while True:
    i += 1
    os.pwrite(fd, b"%20d" % i, 0)
    time.sleep(0.002)
"""


# Threads that switch between two call chains as fast as they can; the
# heartbeat is the progress of the slowest one (a thread left stopped
# freezes it).
CHURN_TARGET = r"""
import os, sys, threading, time
path, n = sys.argv[1], int(sys.argv[2])
counts = [0] * n

def leaf_a():
    return 1

def mid_a():
    return leaf_a()

def leaf_b():
    return 2

def mid_b():
    return leaf_b()

def churn(k):
    while True:
        mid_a()
        mid_b()
        counts[k] += 1

for k in range(n):
    threading.Thread(target=churn, args=(k,), daemon=True).start()
fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
print("ready", flush=True)
while True:
    os.pwrite(fd, b"%20d" % min(counts), 0)
    time.sleep(0.002)
"""


def load_capture_module():
    loader = importlib.machinery.SourceFileLoader("capture_images", CAPTURE)
    spec = importlib.util.spec_from_loader("capture_images", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def fp(*args):
    return subprocess.run([FP, *map(str, args)], capture_output=True, timeout=TIMEOUT)


def held_tasks(pid):
    """Threads of pid that are stopped or still traced: [(tid, state, tracer)]."""
    held = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return [("process", "gone", 0)]
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                status = f.read()
        except FileNotFoundError:
            continue
        state = re.search(r"^State:\s+(\S)", status, re.M).group(1)
        tracer = int(re.search(r"^TracerPid:\s+(\d+)", status, re.M).group(1))
        if state in "tT" or tracer != 0:
            held.append((tid, state, tracer))
    return held


def resumed(pid, grace=0.0):
    deadline = time.monotonic() + grace
    while True:
        held = held_tasks(pid)
        if not held:
            return True, ""
        if time.monotonic() >= deadline:
            return False, f"held threads (tid, state, tracer): {held[:5]} of {len(held)}"
        time.sleep(0.01)


def tracer_of(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            return int(re.search(r"^TracerPid:\s+(\d+)", f.read(), re.M).group(1))
    except (FileNotFoundError, AttributeError):
        return 0


def read_counter(path):
    with open(path, "rb") as f:
        data = f.read().strip()
    return int(data) if data else 0


def heartbeat_advances(path, seconds=HEARTBEAT_WAIT_S):
    start = read_counter(path)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if read_counter(path) > start:
            return True
        time.sleep(0.005)
    return False


def parked_interpreters(cap, tmp):
    manifest, every = fpfacts.matrix(fpfacts.load())
    for ident, interp in every:
        name = f"parked {ident}"
        if interp is None:
            skip(name, f"not provisioned (no entry in {manifest})")
            continue
        installed = cap.install_scripts(interp.get("root", "/"))
        try:
            proc = cap.start(interp, "basic")
        except RuntimeError as e:
            check(name, False, str(e))
            shutil.rmtree(installed, ignore_errors=True)
            continue
        try:
            img = os.path.join(tmp, interp["id"] + ".fpimg")
            # A slow (debug) build may still be settling into the park:
            # wait until two dumps in a row agree.
            live = fp("dump", "--pid", proc.pid, "--json")
            for _ in range(SETTLE_TRIES):
                again = fp("dump", "--pid", proc.pid, "--json")
                if again.stdout == live.stdout:
                    break
                live = again
                time.sleep(SETTLE_PAUSE_S)
            snap = fp("snapshot", "--pid", proc.pid, "-o", img)
            ok, detail = resumed(proc.pid)
            check(f"{name}: resumed after snapshot", snap.returncode == 0 and ok,
                  f"snapshot status {snap.returncode} {snap.stderr!r}; {detail}")
            replay = fp("replay", "--json", img)
            check(f"{name}: replay equals the live dump",
                  live.returncode == 0 and replay.returncode == 0 and live.stdout == again.stdout
                  and replay.stdout == live.stdout and live.stdout.count(b'"function":"recurse"') == 51,
                  f"dump {live.returncode} replay {replay.returncode} {replay.stderr!r}")
        finally:
            proc.kill()
            proc.wait()
            shutil.rmtree(installed, ignore_errors=True)


def start_busy(tmp, target=BUSY_TARGET, threads=BUSY_THREADS):
    beat = os.path.join(tmp, "heartbeat")
    proc = subprocess.Popen([sys.executable, "-c", target, beat, str(threads)],
                            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    line = proc.stdout.readline()
    if line.strip() != b"ready":
        proc.kill()
        proc.wait()
        raise RuntimeError(f"busy target printed {line!r}")
    return proc, beat


def killed_mid_capture(tmp):
    proc, beat = start_busy(tmp)
    outcomes = {}
    held_at_signal = 0
    trials = 0
    try:
        for i, delay in enumerate(KILL_DELAYS * 2):
            sig = KILL_SIGNALS[i % len(KILL_SIGNALS)]
            img = os.path.join(tmp, f"busy-{i}.fpimg")
            snap = subprocess.Popen([FP, "snapshot", "--pid", str(proc.pid), "-o", img],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            deadline = time.monotonic() + HELD_WAIT_S
            while tracer_of(proc.pid) != snap.pid and snap.poll() is None and time.monotonic() < deadline:
                pass
            time.sleep(delay)
            held = tracer_of(proc.pid) == snap.pid
            snap.send_signal(sig)
            _, err = snap.communicate(timeout=TIMEOUT)
            trials += 1
            held_at_signal += held
            outcome = "completed" if snap.returncode == 0 else f"status {snap.returncode}"
            outcome += ", sent while held" if held else ", sent after the capture"
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
            name = f"{sig.name} {delay * 1000:g} ms into the capture"
            ok, detail = resumed(proc.pid, DETACH_GRACE_S)
            check(f"{name}: target resumed ({outcome})", ok and proc.poll() is None, detail)
            check(f"{name}: target keeps running", heartbeat_advances(beat))
            if os.path.exists(img):
                r = fp("replay", img)
                check(f"{name}: the image written is complete", r.returncode == 0, r.stderr)
            else:
                check(f"{name}: no image written", snap.returncode != 0,
                      f"status 0 without an image; stderr {err!r}")
    finally:
        proc.kill()
        proc.wait()
    check(f"signals landed while the target was held ({held_at_signal} of {trials})",
          held_at_signal * 2 >= trials, f"outcomes: {outcomes}")


def failures(tmp):
    with open("/proc/sys/kernel/pid_max") as f:
        unused = next(p for p in range(int(f.read()) - 1, 1, -1) if not os.path.exists(f"/proc/{p}"))
    r = fp("snapshot", "--pid", unused, "-o", os.path.join(tmp, "none.fpimg"))
    check("no such pid: one-line error", *one_line_error(r, 1, "does not exist or exited"))

    p = subprocess.Popen(["sleep", "60"])
    try:
        time.sleep(0.1)
        r = fp("snapshot", "--pid", p.pid, "-o", os.path.join(tmp, "sleep.fpimg"))
        ok, detail = one_line_error(r, 1, "is not running Python")
        check("not Python: one-line error", ok, detail)
        ok, detail = resumed(p.pid)
        check("not Python: target resumed", ok and p.poll() is None, detail)
        check("not Python: no image written", not os.path.exists(os.path.join(tmp, "sleep.fpimg")))
    finally:
        p.kill()
        p.wait()

    proc, beat = start_busy(tmp)
    try:
        bad = os.path.join(tmp, "no-such-dir", "x.fpimg")
        r = fp("snapshot", "--pid", proc.pid, "-o", bad)
        ok, detail = one_line_error(r, 1, "cannot create")
        check("unwritable output: one-line error", ok, detail)
        ok, detail = resumed(proc.pid)
        check("unwritable output: target resumed", ok and heartbeat_advances(beat), detail)
    finally:
        proc.kill()
        proc.wait()


def default_signals():
    """The sampler must meet each signal's default action: a test run under
    nohup (or as a background job) would otherwise hand it SIGHUP (SIGINT,
    SIGQUIT) ignored, and it would never die."""
    for sig in KILL_SIGNALS:
        if sig != signal.SIGKILL:
            signal.signal(sig, signal.SIG_DFL)


def killed_mid_blocking_sampling(tmp):
    """bench --blocking stops every thread of the target for each sample; a
    sampler killed by any signal while the target is held must leave it
    running (the kernel detaches the tracees of a dying tracer)."""
    proc, beat = start_busy(tmp)
    held_at_signal = trials = 0
    try:
        for i, delay in enumerate(KILL_DELAYS):
            sig = KILL_SIGNALS[i % len(KILL_SIGNALS)]
            bench = subprocess.Popen([FP, "bench", "--pid", str(proc.pid), "--blocking", "--samples", "100000000"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=default_signals)
            deadline = time.monotonic() + HELD_WAIT_S
            while tracer_of(proc.pid) != bench.pid and bench.poll() is None and time.monotonic() < deadline:
                pass
            time.sleep(delay)
            held = tracer_of(proc.pid) == bench.pid
            bench.send_signal(sig)
            bench.communicate(timeout=TIMEOUT)
            trials += 1
            held_at_signal += held
            name = f"bench --blocking, {sig.name} {delay * 1000:g} ms into sampling"
            ok, detail = resumed(proc.pid, DETACH_GRACE_S)
            check(f"{name}: target resumed ({'sent while held' if held else 'sent between samples'})",
                  ok and proc.poll() is None, detail)
            check(f"{name}: target keeps running", heartbeat_advances(beat))
    finally:
        proc.kill()
        proc.wait()
    check(f"bench --blocking: signals landed while the target was held ({held_at_signal} of {trials})",
          held_at_signal * 2 >= trials)


def affinities(pid):
    """{tid: its CPU affinity} of every thread of pid."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            out[int(tid)] = frozenset(os.sched_getaffinity(int(tid)))
        except OSError:
            pass   # exited meanwhile
    return out


def killed_mid_hold(tmp):
    """bench's default holds the target's running thread on its CPU by
    narrowing that thread's affinity while it reads; killed by SIGKILL
    mid-hold, its guard process (harness/sampler/hold_guard.c) gives the
    thread its affinity back: every thread's affinity is as before each
    kill (test_colocate_hold_guard is the check's mutant, a hold without
    a guard left narrowed)."""
    if len(os.sched_getaffinity(0)) < 2:
        skip("bench killed mid-hold", "one CPU: nothing to narrow")
        return
    proc, beat = start_busy(tmp)
    narrowed_at_kill = 0
    try:
        before = affinities(proc.pid)
        for i in range(HOLD_KILLS):
            bench = subprocess.Popen([FP, "bench", "--pid", str(proc.pid), "--samples", "100000000"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=default_signals)
            # The main thread (the one held: the busy target's GIL holder
            # or main thread) seen narrowed once: bench is sampling, however
            # long it took to start (a sanitizer build is slow to).
            deadline = time.monotonic() + HELD_WAIT_S
            while len(os.sched_getaffinity(proc.pid)) == len(before[proc.pid]) and bench.poll() is None and \
                    time.monotonic() < deadline:
                pass
            time.sleep(HOLD_KILL_STEP_S * i)
            narrowed_at_kill += len(os.sched_getaffinity(proc.pid)) == 1
            bench.kill()
            bench.communicate(timeout=TIMEOUT)
            deadline = time.monotonic() + DETACH_GRACE_S
            while affinities(proc.pid) != before and time.monotonic() < deadline:
                time.sleep(0.01)
            after = affinities(proc.pid)
            changed = sorted(t for t in before if after.get(t, before[t]) != before[t])
            check(f"bench killed by SIGKILL {HOLD_KILL_STEP_S * i * 1000:g} ms after a hold was seen: every "
                  "thread's CPU affinity as before", not changed and heartbeat_advances(beat),
                  f"threads with another affinity: {changed[:5]}")
    finally:
        proc.kill()
        proc.wait()
    check(f"bench killed mid-hold: a thread was held when the kill was sent ({narrowed_at_kill} of {HOLD_KILLS})",
          narrowed_at_kill >= 1)


def pause_torn_sampling(tmp):
    """bench --pause-torn stops a thread whose walks keep tearing, alone,
    walks it and resumes it: the target's threads all keep moving while it
    samples, and nothing is left stopped, however bench ends."""
    proc, beat = start_busy(tmp, CHURN_TARGET, CHURN_THREADS)
    try:
        bench = subprocess.Popen([FP, "bench", "--pid", str(proc.pid), "--pause-torn", "--duration",
                                  str(PAUSE_TORN_SECONDS), "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(PROGRESS_AFTER_S)
        moving = all(heartbeat_advances(beat, PROGRESS_WINDOW_S) for _ in range(2))
        out, err = bench.communicate(timeout=TIMEOUT)
        try:
            doc = json.loads(out)
        except ValueError:
            doc = {}
        check("bench --pause-torn: threads whose walks tore were stopped and walked again",
              bench.returncode == 0 and doc.get("paused_walks", 0) > 0,
              f"status {bench.returncode}: {out.decode(errors='replace')} {err.decode(errors='replace')}")
        check("bench --pause-torn: every thread of the target keeps making progress while it samples", moving)
        ok, detail = resumed(proc.pid, DETACH_GRACE_S)
        check("bench --pause-torn: afterwards no thread is stopped or traced", ok and proc.poll() is None, detail)
        for i, delay in enumerate(KILL_DELAYS):
            sig = KILL_SIGNALS[i % len(KILL_SIGNALS)]
            bench = subprocess.Popen([FP, "bench", "--pid", str(proc.pid), "--pause-torn", "--samples", "100000000"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=default_signals)
            time.sleep(PROGRESS_AFTER_S + delay)
            bench.send_signal(sig)
            bench.communicate(timeout=TIMEOUT)
            ok, detail = resumed(proc.pid, DETACH_GRACE_S)
            check(f"bench --pause-torn, {sig.name} {delay * 1000:g} ms after {PROGRESS_AFTER_S:g} s: target resumed",
                  ok and proc.poll() is None, detail)
        check("bench --pause-torn: the target keeps running after the signals", heartbeat_advances(beat))
    finally:
        proc.kill()
        proc.wait()


def keep_failed(cap, tmp):
    """--keep-failed on a refused state: the first interpreter of the
    matrix running targets/images/hold_cut.py, whose frame chain is cut on
    purpose (the instants greenlet's switch left refused are walked now)."""
    manifest, every = fpfacts.matrix(fpfacts.load())
    for ident, interp in every:
        if interp is None:
            continue
        installed = cap.install_scripts(interp.get("root", "/"))
        try:
            proc = cap.start(interp, "cut", "hold_")
        except cap.NotInstalled:
            shutil.rmtree(installed, ignore_errors=True)
            continue
        name = f"--keep-failed ({ident})"
        img = os.path.join(tmp, "refused.fpimg")
        try:
            live = cap.stop_until_refused(FP, proc)
            why = live.stderr.decode(errors="replace").strip().split(": ", 1)[-1]
            plain = fp("snapshot", "--pid", proc.pid, "--no-stop", "-o", img)
            check(f"{name}: without it, the dump's refusal is an error and nothing is written",
                  plain.returncode == 1 and why in plain.stderr.decode(errors="replace")
                  and not os.path.exists(img), f"status {plain.returncode} {plain.stderr!r}")
            kept = fp("snapshot", "--pid", proc.pid, "--no-stop", "--keep-failed", "-o", img)
            check(f"{name}: the image is written and the failure named",
                  kept.returncode == 0 and b"although sample" in kept.stderr
                  and why in kept.stderr.decode(errors="replace") and os.path.exists(img),
                  f"status {kept.returncode} {kept.stderr!r}")
            replay = fp("replay", "--json", img)
            check(f"{name}: the image replays the same refusal",
                  replay.returncode == 1 and replay.stdout == live.stdout
                  and why in replay.stderr.decode(errors="replace"),
                  f"replay {replay.returncode} {replay.stderr!r}; dump {live.stderr!r}")
        finally:
            proc.kill()
            proc.wait()
            shutil.rmtree(installed, ignore_errors=True)
        return
    skip("--keep-failed", "no interpreter of the matrix is provisioned")


def main():
    cap = load_capture_module()
    with tempfile.TemporaryDirectory(prefix="fp-snapshot-") as tmp:
        for part in (lambda: parked_interpreters(cap, tmp), lambda: killed_mid_capture(tmp),
                     lambda: killed_mid_blocking_sampling(tmp), lambda: killed_mid_hold(tmp), lambda: failures(tmp),
                     lambda: pause_torn_sampling(tmp), lambda: keep_failed(cap, tmp)):
            try:
                part()
            except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
                check("setup", False, repr(e))
    report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
