"""async_record.py — the body of ci/async-record: async-aware profilers
judged on a program whose one busy task keeps moving between two awaiters
(targets/async/owner_swap.py), on every provisioned CPython 3.11+
interpreter, and what `record --async` costs a program of
many short tasks (targets/async/churn_tasks.py); written as a result file
(docs/data/async-record.json) that ci/render_docs.py renders into
docs/async.md and the README.  Run it through ci/async-record (see there
for usage)."""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "ci"))
sys.path.insert(0, os.path.join(REPO, "targets", "async"))
import result_file  # noqa: E402  (the commit and date a result file is stamped with)
import asyncgraph  # noqa: E402  (the interpreters, starting targets)
import owner_swap  # noqa: E402  (the truth: problem(); nothing runs on import)
from bench import kill_target, kill_all_targets, live_targets, run_main  # noqa: E402

PROG = "async-record"
OWNER_SWAP = os.path.join(REPO, "targets", "async", "owner_swap.py")
CHURN = os.path.join(REPO, "targets", "async", "churn_tasks.py")
CPYTHON_SAMPLER_MIN = (3, 15)   # the first CPython with profiling.sampling
READY_TIMEOUT_S = 30
RUN_TIMEOUT_S = 120
EXAMPLE_CHARS = 300
READS = re.compile(r"asyncio \(--async-mode \w+\): (\d+) graph reads gave (\d+) task stacks; the target was stopped "
                   r"([\d.]+) s for them \(([\d.]+) ms a read on average, ([\d.]+) ms at most\)")
HELD = re.compile(r"held it still ([\d.]+) s of the ([\d.]+) s")
TAKES = re.compile(r"a sample takes ([\d.]+) us on average")


class MeasurementError(Exception):
    pass


def say(msg):
    print("%s: %s" % (PROG, msg), file=sys.stderr, flush=True)


# The profilers, in the order each target is sampled (running mode, the
# default of both); "min" is the first version that has it.
PROFILERS = [
    {"profiler": "frameproof",
     "command": "frameproof record --async --pid PID --duration S --format collapsed -o FILE",
     "min": asyncgraph.LEGACY_MIN},
    {"profiler": "frameproof, stale-awaiter fault",
     "command": "frameproof record --async --inject-fault stale-awaiter --pid PID --duration S --format collapsed "
                "-o FILE (the mutant: each read joined through the previous read's awaiter edges; must be found wrong)",
     "min": asyncgraph.LEGACY_MIN},
    {"profiler": "CPython --async-aware",
     "command": "python3.X -m profiling.sampling attach --async-aware --collapsed -d S -o FILE PID",
     "min": CPYTHON_SAMPLER_MIN},
]


def frameproof_stacks(path):
    """[(stack of function names, root first, samples)] of a collapsed
    profile of `record`: "THREAD;FUNCTION (FILE:LINE);... COUNT"."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            head, _, count = line.rstrip("\n").rpartition(" ")
            frames = head.split(";")[1:]
            out.append((tuple(fr.rsplit(" (", 1)[0] for fr in frames), int(count)))
    return out


def cpython_stacks(path):
    """The same of CPython's collapsed output: "tid:N;FILE:FUNCTION:LINE;... COUNT",
    a task as "<task>:NAME:0"."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            head, _, count = line.rstrip("\n").rpartition(" ")
            names = []
            for fr in head.split(";")[1:]:
                parts = fr.split(":")
                names.append(":".join(parts[1:-1]) if len(parts) >= 3 else fr)
            out.append((tuple(names), int(count)))
    return out


def judged(stacks):
    """The counts of a profile's samples: total, wrong (impossible at any
    one instant), other (another view of a possible instant), and per
    failure class the samples, whether it is impossible and a first example."""
    total = wrong = other = 0
    classes = {}
    for stack, n in stacks:
        total += n
        p = owner_swap.problem(stack)
        if p:
            impossible = owner_swap.IMPOSSIBLE[p[0]]
            wrong += n if impossible else 0
            other += 0 if impossible else n
            c = classes.setdefault(p[0], {"samples": 0, "impossible": impossible,
                                          "example": p[1][:EXAMPLE_CHARS]})
            c["samples"] += n
    return {"samples": total, "wrong": wrong, "other": other, "classes": classes}


