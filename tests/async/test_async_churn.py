"""Live tests of `frameproof dump --async` on a program whose tasks never
stop coming and going (TAP).
usage: test_async_churn.py FRAMEPROOF_BINARY

For every 3.14+ GIL interpreter of the provisioning matrix and its JIT ids
(not provisioned: skipped), targets/async/churn_tasks.py runs two event
loops whose supervisors keep starting TaskGroups of short jobs.  DUMPS
`dump --async --json` runs are made while it runs; each must exit 0 with a
graph the program can have (its DECLARED and CALLS: every task one of the
program's, on its loop's thread, its stack starting at its root coroutine
and following the program's awaits (empty for a task whose step is
finishing it: running, or no longer pending), each frame of the program's own at an
`await` — a running task's innermost frame anywhere in its body —, its
awaiter the one task of the program that may await it, at most one running
task per thread, every awaiter a node of the graph) or exit 1 with one line
(counted, at most REFUSED_MAX of them); the checks must report each of four
faults injected into a copy of one graph (a job moved under another
supervisor, a stack's frames swapped, a frame at a line of no await, a job
given to the other loop's thread); the target must run on afterwards with no
thread stopped or traced.  Every graph taken while the tasks churn is one
instant because the target is stopped for the read; these checks are what
would show a graph that is not."""
import ast
import copy
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "targets", "async"))
from tap_results import check, report, skip  # noqa: E402
import asyncgraph  # noqa: E402  (starting targets; the interpreters)
import churn_tasks  # noqa: E402  (its DECLARED and CALLS; nothing runs on import)

FP = os.path.abspath(sys.argv[1])
TARGET = os.path.join(HERE, "..", "..", "targets", "async", "churn_tasks.py")
DUMPS = 40
REFUSED_MAX = 4      # dumps of DUMPS that may exit 1 (none of 100 on 3.15, nor of 40 on each id, 2026-12-04)
TIMEOUT = 60
DETACH_GRACE_S = 2.0  # how long the kernel may take to let the target's threads go


def await_lines(path):
    """{function: (lines it may wait at: its awaits and its def, lines of its body)}."""
    lines = {}
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.AsyncFunctionDef):
            at = {node.lineno} | {sub.lineno for sub in ast.walk(node)
                                  if isinstance(sub, (ast.Await, ast.AsyncWith, ast.AsyncFor))}
            lines[node.name] = (at, set(range(node.lineno, node.end_lineno + 1)))
    return lines


LINES = await_lines(TARGET)


def graph_problems(doc, declared=churn_tasks.DECLARED, calls=churn_tasks.CALLS, lines=LINES):
    """What is wrong with one `dump --async --json` document of
    churn_tasks.py: strings, none when the graph is one the program can have."""
    problems = []
    nodes = doc.get("tasks") if isinstance(doc, dict) else None
    if not isinstance(nodes, list):
        return ["no task list"]
    by_addr = {}
    for n in nodes:
        if n.get("addr") in by_addr:
            problems.append("node %#x listed twice" % n.get("addr"))
        by_addr[n.get("addr")] = n
    names = [n.get("name") for n in nodes if n.get("task")]
    if len(set(names)) != len(names):
        problems.append("a task name twice: %s" % sorted({x for x in names if names.count(x) > 1}))
    threads = {(n.get("name") or "")[5:]: n.get("thread") for n in nodes if (n.get("name") or "").startswith("main-")}
    running = {}
    for n in nodes:
        name = n.get("name") or ""
        if not n.get("task"):
            problems.append("a future that is no task: %#x" % n["addr"])
            continue
        kind = next((p for p in declared if name.startswith(p)), None)
        if kind is None:
            problems.append("task %r: no such task in the program" % name)
            continue
        loop = name[len(kind):].split("-")[0]
        if threads.get(loop) is not None and n.get("thread") != threads[loop]:
            problems.append("task %r on thread %s, its loop runs on %s" % (name, n.get("thread"), threads[loop]))
        if n.get("running"):
            running.setdefault(n.get("thread"), []).append(name)
        stack = n.get("stack") or []
        chain = [f.get("function") for f in stack][::-1]  # outermost first
        if not chain and (n.get("running") or n.get("state") != "pending"):
            # Its step is finishing it: the coroutine has returned (its
            # result being set, or set), the task not unlisted yet.
            pass
        elif not chain or chain[0] != declared[kind]["root"]:
            problems.append("task %r: stack starts at %s, not %s (%s%s)" % (
                name, chain[:1], declared[kind]["root"], n.get("state"), ", running" if n.get("running") else ""))
        for caller, callee in zip(chain, chain[1:]):
            if callee not in calls.get(caller, ()):
                problems.append("task %r: %s under %s" % (name, callee, caller))
        for k, f in enumerate(stack):
            fn, line = f.get("function"), f.get("line")
            if fn not in lines or not (f.get("file") or "").endswith("churn_tasks.py"):
                continue  # asyncio's own frames are not checked
            at, body = lines[fn]
            if not (line in at or (k == 0 and n.get("running") and line in body)):
                problems.append("task %r: %s at line %s" % (name, fn, line))
        want = declared[kind]["awaited_by"]
        expect = (want or "") + (name[len(kind):].rsplit("-", 1)[0] if kind == "job-" else loop)
        awaiters = n.get("awaited_by") or []
        if len(awaiters) > 1:
            problems.append("task %r awaited by %d nodes" % (name, len(awaiters)))
        for a in awaiters:
            parent = by_addr.get(a)
            if parent is None:
                problems.append("task %r: awaited by %#x, no node of the graph" % (name, a))
            elif want is None or parent.get("name") != expect:
                problems.append("task %r awaited by %r" % (name, parent.get("name")))
    for thread, names_running in running.items():
        if len(names_running) > 1:
            problems.append("thread %s runs %d tasks at once: %s" % (thread, len(names_running), names_running))
    return problems


