"""async_live.py — the body of ci/async-live: asyncio task graphs read
from a program whose tasks never stop coming and going
(targets/async/churn_tasks.py), many times on one session, each judged by
targets/async/churn_check.py (one the program can have, or wrong), on every
provisioned interpreter, CPython 3.11+ (CPython's own views 3.14+); written as a result
file (docs/data/async-live.json) that ci/render_docs.py renders into
docs/async.md and the README.  Run it through ci/async-live (see there for
usage)."""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "ci"))
sys.path.insert(0, os.path.join(REPO, "targets", "async"))
import result_file  # noqa: E402  (the commit and date a result file is stamped with)
import asyncgraph  # noqa: E402  (the interpreters, starting targets)
import churn_check  # noqa: E402  (the truth: graph_problems())
from bench import kill_all_targets, live_targets, run_main  # noqa: E402

PROG = "async-live"
CHURN = os.path.join(REPO, "targets", "async", "churn_tasks.py")
HELPER = os.path.join(REPO, "targets", "async", "cpython_awaited_by.py")
READY_TIMEOUT_S = 30
EXAMPLE_CHARS = 240
MAX_CRASHES = 20   # CPython's reader restarted at most this often per row, then the row ends short
PROGRESS_EVERY = 50000
# The names CPython's view gives a frame it could not read: a graph whose
# every problem is such a frame is counted as marked incomplete, not wrong.
MARKED = ("<unknown function>", "<unreadable frame>")
# Another view of an instant the program has: a task being stepped (its
# coroutine not entered) given the thread's event-loop frames, as the
# async-record judge counts it apart (owner_swap.problem()).
POSSIBLE = ("the event loop frames in its stack",)
# A problem's class: its text with names, addresses and numbers left out.
CLASS_OF = re.compile(r"'[^']*'|\[[^\]]*\]|0x[0-9a-f]+|-?\d+")

# Each view: who reads ("reader": frameproof's dump, or CPython's
# _remote_debugging called by targets/async/cpython_awaited_by.py) and the
# arguments that choose what it prints ("args").
VIEWS = [
    {"view": "frameproof", "role": "judged", "reader": "frameproof", "args": [], "min": asyncgraph.LEGACY_MIN,
     "command": "frameproof dump --async --json --count N --pid PID"},
    {"view": "frameproof, stale-awaiter fault", "role": "mutant", "reader": "frameproof", "min": asyncgraph.LEGACY_MIN,
     "args": ["--inject-fault", "stale-awaiter"],
     "command": "frameproof dump --async --json --count N --inject-fault stale-awaiter --pid PID (the mutant: each "
                "graph printed with the previous read's awaiter edges; must be found wrong)"},
    {"view": "CPython get_all_awaited_by", "role": "field", "reader": "cpython", "args": [], "min": asyncgraph.ASYNC_MIN,
     "command": "_remote_debugging.RemoteUnwinder(PID).get_all_awaited_by() called N times, by the target's "
                "interpreter (targets/async/cpython_awaited_by.py PID N)"},
    {"view": "CPython get_async_stack_trace", "role": "field", "reader": "cpython", "args": ["--running"],
     "min": asyncgraph.ASYNC_MIN,
     "command": "_remote_debugging.RemoteUnwinder(PID).get_async_stack_trace() called N times, by the target's "
                "interpreter (targets/async/cpython_awaited_by.py --running PID N): each thread's running task, "
                "its stack its thread's frames down to its coroutine, and what awaits it, in turn; a read when no "
                "task runs is an empty graph"},
]


class MeasurementError(Exception):
    pass


def say(msg):
    print("%s: %s" % (PROG, msg), file=sys.stderr, flush=True)


def new_counts():
    return {"graphs": 0, "wrong": 0, "marked": 0, "other": 0, "failed": 0, "tasks": 0, "empty": 0, "crashed": 0,
            "reused": 0, "classes": {},
            "failures": {}}