def run(argv, what, env=None):
    r = subprocess.run(argv, capture_output=True, timeout=RUN_TIMEOUT_S, env=env, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        err = r.stderr.decode(errors="replace").strip().splitlines()
        raise MeasurementError("%s: exit status %d: %s" % (what, r.returncode, err[-1] if err else ""))
    return r.stderr.decode(errors="replace")


def profile(profiler, fp, entry, dest, inside, pid, seconds):
    """The judged profile of one profiler on the running owner_swap.py."""
    name = profiler["profiler"]
    if name.startswith("frameproof"):
        out = os.path.join(dest, "fp.txt")
        argv = [fp, "record", "--async", "--pid", str(pid), "--duration", str(seconds), "--format", "collapsed",
                "-o", out, "--no-progress"]
        if "fault" in name:
            argv += ["--inject-fault", "stale-awaiter"]
        run(argv, "%s: %s" % (entry["id"], name))
        return judged(frameproof_stacks(out))
    argv = asyncgraph.command(entry, ["-m", "profiling.sampling", "attach", "--async-aware", "--collapsed", "-d",
                                      seconds, "-o", inside + "/cp.txt", pid])
    run(argv, "%s: %s" % (entry["id"], name), asyncgraph.environment(entry))
    return judged(cpython_stacks(os.path.join(dest, "cp.txt")))


def cost(fp, entry, inside, seconds):
    """What `record --async` costs churn_tasks.py, from its summary."""
    argv = [fp, "record", "--async", "--duration", str(seconds), "-o", "/dev/null", "--no-progress", "--"] + \
        asyncgraph.command(entry, [inside + "/churn_tasks.py"])
    err = run(argv, "%s: record --async on churn_tasks.py" % entry["id"])
    m, h, t = READS.search(err), HELD.search(err), TAKES.search(err)
    if not (m and h and t):
        raise MeasurementError("%s: record --async's summary lacks its reads: %r" % (entry["id"], err[-300:]))
    reads = int(m.group(1))
    return {"reads": reads, "task_stacks": int(m.group(2)), "stopped_mean_ms": float(m.group(4)),
            "stopped_max_ms": float(m.group(5)), "read_mean_ms": round(float(t.group(1)) / 1e3, 3),
            "held_share": round(float(h.group(1)) / float(h.group(2)), 4) if float(h.group(2)) else 0.0}


def measure(entry, fp, seconds, cost_seconds):
    ident = entry["id"]
    dest = proc = None
    rows = []
    try:
        dest, inside = asyncgraph.install(entry.get("root", "/"), (OWNER_SWAP, CHURN))
        os.chmod(dest, 0o777)  # the chrooted sampler writes its output there
        try:
            proc, _ = asyncgraph.start(entry, inside + "/owner_swap.py", READY_TIMEOUT_S, live_targets)
        except RuntimeError as e:
            raise MeasurementError("%s: owner_swap.py: %s" % (ident, e))
        for p in PROFILERS:
            if asyncgraph.version(entry) < p["min"]:
                continue
            if proc.poll() is not None:
                raise MeasurementError("%s: owner_swap.py exited (status %s)" % (ident, proc.returncode))
            v = profile(p, fp, entry, dest, inside, proc.pid, seconds)
            rows.append({"interpreter": ident, "version": entry["version"], "profiler": p["profiler"], **v})
            say("%s: %s: %d samples, %d wrong, %d other%s" % (ident, p["profiler"], v["samples"], v["wrong"], v["other"], "".join(
                "; %s x%d" % (c, x["samples"]) for c, x in v["classes"].items())))
        kill_target(proc)
        proc = None
        c = cost(fp, entry, inside, cost_seconds)
        say("%s: churn_tasks.py: stopped %.2f ms a read (max %.2f), held %.1f %%"
            % (ident, c["stopped_mean_ms"], c["stopped_max_ms"], 100 * c["held_share"]))
        return rows, {"interpreter": ident, "version": entry["version"], **c}
    finally:
        if proc is not None:
            kill_target(proc)
        kill_all_targets()
        if dest is not None:
            shutil.rmtree(dest, ignore_errors=True)


# ---------------------------------------------------------------------------
# The tables

def classes_cell(classes):
    if not classes:
        return "none"
    ranked = sorted(classes.items(), key=lambda x: (not x[1]["impossible"], -x[1]["samples"], x[0]))
    return ", ".join("%s%s (%d)" % (c, "" if x["impossible"] else " [possible]", x["samples"]) for c, x in ranked)


def markdown(doc):
    """docs/async.md's tables: every profile judged, the examples, and the cost."""
    lines = [f"{doc['date']} on {doc['commit']}: `{doc['command']}` ({len(doc['interpreters'])} interpreter{'s' if len(doc['interpreters']) != 1 else ''}; "
             f"each profiler samples the running targets/async/owner_swap.py for {doc['seconds_per_profile']} s "
             f"at its default rate, running mode); a sample is wrong when its task stack is one the program cannot "
             f"have at any instant, other when it shows an instant the program can have in another view "
             f"(classes marked [possible]; owner_swap.problem()).", "",
             "| interpreter | profiler | samples | wrong | wrong share | other | classes (samples) |",
             "|---|---|---:|---:|---:|---:|---|"]
    for r in doc["rows"]:
        share = r["wrong"] / r["samples"] if r["samples"] else 0.0
        lines.append("| %s | %s | %d | %d | %.2f %% | %d | %s |" % (
            r["interpreter"], r["profiler"], r["samples"], r["wrong"], 100 * share, r["other"],
            classes_cell(r["classes"])))
    lines.append("")
    for p in doc["profilers"]:
        lines.append("- %s: `%s`." % (p["profiler"], p["command"]))
    examples = {}
    for r in doc["rows"]:
        for c, x in r["classes"].items():
            examples.setdefault((r["profiler"], c), (r["interpreter"], x["example"]))
    if examples:
        lines += ["", "The first example of each failure class (root first):", ""]
        lines += ["- %s, %s (%s): `%s`" % (p, c, i, e.replace("`", "'")) for (p, c), (i, e) in examples.items()]
    lines += ["", f"What `record --async` costs targets/async/churn_tasks.py (20–32 tasks on two loops, always "
                  f"changing), {doc['cost_seconds']} s at 100 Hz: `frameproof record --async --duration "
                  f"{doc['cost_seconds']} -- python3.X churn_tasks.py`; stopped: from before its first thread is "
                  f"stopped to the resume; a read: the whole call, the resume (a ptrace detach per thread) "
                  f"included; held: the reads' share of the run.", "",
              "| interpreter | reads | task stacks | stopped per read, mean (max) | a read, mean | target held |",
              "|---|---:|---:|---:|---:|---:|"]
    for c in doc["cost"]:
        lines.append("| %s | %d | %d | %.2f ms (%.2f) | %.2f ms | %.1f %% |" % (
            c["interpreter"], c["reads"], c["task_stacks"], c["stopped_mean_ms"], c["stopped_max_ms"],
            c["read_mean_ms"], 100 * c["held_share"]))
    return "\n".join(lines) + "\n"


def summary_markdown(doc):
    """The README's line per profiler: wrong samples over every interpreter."""
    lines = [f"{doc['date']} on {doc['commit']}: `{doc['command']}` (a task moving between two awaiters, "
             f"{len(doc['interpreters'])} interpreters; every row in [docs/async.md](docs/async.md)).", "",
             "| async-aware profiler | interpreters | samples | wrong (impossible at any instant) | classes |",
             "|---|---:|---:|---:|---|"]
    for p in doc["profilers"]:
        rows = [r for r in doc["rows"] if r["profiler"] == p["profiler"]]
        if not rows:
            continue
        classes = sorted({c for r in rows for c, x in r["classes"].items() if x["impossible"]})
        lines.append("| %s | %d | %d | %d | %s |" % (p["profiler"], len(rows), sum(r["samples"] for r in rows),
                                                     sum(r["wrong"] for r in rows), ", ".join(classes) or "none"))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------

def main(argv):
    ap = argparse.ArgumentParser(prog="ci/async-record", description=__doc__.split("\n\n")[0])
    ap.add_argument("--frameproof", default=os.path.join(REPO, "build", "frameproof"))
    ap.add_argument("--python", action="append", metavar="ID", help="only this interpreter id (repeatable)")
    ap.add_argument("--seconds", type=int, default=5, help="each profile's length (default %(default)s)")
    ap.add_argument("--cost-seconds", type=int, default=10, help="the cost run's length (default %(default)s)")
    ap.add_argument("--report-dir", help="write async-record.json there, not to docs/data/")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    if not os.access(args.frameproof, os.X_OK):
        raise MeasurementError("no frameproof at %s (build it first)" % args.frameproof)
    fp = os.path.abspath(args.frameproof)
    try:
        plan, skipped = asyncgraph.plan(args.python, say, graph=asyncgraph.reads_graph)
    except LookupError as e:
        raise MeasurementError(str(e))
    rows, costs = [], []
    for entry in plan:
        r, c = measure(entry, fp, args.seconds, args.cost_seconds)
        rows += r
        costs.append(c)
    commit, date = result_file.stamp()
    doc = {"date": date, "commit": commit or "unknown",
           "command": shlex.join(["ci/async-record"] + result_file.public_args(argv)),
           "seconds": round(time.monotonic() - t0, 1), "seconds_per_profile": args.seconds,
           "cost_seconds": args.cost_seconds,
           "interpreters": [{"id": e["id"], "version": e["version"]} for e in plan], "skipped": skipped,
           "profilers": [{k: p[k] for k in ("profiler", "command")} for p in PROFILERS],
           "rows": rows, "cost": costs}
    sys.stdout.write(markdown(doc))
    result_file.publish(doc, "async-record.json", args.report_dir, say)
    return 0


if __name__ == "__main__":
    run_main(main, PROG, (MeasurementError, subprocess.TimeoutExpired))
