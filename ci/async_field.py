"""async_field.py — the body of ci/async-field: every async view of a
parked asyncio program judged against the graph the program computes of
itself, on every provisioned CPython 3.11+ interpreter (the matrix's ids,
then the JIT ids; CPython's own views 3.14+, frameproof's 3.11+); written as a result file
(docs/data/async-field.json) that ci/render_docs.py renders into
docs/async.md.  Run it through ci/async-field (see there for usage)."""
import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "ci"))
sys.path.insert(0, os.path.join(REPO, "targets", "async"))
import result_file  # noqa: E402  (the commit and date a result file is stamped with)
import asyncgraph  # noqa: E402  (the interpreters, the target and its truth, the judging)
# every target started and not yet killed, and killing them, as ci/bench does
from bench import kill_target, kill_all_targets, live_targets, run_main  # noqa: E402

PROG = "async-field"
HELPER = os.path.join(REPO, "targets", "async", "cpython_awaited_by.py")
READY_TIMEOUT_S = 30
VIEW_TIMEOUT_S = 30
MESSAGE_CHARS = 200

# The views, in the order each parked target is read by them: (name, what
# the table's notes say of it); "fields" are the fields it reports, judged;
# "min" the first CPython it reads (an older interpreter has no row of it).
VIEWS = [
    {"view": "frameproof", "min": asyncgraph.LEGACY_MIN,
     "command": "frameproof dump --async --json --pid PID",
     "fields": ["name", "stack", "awaiters", "thread"], "stack": "function and line", "futures": True,
     "note": "also lists the futures that are not tasks but await one (judged: their awaiters)"},
    {"view": "RemoteUnwinder", "min": asyncgraph.ASYNC_MIN,
     "command": "_remote_debugging.RemoteUnwinder(PID).get_all_awaited_by(), by the target's interpreter "
                "(targets/async/cpython_awaited_by.py)",
     "fields": ["name", "stack", "awaiters", "thread"], "stack": "function and line", "futures": False,
     "note": "a task's stack: the frames of its own CoroInfo in coroutine_stack; its awaiters: the "
             "task_name (an address) of each CoroInfo in its awaited_by; thread: the AwaitedInfo's thread_id"},
    {"view": "RemoteUnwinder running", "min": asyncgraph.ASYNC_MIN,
     "command": "_remote_debugging.RemoteUnwinder(PID).get_async_stack_trace(), by the target's interpreter "
                "(targets/async/cpython_awaited_by.py --running)",
     "fields": ["name", "stack", "awaiters", "thread"], "stack": "function and line", "futures": False,
     "scope": "running",
     "note": "judged on the running tasks and the tasks that await them, in turn (what it reports: its truth "
             "is that part of the graph); read as get_all_awaited_by() is"},
    {"view": "asyncio ps", "min": asyncgraph.ASYNC_MIN,
     "command": "python3.X -m asyncio ps PID",
     "fields": ["name", "stack", "awaiters", "thread"], "stack": "functions", "futures": False,
     "note": "one row per task and awaiter, a task found by its task id; its name, stack, awaiters and "
             "thread are the columns task name, coroutine stack (function names: ps shows no lines), awaiter "
             "id (of each of its rows) and tid; the awaiter chain and awaiter name, the awaiter's own stack "
             "and name, are not judged (they are on the awaiter's row)"},
    {"view": "asyncio pstree", "min": asyncgraph.ASYNC_MIN,
     "command": "python3.X -m asyncio pstree PID",
     "fields": ["stack", "awaiters"], "stack": "function and line", "futures": False,
     "note": "shows no task id and no thread: a task is matched to the truth by its name (so its name is not "
             "judged); its stack: the frames under it down to the first task it awaits or the end of its "
             "branch; its awaiters: the task above it, in every place it is shown"},
]
VIEW_NAMES = [v["view"] for v in VIEWS]



def say(msg):
    print("%s: %s" % (PROG, msg), file=sys.stderr, flush=True)


class MeasurementError(Exception):
    """Nothing to judge: the target or a view's helper could not be run."""


class ViewFailed(Exception):
    """The view itself failed (crashed, exited non-zero, printed nothing
    readable): data, a failure class with an example."""

    def __init__(self, cls, example):
        super().__init__(cls, example)
        self.cls, self.example = cls, example


# ---------------------------------------------------------------------------
# Targets: started in the interpreter's root, killed at exit