def count_failure(got, msg):
    got["failed"] += 1
    key = CLASS_OF.sub("_", " ".join(str(msg).split()))[:120]
    c = got["failures"].setdefault(key, {"count": 0, "example": " ".join(str(msg).split())[:EXAMPLE_CHARS]})
    c["count"] += 1


def judge_stream(lines, what, got=None):
    """Every line of a view's output judged into got (new_counts()):
    counts, and per class of problem (or of failed read) its count and
    first example."""
    got = got if got is not None else new_counts()
    prev = None
    for n, line in enumerate(lines, 1):
        doc = json.loads(line)
        if "error" in doc:
            count_failure(got, doc["error"])
            continue
        got["graphs"] += 1
        got["reused"] += churn_check.reused(prev, doc)
        prev = doc
        got["tasks"] += len(doc.get("tasks") or [])
        got["empty"] += not doc.get("tasks")
        problems = churn_check.graph_problems(doc)
        marked = [p for p in problems if any(m in p for m in MARKED)]
        possible = [p for p in problems if any(m in p for m in POSSIBLE)]
        real = [p for p in problems if p not in marked and p not in possible]
        if real:
            got["wrong"] += 1
            key = CLASS_OF.sub("_", real[0])
            c = got["classes"].setdefault(key, {"count": 0, "example": real[0][:EXAMPLE_CHARS]})
            c["count"] += 1
        elif marked:
            got["marked"] += 1   # frames the view says it could not read: incomplete, not wrong
        elif possible:
            got["other"] += 1    # another view of an instant the program has: counted apart
        if n % PROGRESS_EVERY == 0:
            say("%s: %d read, %d wrong, %d failed" % (what, n, got["wrong"], got["failed"]))
    return got


def reader_argv(view, fp, entry, inside, pid, count):
    """(argv, env) of the process that makes view's count reads of pid."""
    if view["reader"] == "frameproof":
        return [fp, "dump", "--async", "--json", "--count", str(count)] + view["args"] + ["--pid", str(pid)], None
    return (asyncgraph.command(entry, [inside + "/cpython_awaited_by.py"] + view["args"] + [str(pid), str(count)]),
            asyncgraph.environment(entry))


