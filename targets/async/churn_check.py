"""churn_check.py — whether one asyncio task graph (`frameproof dump
--async --json`, one document) of churn_tasks.py is one the program can
have, from what the program declares (its DECLARED and CALLS) and the lines
of its awaits; and the faults those checks must report.  Shared by
tests/async/test_async_churn.py and ci/async-live."""
import ast
import copy
import os

import churn_tasks  # (its DECLARED and CALLS; nothing runs on import)

TARGET = os.path.join(os.path.dirname(os.path.abspath(__file__)), "churn_tasks.py")


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
# Frames of the event loop itself: in no task's stack of this program.
EVENT_LOOP = {"BaseEventLoop._run_once", "BaseEventLoop.run_forever", "Handle._run"}


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
        if n.get("running") is True:
            # What a running task runs now, above its innermost frame of
            # the program's own coroutines (asyncio's functions, the ones
            # they call), is not the program's to declare: left unchecked.
            own = [k for k, f in enumerate(stack)
                   if f.get("function") in lines and (f.get("file") or "").endswith("churn_tasks.py")]
            stack = stack[own[0]:] if own else stack
        # The event loop's frames in a task's stack: the thread's frames
        # below the task's (a view that walked past its coroutine), or, with
        # none above them, a task being stepped, its coroutine not entered.
        # An instant the program has, seen another way: a problem of its own
        # class, and what lies above them is checked as the task's stack.
        cut = next((k for k, f in enumerate(stack) if f.get("function") in EVENT_LOOP), None)
        if cut is not None:
            problems.append("task %r: the event loop frames in its stack, from %s (%s%s)" % (
                name, [stack[-1].get("function")], n.get("state"), ", running" if n.get("running") else ""))
            stack = stack[:cut]
        chain = [f.get("function") for f in stack][::-1]  # outermost first
        if not chain and (cut is not None or n.get("running") or n.get("state") != "pending"):
            # Its step is finishing it: the coroutine has returned (its
            # result being set, or set), the task not unlisted yet; or
            # asyncio is stepping it (above).
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
            # A view that does not say which task runs (no "running": CPython's)
            # may have any task's innermost frame anywhere in its body.  A
            # coroutine being started may be at no line: 3.12's first step
            # runs a POP_TOP that has none, before its RESUME (f_lineno is
            # None there too) — the task's own coroutine (its only frame), or,
            # in a task said to run, one it has just called and awaits
            # (`await step_b(rounds)`: step_b's first step above step_a).
            started = line is None and (len(stack) == 1 or n.get("running") is True)
            running_at = k == 0 and n.get("running", True) and (line in body or started)
            if not (line in at or running_at):
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


def supervisor(name):
    """The supervisor a job's name says it belongs to, or None."""
    return name.rsplit("-", 1)[0] if name and name.startswith("job-") else None


def reused(prev, doc):
    """How many jobs of graph doc sit where another supervisor's job was in
    graph prev (the read before): what the stale-awaiter fault needs to
    show a wrong edge.  On 3.12, whose finished tasks the cycle collector
    frees, none was seen in 500 reads (2026-12-05)."""
    was = {t.get("addr"): t.get("name") for t in (prev or {}).get("tasks") or []}
    return sum(1 for t in doc.get("tasks") or []
               if supervisor(t.get("name")) and supervisor(was.get(t.get("addr"))) not in
               (None, supervisor(t.get("name"))))


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