def injected(doc):
    """(what, a copy of doc with that fault) for the faults the checks must report."""
    tasks = doc["tasks"]
    jobs = [t for t in tasks if (t.get("name") or "").startswith("job-") and t.get("awaited_by")]
    deep = [t for t in tasks if len(t.get("stack") or []) >= 2 and not t.get("running")]
    sups = [t for t in tasks if (t.get("name") or "").startswith("sup-")]
    faults = []

    def variant(what, change):
        d = copy.deepcopy(doc)
        change({t["addr"]: t for t in d["tasks"]})
        faults.append((what, d))
    if jobs and len(sups) > 1:
        other = next(s["addr"] for s in sups if s["addr"] not in jobs[0]["awaited_by"])
        variant("a job moved under another supervisor", lambda ts: ts[jobs[0]["addr"]].update(awaited_by=[other]))
        variant("a job given to another thread", lambda ts: ts[jobs[0]["addr"]].update(thread=-1))
    if deep:
        variant("a stack's frames swapped", lambda ts: ts[deep[0]["addr"]]["stack"].reverse())
        own = [f for f in deep[0]["stack"] if f["function"] in LINES]
        if own:
            variant("a frame at a line of no await",
                    lambda ts: next(f for f in ts[deep[0]["addr"]]["stack"] if f["function"] in LINES).update(
                        line=max(LINES[own[0]["function"]][1]) + 1000))
    return faults


def churn(ident, entry):
    dest = proc = None
    try:
        dest, inside = asyncgraph.install(entry.get("root", "/"), files=(TARGET,))
        proc, _ = asyncgraph.start(entry, inside + "/churn_tasks.py", TIMEOUT)
        graphs, refused, failed, wrong = 0, [], [], []
        sample = None
        for _ in range(DUMPS):
            r = subprocess.run([FP, "dump", "--async", "--json", "--pid", str(proc.pid)], capture_output=True,
                               timeout=TIMEOUT)
            err = r.stderr.decode(errors="replace").strip().splitlines()
            if r.returncode == 1 and len(err) == 1 and not r.stdout:
                refused.append(err[0])
                continue
            try:
                doc = json.loads(r.stdout) if r.returncode == 0 else None
            except ValueError:
                doc = None
            if doc is None:
                failed.append("status %s, stderr %r" % (r.returncode, err[:2]))
                continue
            graphs += 1
            problems = graph_problems(doc)
            if problems:
                wrong.append(problems[0])
            elif sample is None or len(doc["tasks"]) > len(sample["tasks"]):
                sample = doc
        check("%s: %d dumps of a churning program, each a graph or one line" % (ident, DUMPS), not failed,
              "; ".join(failed[:3]))
        check("%s: every graph is one the program can have" % ident, not wrong,
              "%d of %d wrong, first: %s" % (len(wrong), graphs, "; ".join(wrong[:3])))
        check("%s: at most %d refused" % (ident, REFUSED_MAX), len(refused) <= REFUSED_MAX,
              "%d refused: %s" % (len(refused), "; ".join(refused[:3])))
        faults = injected(sample) if sample else []
        missed = [what for what, d in faults if not graph_problems(d)]
        check("%s: the checks report each injected fault" % ident, len(faults) == 4 and not missed,
              "%d faults injected, not reported: %s" % (len(faults), ", ".join(missed)))
        ok, detail = asyncgraph.resumed(proc, DETACH_GRACE_S)
        check("%s: the target runs on, no thread left stopped or traced" % ident, ok, detail)
    finally:
        asyncgraph.stop(proc, dest)


def main():
    asyncgraph.each_interpreter(churn, "no task graph to read before 3.14 or on a free-threaded build", check, skip)
    report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