def one_reader(argv, env, what, got):
    """Runs one reader, its output judged into got: (exit status, last
    line of its stderr)."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                         stdin=subprocess.DEVNULL, text=True)
    try:
        judge_stream(p.stdout, what, got)
    finally:
        p.stdout.close()
        err = p.stderr.read()
        p.wait()
    return p.returncode, (err.strip().splitlines() or [""])[-1]


def run_view(view, fp, entry, inside, pid, count):
    what = "%s: %s" % (entry["id"], view["view"])
    t0 = time.monotonic()
    got = new_counts()
    restartable = view["reader"] == "cpython"
    remaining = count
    while True:
        status, last = one_reader(*reader_argv(view, fp, entry, inside, pid, remaining), what, got)
        lines = got["graphs"] + got["failed"]
        # CPython's reader (a debug build asserts on what it reads) may die
        # in a call: that call is a failed read of its own class, and a new
        # reader makes the calls left, MAX_CRASHES times at most.
        if not (restartable and status < 0 and lines < count):
            break
        got["crashed"] += 1
        count_failure(got, "the reader died (exit status %d): %s" % (status, last))
        lines += 1
        remaining = count - lines
        if remaining == 0:
            break
        if got["crashed"] == MAX_CRASHES:
            # A target that kills every new reader at its first call: the
            # row says how many calls were not made (a shorter row, not none).
            got["not_made"] = remaining
            say("%s: %d readers died, %d calls not made" % (what, got["crashed"], remaining))
            lines = count
            break
        say("%s: the reader died (%s); %d calls left" % (what, last, remaining))
    # frameproof exits 1 when a read failed (each one a line, counted);
    # anything else, or fewer lines than reads, is a measurement that failed.
    if lines != count or (not restartable and (status not in (0, 1) or (status == 1 and not got["failed"]))):
        raise MeasurementError("%s: %d lines of %d, exit status %d: %s" % (what, lines, count, status, last))
    got["seconds"] = round(time.monotonic() - t0, 1)
    return got


def into(path, doc, views):
    """The result at path with its rows of views replaced by doc's (in
    place, new rows last), doc's run added to its runs and its
    interpreters to the result's."""
    with open(path, encoding="utf-8") as f:
        base = json.load(f)
    mine = {(r["interpreter"], r["view"]): r for r in doc["rows"]}
    rows = [mine.pop((r["interpreter"], r["view"]), r) if r["view"] in views else r for r in base["rows"]]
    runs = base.get("runs") or [{k: base[k] for k in ("date", "commit", "command")}]
    # an earlier partial run of these views no longer gives the rows of
    # the interpreters this one measured again: they leave its list, and
    # a run with none left has no row left
    ids = sorted({r["interpreter"] for r in doc["rows"]})
    kept = []
    for r in runs:
        if r.get("views") and set(r["views"]) <= set(views) and r.get("interpreters"):
            r = dict(r, interpreters=[i for i in r["interpreters"] if i not in ids])
            if not r["interpreters"]:
                continue
        kept.append(r)
    runs = kept
    runs.append({"date": doc["date"], "commit": doc["commit"], "command": doc["command"], "views": views,
                 "interpreters": ids})
    interps = base.get("interpreters", []) + [i for i in doc.get("interpreters", [])
                                              if i not in base.get("interpreters", [])]
    skipped = [i for i in base.get("skipped", []) + doc.get("skipped", []) if i not in {x["id"] for x in interps}]
    return dict(base, date=doc["date"], rows=rows + list(mine.values()), runs=runs, views=doc["views"],
                seconds=base["seconds"] + doc["seconds"], interpreters=interps, skipped=sorted(set(skipped)))


def measure(entry, fp, counts, views):
    ident = entry["id"]
    dest = proc = None
    rows = []
    try:
        dest, inside = asyncgraph.install(entry.get("root", "/"), (CHURN, HELPER))
        try:
            proc, _ = asyncgraph.start(entry, inside + "/churn_tasks.py", READY_TIMEOUT_S, live_targets)
        except RuntimeError as e:
            raise MeasurementError("%s: churn_tasks.py: %s" % (ident, e))
        for v in views:
            if asyncgraph.version(entry) < v["min"]:
                continue  # CPython's views read the lists of tasks 3.14 began to keep
            if proc.poll() is not None:
                raise MeasurementError("%s: churn_tasks.py exited (status %s)" % (ident, proc.returncode))
            got = run_view(v, fp, entry, inside, proc.pid, counts[v["role"]])
            rows.append({"interpreter": ident, "version": entry["version"], "view": v["view"], "role": v["role"],
                         **got})
            say("%s: %s: %d graphs, %d wrong, %d failed reads, %.0f s" % (
                ident, v["view"], got["graphs"], got["wrong"], got["failed"], got["seconds"]))
        ok, detail = asyncgraph.resumed(proc, 2.0)
        if not ok:
            raise MeasurementError("%s: the target after the reads: %s" % (ident, detail))
        return rows
    finally:
        asyncgraph.stop(proc, dest)
        kill_all_targets()


# ---------------------------------------------------------------------------
# The tables

def stamp(doc):
    """The date, commit and command of each run the rows came from."""
    runs = doc.get("runs") or [{"date": doc["date"], "commit": doc["commit"], "command": doc["command"]}]
    return "; ".join("%s on %s: `%s`%s" % (r["date"], r["commit"], r["command"],
                                          " (its rows of %s%s)" % (", ".join(r["views"]),
                                                                  " on %s" % ", ".join(r["interpreters"])
                                                                  if r.get("interpreters") else "")
                                          if r.get("views") else "")
                     for r in runs)