# ---------------------------------------------------------------------------
# Running a view

def first_line(*outputs):
    """The first non-empty line of the first output that has one, cut."""
    for out in outputs:
        text = out.decode(errors="replace") if isinstance(out, bytes) else (out or "")
        for line in text.splitlines():
            if line.strip():
                line = line.strip()
                return line if len(line) <= MESSAGE_CHARS else line[:MESSAGE_CHARS - 3] + "..."
    return "(nothing printed)"


def run(argv, env=None):
    """(status, stdout, stderr) of argv; ViewFailed when it runs longer than
    VIEW_TIMEOUT_S (then it is killed) or is killed by a signal."""
    try:
        r = subprocess.run(argv, capture_output=True, env=env, cwd="/", stdin=subprocess.DEVNULL,
                           timeout=VIEW_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        raise ViewFailed("timeout", "killed after %d s; printed %s" % (VIEW_TIMEOUT_S, first_line(e.stderr, e.stdout)))
    except FileNotFoundError as e:
        raise MeasurementError("cannot run %s: %s" % (argv[0], e))
    if r.returncode < 0:
        raise ViewFailed("killed by signal %d" % -r.returncode,
                         "%s: %s" % (signal.Signals(-r.returncode).name, first_line(r.stderr, r.stdout)))
    return r.returncode, r.stdout, r.stderr


def view_frameproof(fp, entry, inside, pid, by_name):
    status, out, err = run([fp, "dump", "--async", "--json", "--pid", str(pid)])
    if status != 0:
        raise ViewFailed("exit status %d" % status, first_line(err, out))
    try:
        doc = json.loads(out)
        nodes = doc["tasks"]
        if not isinstance(nodes, list) or not all(isinstance(n, dict) for n in nodes):
            raise ValueError("\"tasks\" is no list of objects")
    except (ValueError, KeyError, TypeError) as e:
        raise ViewFailed("unreadable output", "%s: %s" % (type(e).__name__, first_line(str(e))))
    return nodes


def view_remote_unwinder(fp, entry, inside, pid, by_name, flags=()):
    status, out, err = run(asyncgraph.command(entry, [inside + "/cpython_awaited_by.py", *flags, pid]),
                           asyncgraph.environment(entry))
    if status == 3:
        try:
            msg = json.loads(out)["error"]
        except (ValueError, KeyError, TypeError):
            msg = first_line(out, err)
        raise ViewFailed("raised %s" % msg.split(":")[0], first_line(msg))
    if status != 0:
        raise MeasurementError("targets/async/cpython_awaited_by.py under %s exited %d: %s"
                               % (entry["id"], status, first_line(err, out)))
    try:
        doc = json.loads(out)
    except ValueError as e:
        raise MeasurementError("targets/async/cpython_awaited_by.py printed no JSON (%s): %r" % (e, out[:200]))
    if doc.get("foreign_coroutines"):
        say("%s: RemoteUnwinder: %d coroutine stacks of other tasks in tasks' coroutine_stack (not shown)"
            % (entry["id"], doc["foreign_coroutines"]))
    return doc["tasks"]


def view_remote_unwinder_running(fp, entry, inside, pid, by_name):
    return view_remote_unwinder(fp, entry, inside, pid, by_name, ["--running"])


def view_asyncio_ps(fp, entry, inside, pid, by_name):
    status, out, err = run(asyncgraph.command(entry, ["-m", "asyncio", "ps", pid]), asyncgraph.environment(entry))
    if status != 0:
        raise ViewFailed("exit status %d" % status, first_line(err, out))
    return parse_ps(out.decode(errors="replace"))


def view_asyncio_pstree(fp, entry, inside, pid, by_name):
    status, out, err = run(asyncgraph.command(entry, ["-m", "asyncio", "pstree", pid]),
                           asyncgraph.environment(entry))
    if status != 0:
        raise ViewFailed("exit status %d" % status, first_line(err, out))
    return parse_pstree(out.decode(errors="replace"), by_name)


RUNNERS = {"frameproof": view_frameproof, "RemoteUnwinder": view_remote_unwinder,
           "RemoteUnwinder running": view_remote_unwinder_running,
           "asyncio ps": view_asyncio_ps, "asyncio pstree": view_asyncio_pstree}


def in_scope(view, tasks):
    """The truth's tasks a view is judged on: all, or for a view of the
    running tasks ("scope": "running") those and what awaits them, in turn."""
    if view.get("scope") != "running":
        return tasks
    by_addr = {t["addr"]: t for t in tasks}
    todo = [t["addr"] for t in tasks if t.get("running")]
    keep = set()
    while todo:
        a = todo.pop()
        if a in by_addr and a not in keep:
            keep.add(a)
            todo += by_addr[a]["awaited_by"]
    return [t for t in tasks if t["addr"] in keep]


def command_view(spec):
    """--command NAME=CMD: any unwinder that, run as CMD with {pid} replaced
    by the target's pid, prints the document `frameproof dump --async --json`
    prints (docs/cli.md); judged on its tasks as frameproof's view is.  A
    view (and its runner) or ValueError."""
    name, sep, cmd = spec.partition("=")
    name = name.strip()
    if not sep or not name or not cmd.strip() or "{pid}" not in cmd:
        raise ValueError("--command wants NAME=COMMAND, the command with {pid} in it: %r" % spec)
    if name in RUNNERS:
        raise ValueError("--command %s: a view of that name exists already" % name)
    argv = shlex.split(cmd)

    def runner(fp, entry, inside, pid, by_name):
        status, out, err = run([a.replace("{pid}", str(pid)) for a in argv])
        if status != 0:
            raise ViewFailed("exit status %d" % status, first_line(err, out))
        try:
            nodes = json.loads(out)["tasks"]
            if not isinstance(nodes, list) or not all(isinstance(n, dict) for n in nodes):
                raise ValueError("\"tasks\" is no list of objects")
        except (ValueError, KeyError, TypeError) as e:
            raise ViewFailed("unreadable output", "%s: %s" % (type(e).__name__, first_line(str(e))))
        return nodes

    view = {"view": name, "command": cmd.strip(), "fields": ["name", "stack", "awaiters", "thread"],
            "stack": "function and line", "futures": False,
            "note": "an unwinder command (--command): prints the `dump --async --json` document (docs/cli.md), "
                    "its tasks judged as frameproof's are"}
    return view, runner


# ---------------------------------------------------------------------------
# `python -m asyncio ps`: a table, columns padded with spaces
#   tid (10) task id (20) task name (20) coroutine stack (50) awaiter chain (50) awaiter name (15) awaiter id (15)
# one row per task and awaiter ("", "", "0x0" for a task nobody awaits); a
# stack is "f -> g -> h", innermost first.  A value longer than its column
# pushes the rest of the row right, so a row is read by its words: a task
# name and an awaiter name are one word each (the target's names have no
# spaces), function names never have spaces; a lone chain of functions is
# the awaiter chain when it starts in that column (the stack was empty).

PS_HEADER = ("tid", "task", "id", "task", "name", "coroutine", "stack", "awaiter", "chain", "awaiter", "name",
             "awaiter", "id")
PS_CHAIN_COLUMN = 10 + 1 + 20 + 1 + 20 + 1 + 50 + 1   # where the awaiter chain starts
PS_NAME_WIDTH = 20


def chains(words):
    """Words at positions, [(pos, word)], as runs joined by "->":
    [(start position, [function, ...])]."""
    runs, i = [], 0
    while i < len(words):
        start, fns = words[i][0], [words[i][1]]
        i += 1
        while i + 1 < len(words) and words[i][1] == "->":
            fns.append(words[i + 1][1])
            i += 2
        runs.append((start, fns))
    return runs


def parse_ps_row(line):
    """(thread, task id, name, stack, awaiter id or None) of one row;
    ValueError when it is not one."""
    words = [(m.start(), m.group()) for m in re.finditer(r"\S+", line)]
    if len(words) < 4:
        raise ValueError("too few columns")
    tid, task_id, awaiter_id = int(words[0][1]), int(words[1][1], 16), int(words[-1][1], 16)
    name, rest = words[2][1], words[3:-1]
    if awaiter_id:
        if not rest:
            raise ValueError("no awaiter name")
        rest = rest[:-1]                   # the awaiter name
    runs = chains(rest)
    if len(runs) > 2 or (runs and not awaiter_id and len(runs) > 1):
        raise ValueError("%d chains of functions" % len(runs))
    shift = max(0, len(name) - PS_NAME_WIDTH)
    if len(runs) == 2:
        stack = runs[0][1]
    elif len(runs) == 1 and (not awaiter_id or runs[0][0] < PS_CHAIN_COLUMN + shift):
        stack = runs[0][1]
    else:
        stack = []                         # none, or only the awaiter chain
    return tid or None, task_id, name, stack, awaiter_id or None


def parse_ps(text):
    """The tasks of ps's table as nodes (stacks of function names)."""
    lines = text.splitlines()
    if len(lines) < 2 or tuple(lines[0].split()) != PS_HEADER or set(lines[1].strip()) != {"-"}:
        raise ViewFailed("unreadable output", "no ps table header: %s" % first_line(text))
    nodes = {}
    for line in lines[2:]:
        if not line.strip():
            continue
        try:
            thread, addr, name, stack, awaiter = parse_ps_row(line)
        except ValueError as e:
            raise ViewFailed("unreadable output", "%s: %s" % (e, first_line(line)))
        node = nodes.setdefault(addr, {"addr": addr, "task": True, "name": name, "thread": thread,
                                       "stack": stack, "awaited_by": []})
        if awaiter is not None:
            node["awaited_by"].append(awaiter)
    return list(nodes.values())


# ---------------------------------------------------------------------------
# `python -m asyncio pstree`: a tree; a task is "(T) NAME", a frame
# " FUNCTION FILE:LINE", each under what awaits it, outermost first.

TREE_LINE = re.compile(r"^((?:\u2502   |    )*)(?:\u251c\u2500\u2500 |\u2514\u2500\u2500 )(.*)$")


def parse_pstree(text, by_name):
    """The tasks of pstree's tree as nodes; by_name maps the truth's task
    names to their addresses (pstree shows none); a name not in it becomes
    a node of its own."""
    roots, path = [], []
    for line in text.splitlines():
        if not line.strip():
            continue
        m = TREE_LINE.match(line)
        depth = len(m.group(1)) // 4 if m else -1
        if not m or depth > len(path):
            raise ViewFailed("unreadable output", "not a line of the tree: %s" % first_line(line))
        text_ = m.group(2)
        if text_.startswith("(T) "):
            node = {"task": text_[4:], "kids": []}
        else:
            fn, _, where = text_.strip().partition(" ")
            _, colon, line_no = where.rpartition(":")
            node = {"function": fn, "line": int(line_no) if colon and line_no.isdigit() else None, "kids": []}
        (path[depth - 1]["kids"] if depth else roots).append(node)
        path[depth:] = [node]
    nodes = {}

    def walk(node, awaiter):
        if "task" in node:
            name = node["task"]
            addr = by_name.get(name, "task named %r" % name)
            frames, cur = [], node
            while True:
                below = [k for k in cur["kids"] if "function" in k]
                if not below:
                    break
                cur = below[0]
                frames.append({"function": cur["function"], "line": cur["line"]})
            got = nodes.setdefault(addr, {"addr": addr, "task": True, "name": name, "stack": frames[::-1],
                                          "awaited_by": []})
            if awaiter is not None and awaiter not in got["awaited_by"]:
                got["awaited_by"].append(awaiter)
            awaiter = addr
        for kid in node["kids"]:
            walk(kid, awaiter)

    for root in roots:
        walk(root, None)
    return list(nodes.values())


# ---------------------------------------------------------------------------
# One interpreter: a parked target, every view

def measure(entry, fp, views):
    """The rows of one interpreter: one per view."""
    ident = entry["id"]
    dest = proc = None
    rows = []
    try:
        dest, inside = asyncgraph.install(entry.get("root", "/"), (asyncgraph.TARGET, HELPER))
        try:
            proc, rest = asyncgraph.start(entry, inside + "/park_tasks.py", READY_TIMEOUT_S, live_targets,
                                          stderr=subprocess.PIPE)
            want_tasks, want_futures, _ = asyncgraph.read_truth(rest, proc.pid)
        except (RuntimeError, ValueError, KeyError) as e:
            err = b""
            if proc is None and live_targets and live_targets[-1].poll() is not None:
                err = live_targets[-1].stderr.read() or b""
            raise MeasurementError("%s: park_tasks.py: %s%s" % (ident, e, (": " + first_line(err)) if err else ""))
        by_name = {}
        for t in want_tasks:
            by_name[t["name"]] = t["addr"] if t["name"] not in by_name else None
        say("%s: park_tasks.py ready (pid %d): %d tasks, %d other futures"
            % (ident, proc.pid, len(want_tasks), len(want_futures)))
        for view in views:
            if asyncgraph.version(entry) < view.get("min", asyncgraph.LEGACY_MIN):
                continue
            if proc.poll() is not None:
                raise MeasurementError("%s: the target exited (status %s) before %s read it"
                                       % (ident, proc.returncode, view["view"]))
            t0 = time.monotonic()
            judged = in_scope(view, want_tasks)
            try:
                nodes = RUNNERS[view["view"]](fp, entry, inside, proc.pid,
                                              {n: a for n, a in by_name.items() if a is not None})
                verdict = asyncgraph.judge(judged, nodes, view["fields"], view["stack"] == "functions",
                                           want_futures if view["futures"] else None)
            except ViewFailed as e:
                verdict = {"truth": len(judged), "found": 0, "exact": 0,
                           "right": {f: 0 for f in view["fields"]}, "missing": [t["name"] for t in judged],
                           "futures": {"truth": len(want_futures), "exact": 0} if view["futures"] else None,
                           "failures": [(e.cls, e.example)]}
            seconds = time.monotonic() - t0
            failures = {}
            for cls, example in verdict["failures"]:
                f = failures.setdefault(cls, {"count": 0, "example": example})
                f["count"] += 1
            rows.append({"interpreter": ident, "version": entry["version"], "view": view["view"],
                         "seconds": round(seconds, 3),
                         "tasks": {"truth": verdict["truth"], "found": verdict["found"], "exact": verdict["exact"]},
                         "fields": verdict["right"], "futures": verdict["futures"], "failures": failures,
                         "missing": verdict["missing"]})
            say("%s: %s: %d/%d tasks exact, %d found%s (%.2f s)" % (
                ident, view["view"], verdict["exact"], verdict["truth"], verdict["found"],
                "".join("; %s x%d" % (c, f["count"]) for c, f in failures.items()), seconds))
    finally:
        if proc is not None:
            kill_target(proc)
        kill_all_targets()
        if dest is not None:
            shutil.rmtree(dest, ignore_errors=True)
    return rows


# ---------------------------------------------------------------------------
# The table

def failures_cell(failures):
    if not failures:
        return "none"
    ranked = sorted(failures.items(), key=lambda x: (-x[1]["count"], x[0]))
    return ", ".join("%s (%d)" % (c, f["count"]) for c, f in ranked)


def markdown(doc):
    """The table of an async-field.json document, with its date, command
    and the notes on each view."""
    n = len(doc["interpreters"])
    lines = [f"{doc['date']} on {doc['commit']}: `{doc['command']}` ({n} interpreter{'s' if n != 1 else ''}, "
             f"each running targets/async/park_tasks.py); each row: the tasks whose every field the view reports "
             f"is as the target's own asyncio.capture_call_graph() gives it (3.11-3.13: as its tasks' own fields "
             f"give it), of the tasks there are, and every "
             f"failure class with the number of tasks in it (once per run for a view that failed outright).", "",
             "| interpreter | view | tasks exact / truth | failure classes (counts) |",
             "|---|---|---|---|"]
    for r in doc["rows"]:
        lines.append("| %s | %s | %d/%d | %s |" % (r["interpreter"], r["view"], r["tasks"]["exact"],
                                                   r["tasks"]["truth"], failures_cell(r["failures"])))
    lines.append("")
    for v in doc["views"]:
        lines.append("- %s: `%s`; judged: %s (stacks: %s); %s." % (
            v["view"], v["command"], ", ".join(v["fields"]), v["stack"], v["note"]))
    examples = {}
    for r in doc["rows"]:
        for cls, f in r["failures"].items():
            example = f["example"]
            if cls == "missing task" and len(r["missing"]) > 1:
                example += "; all %d missing: %s" % (len(r["missing"]), ", ".join(map(repr, r["missing"])))
            examples.setdefault((r["view"], cls), (r["interpreter"], example))
    if examples:
        lines += ["", "The first example of each failure class of each view "
                  "(docs/data/async-field.json has one for every row):", ""]
        lines += ["- %s, %s (%s): `%s`" % (view, cls, ident, example.replace("`", "'"))
                  for (view, cls), (ident, example) in examples.items()]
    return "\n".join(lines) + "\n"


def summary_markdown(doc):
    """The README's summary: per view, the interpreters on which it gave
    every task exactly, the tasks it gave exactly of all, and where each
    failure class was seen."""
    n = len(doc["interpreters"])
    # the program's task count per range of versions (it parks fewer before
    # 3.14), as frameproof's view counts it (it runs on every version; a
    # view of the running task alone counts fewer), else the first view's
    names = [v["view"] for v in doc["views"]]
    whole = "frameproof" if "frameproof" in names else names[0]
    sizes = {}
    for r in doc["rows"]:
        if r["view"] == whole:
            sizes.setdefault(r["tasks"]["truth"], set()).add(tuple(int(x) for x in r["version"].split(".")[:2]))
    tasks = " or ".join("%d (%s)" % (t, "–".join("%d.%d" % m for m in sorted({min(v), max(v)})))
                        for t, v in sorted(sizes.items())) or "0"
    lines = [f"{doc['date']} on {doc['commit']}: `{doc['command']}` ({n} interpreters, a parked program of "
             f"{tasks} tasks on three threads' loops (one stopped in a running task) and its interpreter's list; "
             f"every row in [docs/async.md](docs/async.md)).", "",
             "| view | every task exact on | tasks exact | failure classes (interpreters) |",
             "|---|---:|---:|---|"]
    for v in doc["views"]:
        rows = [r for r in doc["rows"] if r["view"] == v["view"]]
        exact = sum(r["tasks"]["exact"] == r["tasks"]["truth"] and not r["failures"] for r in rows)
        seen = {}
        for r in rows:
            for cls in r["failures"]:
                seen.setdefault(cls, []).append(r["interpreter"])
        classes = "; ".join("%s (%s)" % (cls, ", ".join(ids)) for cls, ids in sorted(seen.items())) or "none"
        lines.append("| %s | %d/%d | %d/%d | %s |" % (v["view"], exact, len(rows),
                                                      sum(r["tasks"]["exact"] for r in rows),
                                                      sum(r["tasks"]["truth"] for r in rows), classes))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------

def main(argv):
    ap = argparse.ArgumentParser(prog="ci/async-field", description=__doc__.split("\n\n")[0])
    ap.add_argument("--frameproof", default=os.path.join(REPO, "build", "frameproof"))
    ap.add_argument("--python", action="append", metavar="ID", help="only this interpreter id (repeatable)")
    ap.add_argument("--report-dir", help="write async-field.json there, not to docs/data/")
    ap.add_argument("--command", action="append", default=[], metavar="NAME=CMD",
                    help="also judge the unwinder command CMD ({pid}: the target's pid), which prints the "
                         "`dump --async --json` document, as the view NAME (repeatable)")
    args = ap.parse_args(argv)
    views = list(VIEWS)
    for spec in args.command:
        try:
            view, runner = command_view(spec)
        except ValueError as e:
            ap.error(str(e))
        RUNNERS[view["view"]] = runner
        views.append(view)
    t0 = time.monotonic()
    for path, what in ((args.frameproof, "frameproof"), (HELPER, "RemoteUnwinder's helper"),
                       (asyncgraph.TARGET, "the target")):
        if not os.path.isfile(path) or (what == "frameproof" and not os.access(path, os.X_OK)):
            raise MeasurementError("no %s at %s%s" % (what, path, " (build it first)" if what == "frameproof" else ""))
    fp = os.path.abspath(args.frameproof)
    try:
        plan, skipped = asyncgraph.plan(args.python, say, graph=asyncgraph.reads_graph)
    except LookupError as e:
        raise MeasurementError(str(e))
    rows, failed = [], []
    for entry in plan:
        try:
            rows += measure(entry, fp, views)
        except MeasurementError as e:
            say("error: %s" % e)
            failed.append(str(e))
    commit, date = result_file.stamp()
    doc = {"date": date, "commit": commit or "unknown",
           "command": shlex.join(["ci/async-field"] + result_file.public_args(argv)),
           "seconds": round(time.monotonic() - t0, 1),
           "interpreters": [{"id": e["id"], "version": e["version"]} for e in plan], "skipped": skipped,
           "views": [{k: v[k] for k in ("view", "command", "fields", "stack", "note")} for v in views],
           "rows": rows}
    sys.stdout.write(markdown(doc))
    if failed:
        say("%d measurement failure(s): no result file written" % len(failed))
        return 1
    result_file.publish(doc, "async-field.json", args.report_dir, say)
    return 0


if __name__ == "__main__":
    run_main(main, PROG, (MeasurementError,))
