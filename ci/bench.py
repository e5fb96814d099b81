"""bench.py — the body of ci/bench: frameproof's speed side by side with
CPython's own unwinder (_remote_debugging.RemoteUnwinder) on parked and live
targets of the provisioned CPython 3.15, and frameproof's figures alone on
every other provisioned interpreter; one Markdown table plus a JSON of every
figure in bench-report/.  Run it through ci/bench (see there for usage)."""
import argparse
import json
import os
import re
import select
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "facts"))
sys.path.insert(0, os.path.join(REPO, "ci"))
import fpfacts  # noqa: E402  (the shared facts: where the manifest lives)
import result_file  # noqa: E402  (the commit a result file is stamped with)

BENCH_TARGETS = os.path.join(REPO, "targets", "bench")
TARGET_FILES = ("parked.py", "running.py", "remote_unwinder_bench.py")
REFERENCE_ID = "3.15"                       # the interpreter compared with CPython's unwinder
PARKED_SHAPES = ((1, 8), (1, 64), (1, 512), (16, 32))
OTHERS_SHAPE = (1, 64)                      # the shape measured on every other interpreter
LIVE = "live"                               # a shape's tag: a running target
LIVE_SHAPE = (LIVE,)                        # running.py with its default threads
DEFAULT_ROUNDS = 3
DEFAULT_SAMPLES = 5000
QUICK_SAMPLES = 300
READY_TIMEOUT_S = 30.0
RUN_TIMEOUT_S = 600
RU_WARMUP = 100                             # untimed RemoteUnwinder calls before the timed ones
KILL_WAIT_S = 5
# frameproof's default (colocated, the running thread held while read), --blocking, and the plain
# sampler (neither colocated nor pausing): on a parked target, the walk's own cost without the
# hold's system calls
PLAIN = "frameproof --no-colocate --no-pause-torn"
TOOLS = ("frameproof", "frameproof --blocking", PLAIN, "RemoteUnwinder", "RemoteUnwinder cache_frames")
COLOCATED_CACHED = "RemoteUnwinder cache_frames --colocate"
# colocation matters only on a running target
LIVE_TOOLS = TOOLS + (COLOCATED_CACHED,)
STRACE_RESULT = re.compile(r"= (-?\d+)(?: [A-Z]\w*.*)?$")

live_targets = []                           # every target process started and not yet killed


def say(msg):
    print("bench: " + msg, file=sys.stderr, flush=True)


class BenchError(Exception):
    pass


# ---------------------------------------------------------------------------
# Targets: started in the interpreter's root, killed at exit

class Interp:
    """One manifest entry; chrooted ones run copies of targets/bench from a
    temporary directory inside their root."""

    def __init__(self, entry):
        self.id, self.version = entry["id"], entry["version"]
        self.root, self.argv = entry["root"], entry["argv"]
        self.host_dir = self.dir = None

    def chrooted(self):
        return self.root.rstrip("/") != ""

    def prepare(self):
        if not self.chrooted():
            self.dir = BENCH_TARGETS
            return
        self.host_dir = tempfile.mkdtemp(prefix="frameproof-bench-", dir=os.path.join(self.root, "tmp"))
        os.chmod(self.host_dir, 0o755)
        for name in TARGET_FILES:
            shutil.copy2(os.path.join(BENCH_TARGETS, name), self.host_dir)
        self.dir = "/" + os.path.relpath(self.host_dir, self.root)

    def cleanup(self):
        if self.host_dir:
            shutil.rmtree(self.host_dir, ignore_errors=True)
            self.host_dir = None

    def command(self, script, *args):
        cmd = self.argv + [os.path.join(self.dir, script)] + [str(a) for a in args]
        return ["chroot", self.root] + cmd if self.chrooted() else cmd


def kill_target(p):
    if p.poll() is None:
        p.kill()
    try:
        p.wait(timeout=KILL_WAIT_S)
    except subprocess.TimeoutExpired:
        pass
    if p in live_targets:
        live_targets.remove(p)


def kill_all_targets():
    for p in list(live_targets):
        kill_target(p)