def share(part, whole):
    return "%.2f %%" % (100.0 * part / whole) if whole else "—"


def classes_cell(r):
    items = sorted(r["classes"].items(), key=lambda x: -x[1]["count"])
    return ", ".join("`%s` (%d)" % (k, x["count"]) for k, x in items[:4]) + (" …" if len(items) > 4 else "") \
        if items else "none"


def markdown(doc):
    """docs/async.md's table: every view on every interpreter, and the first
    example of each class."""
    lines = [f"{stamp(doc)} ({len(doc['interpreters'])} interpreters, "
             f"{doc['seconds']:.0f} s); each view reads the task graph of the running targets/async/churn_tasks.py "
             f"back to back on one session; a graph is wrong when churn_check.graph_problems() finds it one the "
             f"program cannot have, another view when its only problem is a task being stepped shown with its "
             f"thread's event-loop frames (an instant the program has); a failed read is one the view reported as "
             f"failed.", "",
             "| interpreter | view | reads | graphs | wrong | marked incomplete | another view | failed reads | "
             "tasks per graph (graphs with none) | classes of wrong graphs (count) |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in doc["rows"]:
        reads = r["graphs"] + r["failed"]
        lines.append("| %s | %s | %d | %d | **%d** (%s) | %d | %d | %d (%s) | %.1f%s | %s |" % (
            r["interpreter"], r["view"], reads, r["graphs"], r["wrong"], share(r["wrong"], r["graphs"]),
            r.get("marked", 0), r.get("other", 0), r["failed"], share(r["failed"], reads),
            r["tasks"] / r["graphs"] if r["graphs"] else 0.0,
            " (%d)" % r["empty"] if r.get("empty") else "", classes_cell(r)))
    lines.append("")
    lines += ["- %s on %s: %d of its readers died, the last %d calls were not made (the row's reads are the "
              "calls made)." % (r["view"], r["interpreter"], r["crashed"], r["not_made"])
              for r in doc["rows"] if r.get("not_made")]
    lines += ["- %s: `%s`." % (v["view"], v["command"]) for v in doc["views"]]
    failures = {}
    for r in doc["rows"]:
        for k, x in r["failures"].items():
            failures.setdefault(r["view"], {}).setdefault(k, [0, x["example"]])[0] += x["count"]
    for view, fs in failures.items():
        top = sorted(fs.items(), key=lambda x: -x[1][0])[:4]
        lines.append("- %s, failed reads: %s." % (view, "; ".join("%d × `%s`" % (n, ex.replace("`", "'"))
                                                                   for _, (n, ex) in top)))
    examples = {}
    for r in doc["rows"]:
        for k, x in r["classes"].items():
            examples.setdefault((r["view"], k), (r["interpreter"], x["example"]))
    if examples:
        lines += ["", "The first example of each class of wrong graph:", ""]
        lines += ["- %s (%s): `%s`" % (v, i, e.replace("`", "'")) for (v, _), (i, e) in examples.items()]
    return "\n".join(lines) + "\n"


def summary_markdown(doc):
    """The README's line per view: over every interpreter."""
    lines = [f"{stamp(doc)} (task graphs of a program whose tasks never "
             f"stop coming and going, {len(doc['interpreters'])} interpreters; every row in "
             f"[docs/async.md](docs/async.md)).", "",
             "| view | interpreters | reads | wrong graphs | marked incomplete | another view | failed reads |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for v in doc["views"]:
        rows = [r for r in doc["rows"] if r["view"] == v["view"]]
        if not rows:
            continue
        graphs, wrong = sum(r["graphs"] for r in rows), sum(r["wrong"] for r in rows)
        failed, marked = sum(r["failed"] for r in rows), sum(r.get("marked", 0) for r in rows)
        other = sum(r.get("other", 0) for r in rows)
        lines.append("| %s | %d | %d | %d (%s) | %d | %d | %d (%s) |" % (
            v["view"], len(rows), graphs + failed, wrong, share(wrong, graphs), marked, other, failed,
            share(failed, graphs + failed)))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------

def main(argv):
    ap = argparse.ArgumentParser(prog="ci/async-live", description=__doc__.split("\n\n")[0])
    ap.add_argument("--frameproof", default=os.path.join(REPO, "build", "frameproof"))
    ap.add_argument("--python", action="append", metavar="ID", help="only this interpreter id (repeatable)")
    ap.add_argument("--graphs", type=int, default=1000000,
                    help="frameproof's reads per interpreter (default %(default)s)")
    ap.add_argument("--mutant-graphs", type=int, default=2000,
                    help="reads of the stale-awaiter fault per interpreter (default %(default)s)")
    ap.add_argument("--cpython-graphs", type=int, default=10000,
                    help="calls of each CPython view (get_all_awaited_by(), get_async_stack_trace()) per interpreter "
                         "(default %(default)s)")
    ap.add_argument("--view", action="append", choices=[v["view"] for v in VIEWS],
                    help="only this view (repeatable; default all of them)")
    ap.add_argument("--into", metavar="RESULT",
                    help="an earlier async-live.json whose rows of the views run here are replaced by this run's "
                         "(the header names both runs)")
    ap.add_argument("--report-dir", help="write async-live.json there, not to docs/data/")
    args = ap.parse_args(argv)
    if min(args.graphs, args.mutant_graphs, args.cpython_graphs) < 1:
        ap.error("--graphs, --mutant-graphs and --cpython-graphs must be >= 1")
    t0 = time.monotonic()
    if not os.access(args.frameproof, os.X_OK):
        raise MeasurementError("no frameproof at %s (build it first)" % args.frameproof)
    fp = os.path.abspath(args.frameproof)
    try:
        plan, skipped = asyncgraph.plan(args.python, say, graph=asyncgraph.reads_graph)
    except LookupError as e:
        raise MeasurementError(str(e))
    counts = {"judged": args.graphs, "mutant": args.mutant_graphs, "field": args.cpython_graphs}
    views = [v for v in VIEWS if not args.view or v["view"] in args.view]
    rows = []
    for entry in plan:
        rows += measure(entry, fp, counts, views)
    commit, date = result_file.stamp()
    doc = {"date": date, "commit": commit or "unknown",
           "command": shlex.join(["ci/async-live"] + result_file.public_args(argv)),
           "seconds": round(time.monotonic() - t0, 1),
           "interpreters": [{"id": e["id"], "version": e["version"]} for e in plan], "skipped": skipped,
           "views": [{k: v[k] for k in ("view", "role", "command")} for v in VIEWS], "rows": rows}
    if args.into:
        doc = into(args.into, doc, [v["view"] for v in views])
    sys.stdout.write(markdown(doc))
    result_file.publish(doc, "async-live.json", args.report_dir, say)
    # The mutant misplaces an edge only where a task's memory passes to
    # another supervisor's job between two reads: judged where frameproof's
    # own reads of that interpreter saw that happen.
    reuse = {r["interpreter"]: r.get("reused", 0) for r in rows if r["role"] == "judged"}
    bad = [r for r in rows if (r["role"] == "judged" and (r["wrong"] or r["failed"] > 0.02 * (r["graphs"] + r["failed"])))
           or (r["role"] == "mutant" and not r["wrong"] and reuse.get(r["interpreter"], 1))]
    for r in rows:
        if r["role"] == "mutant" and not r["wrong"] and not reuse.get(r["interpreter"], 1):
            say("%s: %s: no job's memory passed to another supervisor's job between two reads: not judged"
                % (r["interpreter"], r["view"]))
    for r in bad:
        say("FAILED: %s %s: %d wrong, %d failed reads" % (r["interpreter"], r["view"], r["wrong"], r["failed"]))
    return 1 if bad else 0


if __name__ == "__main__":
    run_main(main, PROG, (MeasurementError, subprocess.TimeoutExpired))