def start_target(interp, shape):
    """Starts the target of one shape and waits for its "ready" line: a
    parked (threads, frames), LIVE_SHAPE, or (LIVE, threads)."""
    script, args = ("running.py", shape[1:]) if shape[0] == LIVE else ("parked.py", shape)
    name = "%s %s on %s" % (script, " ".join(map(str, args)), interp.id)
    p = subprocess.Popen(interp.command(script, *args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL)
    live_targets.append(p)
    out, deadline = b"", time.monotonic() + READY_TIMEOUT_S
    while b"\n" not in out:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([p.stdout], [], [], left)[0]:
            kill_target(p)
            raise BenchError("target %s did not print 'ready' within %.0f s" % (name, READY_TIMEOUT_S))
        chunk = os.read(p.stdout.fileno(), 4096)
        if not chunk:
            kill_target(p)
            err = p.stderr.read().decode(errors="replace").strip().splitlines()
            raise BenchError("target %s exited before 'ready'%s" % (name, (": " + err[-1]) if err else ""))
        out += chunk
    if out.split(b"\n")[0].strip() != b"ready":
        kill_target(p)
        raise BenchError("target %s printed %r instead of 'ready'" % (name, out))
    return p, name


# ---------------------------------------------------------------------------
# One measurement each

def run_json(cmd, what):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    if r.returncode != 0:
        msg = (r.stderr.strip().splitlines() or ["exit status %d" % r.returncode])[-1]
        raise BenchError("%s failed: %s" % (what, msg))
    try:
        return json.loads(r.stdout)
    except (ValueError, IndexError):
        raise BenchError("%s printed no JSON: %r" % (what, r.stdout[-200:]))


def frameproof_run(fp, pid, samples, mode):
    """mode: "" (the default) or its flags ("--blocking", ...)."""
    cmd = [fp, "bench", "--pid", str(pid), "--samples", str(samples), "--json"]
    cmd += mode.split() if mode else ["--floor"]
    d = run_json(cmd, "frameproof bench%s" % (" " + mode if mode else ""))
    return {"p50_us": d["p50_us"], "reads": d["reads_p50"], "bytes": d["bytes_p50"],
            "peak_rss_kib": d["peak_rss_kib"], "failed": d["failed"], "samples": d["samples"],
            "floor_us": d.get("floor_us"), "floor_note": d.get("floor_note"), "raw": d}


def unwinder_cmd(interp, pid, calls, cache, warmup=RU_WARMUP, colocate=False):
    return interp.command("remote_unwinder_bench.py", pid, calls, 1 if cache else 0, warmup, 1 if colocate else 0)


def unwinder_run(interp, pid, samples, tool):
    cache, colocate = "cache_frames" in tool, tool.endswith("--colocate")
    d = run_json(unwinder_cmd(interp, pid, samples, cache, colocate=colocate), tool)
    return {"p50_us": d["p50_us"], "peak_rss_kib": d["peak_rss_kib"], "failed": d["failed"],
            "samples": d["calls"], "first_error": d["first_error"], "raw": d}


def strace_reads(cmd):
    """(process_vm_readv calls, bytes they returned) of one command under strace."""
    with tempfile.NamedTemporaryFile(prefix="frameproof-bench-strace-", suffix=".log") as log:
        r = subprocess.run(["strace", "-f", "-qq", "-o", log.name, "-e", "trace=process_vm_readv"] + cmd,
                           capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        if r.returncode != 0:
            raise BenchError("strace of RemoteUnwinder failed: %s" % (r.stderr.strip().splitlines() or ["?"])[-1])
        calls = nbytes = 0
        with open(log.name, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = STRACE_RESULT.search(line.rstrip())
                if m and ("process_vm_readv(" in line or "resumed>" in line):
                    calls += 1
                    nbytes += max(int(m.group(1)), 0)
        return calls, nbytes


def unwinder_reads(interp, pid, samples, cache):
    """process_vm_readv calls and bytes per get_stack_trace() in steady state:
    a run of N calls minus a run of none (the same construction and warm-up),
    divided by N; None without strace."""
    if not shutil.which("strace"):
        return None
    calls_n, bytes_n = strace_reads(unwinder_cmd(interp, pid, samples, cache))
    calls_0, bytes_0 = strace_reads(unwinder_cmd(interp, pid, 0, cache))
    return {"reads": (calls_n - calls_0) / samples, "bytes": (bytes_n - bytes_0) / samples}


# ---------------------------------------------------------------------------
# Shapes

def shape_name(shape):
    if shape == LIVE_SHAPE:
        return "live (running.py)"
    return "running %d" % shape[1] if shape[0] == LIVE else "%d×%d" % shape


def median_of(runs, key):
    vals = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def measure_shape(interp, shape, fp, rounds, samples, tools):
    """Every tool on one target, alternating, for `rounds` rounds; one
    summary per tool."""
    p, name = start_target(interp, shape)
    try:
        runs = {t: [] for t in tools}
        errors = {}
        for rnd in range(1, rounds + 1):
            for t in tools:
                if t in errors:
                    continue
                say("%s, %s: %s round %d/%d" % (interp.id, shape_name(shape), t, rnd, rounds))
                try:
                    if t.startswith("frameproof"):
                        runs[t].append(frameproof_run(fp, p.pid, samples, t[len("frameproof "):]))
                    else:
                        runs[t].append(unwinder_run(interp, p.pid, samples, t))
                except (BenchError, subprocess.TimeoutExpired) as e:
                    errors[t] = str(e)
                    say("error: %s, %s: %s" % (interp.id, shape_name(shape), e))
        out = {}
        for t in tools:
            s = {"runs": runs[t], "error": errors.get(t)}
            for key in ("p50_us", "peak_rss_kib", "floor_us", "reads", "bytes"):
                s[key] = median_of(runs[t], key)
            s["failed"] = sum(r["failed"] for r in runs[t])
            s["samples"] = sum(r["samples"] for r in runs[t])
            if t.startswith("RemoteUnwinder") and t != COLOCATED_CACHED and t not in errors:
                say("%s, %s: %s reads under strace" % (interp.id, shape_name(shape), t))
                try:
                    counted = unwinder_reads(interp, p.pid, samples, t.endswith("cache_frames"))
                except (BenchError, subprocess.TimeoutExpired) as e:
                    counted, s["reads_error"] = None, str(e)
                    say("error: %s" % e)
                s.update(counted or {"reads": None, "bytes": None})
            notes = [r["floor_note"] for r in runs[t] if r.get("floor_note")]
            if notes:
                s["floor_note"] = notes[0]
            out[t] = s
        return out
    finally:
        kill_target(p)


# ---------------------------------------------------------------------------
# Report

def fmt(v, digits=1):
    if v is None:
        return "n/a"
    if isinstance(v, float) and not v.is_integer():
        return "%.*f" % (digits, v)
    return "%d" % v


def table(results):
    head = ("| shape | interpreter | unwinder | p50 µs/sample | reads/sample | bytes/sample | peak RSS MiB "
            "| failed/samples | frameproof ÷ CPython cached | floor µs |")
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for row in results:
        for t, s in row["tools"].items():
            if s["error"] and not s["runs"]:
                lines.append("| %s | %s | %s | error: %s | | | | | | |" % (row["shape"], row["interp"], t,
                                                                         s["error"].replace("|", "/")))
                continue
            ratio = floor = ""
            if t == "frameproof":
                cached = row["tools"].get("RemoteUnwinder cache_frames", {}).get("p50_us")
                if cached and s["p50_us"] is not None:
                    ratio = "%.2f" % (s["p50_us"] / cached)
                floor = fmt(s["floor_us"], 2) if s["floor_us"] is not None else s.get("floor_note", "n/a")
            rss = s["peak_rss_kib"] / 1024 if s["peak_rss_kib"] is not None else None
            lines.append("| %s | %s | %s | %s | %s | %s | %s | %d/%d | %s | %s |" % (
                row["shape"], row["interp"], t, fmt(s["p50_us"]), fmt(s["reads"]), fmt(s["bytes"], 0),
                fmt(rss), s["failed"], s["samples"], ratio, floor))
    return "\n".join(lines)


def markdown(doc):
    """The table of a bench.json (ci/render-docs renders the docs' copy
    from docs/data/bench.json), under a line with its date, commit,
    command and cores."""
    return "%s on %s — `%s` — %d cores, %d rounds of %d samples (each figure the median of the rounds')\n\n%s\n" % (
        doc["date"], doc.get("commit", "unknown"), doc["command"], doc["cores"], doc["rounds"], doc["samples"],
        table(doc["results"]))


# The speed targets: frameproof's default at most this many times CPython's cached unwinder, by shape.
TARGET_RATIO = {"1×8": 1.0, "1×64": 1.0, "16×32": 1.0, "1×512": 2.0}


def summary_markdown(doc):
    """The README's lines of a bench.json: per shape of the reference
    interpreter, frameproof's default, its plain sampler and CPython's
    cached unwinder (p50 µs), the ratio and the target."""
    lines = ["%s on %s: `%s` (%d cores; p50 µs per sample, the median of %d rounds of %d samples; the whole "
             "table in [docs/speed.md](docs/speed.md))." % (doc["date"], doc.get("commit", "unknown"), doc["command"],
                                                            doc["cores"], doc["rounds"], doc["samples"]),
             "",
             "| shape (threads × frames) | frameproof (default) | frameproof plain | CPython cached | "
             "default ÷ cached | target |",
             "|---|---:|---:|---:|---:|---:|"]
    for row in doc["results"]:
        if row["interp"] != REFERENCE_ID:
            continue
        t = row["tools"]
        fp, plain = t.get("frameproof", {}).get("p50_us"), t.get(PLAIN, {}).get("p50_us")
        cached = t.get("RemoteUnwinder cache_frames", {}).get("p50_us")
        ratio = fp / cached if fp and cached else None
        target = TARGET_RATIO.get(row["shape"])
        cell = "n/a" if ratio is None else ("%.2f" % ratio if target is None or ratio <= target else
                                            "**%.2f**" % ratio)
        lines.append("| %s | %s | %s | %s | %s | %s |" % (row["shape"], fmt(fp), fmt(plain), fmt(cached), cell,
                                                          "≤ %.1f" % target if target else "—"))
    return "\n".join(lines) + "\n"


def main(argv):
    ap = argparse.ArgumentParser(prog="ci/bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS)
    ap.add_argument("--samples", type=int, default=DEFAULT_SAMPLES)
    ap.add_argument("--quick", action="store_true", help="1 round of %d samples (a smoke test)" % QUICK_SAMPLES)
    ap.add_argument("--frameproof", default=os.path.join(REPO, "build", "frameproof"))
    ap.add_argument("--report-dir", default=os.path.join(REPO, "bench-report"))
    args = ap.parse_args(argv)
    if args.quick:
        args.rounds, args.samples = 1, QUICK_SAMPLES
    if args.rounds < 1 or args.samples < 1:
        ap.error("--rounds and --samples must be at least 1")
    if not os.access(args.frameproof, os.X_OK):
        ap.error("no frameproof binary at %s (build it first)" % args.frameproof)
    facts = fpfacts.load()
    manifest, interps = fpfacts.provisioned(facts)
    if not interps:
        raise BenchError("no interpreters provisioned (%s is missing or empty)" % manifest)
    command = shlex.join(["ci/bench"] + result_file.public_args(argv))
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    plan = []
    if REFERENCE_ID in interps:
        plan += [(REFERENCE_ID, shape, TOOLS) for shape in PARKED_SHAPES]
        plan += [(REFERENCE_ID, LIVE_SHAPE, LIVE_TOOLS)]
    else:
        say("error: interpreter %s is not provisioned (%s): no comparison with CPython's unwinder; "
            "the others are still measured" % (REFERENCE_ID, manifest))
    plan += [(i, OTHERS_SHAPE, TOOLS[:1]) for i in interps if i != REFERENCE_ID]
    results, failed = [], REFERENCE_ID not in interps
    prepared = {}
    try:
        for iid, shape, tools in plan:
            interp = prepared.get(iid)
            if interp is None:
                interp = prepared[iid] = Interp(interps[iid])
                interp.prepare()
            try:
                row = measure_shape(interp, shape, args.frameproof, args.rounds, args.samples, tools)
            except BenchError as e:
                say("error: %s" % e)
                failed = True
                row = {t: {"runs": [], "error": str(e)} for t in tools}
            failed |= any(s.get("error") for s in row.values())
            results.append({"shape": shape_name(shape), "interp": iid, "version": interps[iid]["version"],
                            "tools": row})
    finally:
        kill_all_targets()
        for interp in prepared.values():
            interp.cleanup()
    doc = {"date": started, "commit": result_file.stamp()[0] or "unknown", "command": command, "cores": os.cpu_count(),
           "rounds": args.rounds, "samples": args.samples, "manifest": manifest, "results": results}
    md = markdown(doc)
    os.makedirs(args.report_dir, exist_ok=True)
    with open(os.path.join(args.report_dir, "bench.md"), "w", encoding="utf-8") as f:
        f.write(md)
    with open(os.path.join(args.report_dir, "bench.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    print(md, end="")
    say("report in %s/bench.{md,json}" % os.path.relpath(args.report_dir))
    return 1 if failed else 0


def run_main(main, prog, errors=(BenchError,)):
    """Runs main(argv) as the command `prog`: every target started is killed
    at exit, on an error and on SIGINT, SIGTERM and SIGHUP; an exception of
    `errors` (a measurement that failed) is one line and exit status 1."""
    def on_signal(signum, frame):
        kill_all_targets()
        print("%s: interrupted by %s: every target killed" % (prog, signal.Signals(signum).name),
              file=sys.stderr, flush=True)
        raise SystemExit(128 + signum)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    try:
        sys.exit(main(sys.argv[1:]))
    except errors as e:
        print("%s: error: %s" % (prog, e), file=sys.stderr, flush=True)
        sys.exit(1)
    finally:
        kill_all_targets()


if __name__ == "__main__":
    run_main(main, "bench")
