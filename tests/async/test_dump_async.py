"""Live tests of `frameproof dump --async` (TAP): the asyncio task graph
read from outside equals the one the target computes of itself.
usage: test_dump_async.py FRAMEPROOF_BINARY

For every interpreter of the provisioning matrix (facts/facts.env's
MATRIX_IDS, then its JIT_IDS; the manifest is read at run time, an id not
provisioned is skipped) targets/async/park_tasks.py is started: it parks
its tasks on two threads' loops (a third stopped in a running task, a
fourth gone) and prints "ready <truth>", the graph asyncio computes of
itself — on 3.14+ asyncio.capture_call_graph(), on 3.11-3.13 each task's
coroutine chain and the tasks that wait on it (directly or through a
gather()), the only links those versions keep.  `dump --async --json`
must exit 0 with the document's header, the same tasks, each with its
name, state, thread, stack ([function, line], innermost first) and
awaited_by, and the same non-task futures; the comparison must report
each of the faults injected into a copy of the dump (a stack reversed, a
line off by one, a task renamed, a task dropped, an awaiter edge moved to
another task, ...); the text form must name every task; afterwards the
target runs on and none of its threads is left stopped or traced; with
--max-depth as deep as the deepest task's stack, the threads deeper than
that fail their walks and dump --async still gives the whole graph (and
says why on stderr), a running task on such a thread with its coroutine
alone and its "thread_error"; `snapshot --async` of the parked target must
write an image whose `replay --async --json` is the live dump's document
("stopped_ns" 0: an image is read without stopping anything).  A program
that never imported asyncio (targets/async/park_plain.py) must give an
empty graph: on 3.14+ its asyncio_loaded says whether the interpreter has
asyncio's C module built in (then its layout is found all the same, and
`snapshot --async` captures the empty graph; else it refuses with one
line and writes no image), on 3.11-3.13 asyncio_loaded is false (no
asyncio.tasks module) and `snapshot --async` captures the empty graph.
The parked program runs a second time with every task of asyncio's
pure-Python implementation (PARK_PURE_TASKS=1: on 3.11-3.13 made by a task
factory, on 3.14+ with asyncio's C module kept from being imported), judged
the same way; on 3.14+ `snapshot --async` refuses it unless that module is
built in (its table is found all the same).  On 3.14+ tasks of that
implementation beside asyncio's C module (targets/async/park_mixed.py:
all made by a task factory, or awaited by a C task) are refused, one line
saying why."""
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "targets", "async"))
from tap_results import check, report, skip  # noqa: E402
# what the checks of task graphs share: the interpreters, starting
# park_tasks.py and reading its truth, the comparison with it
from asyncgraph import (interpreters, version, install, start, read_truth, label, task_differences,  # noqa: E402
                        future_differences, injected_faults, first, resumed, stop, has_graph, ASYNC_MIN)

FP = os.path.abspath(sys.argv[1])
PLAIN = os.path.join(HERE, "..", "..", "targets", "async", "park_plain.py")
MIXED = os.path.join(HERE, "..", "..", "targets", "async", "park_mixed.py")
TIMEOUT = 60          # for the target's "ready" and for each frameproof run
DETACH_GRACE_S = 2.0  # how long the kernel may take to let the target's threads go


def fp(*args):
    """frameproof ARGS: (status, stdout, stderr), status None when it ran
    longer than TIMEOUT (then it is killed)."""
    try:
        r = subprocess.run([FP, *map(str, args)], capture_output=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as e:
        return None, e.stdout or b"", (e.stderr or b"") + b"[killed after %d s]" % TIMEOUT
    return r.returncode, r.stdout, r.stderr


def check_resumed(name, proc):
    """(f): the target runs on and none of its threads is stopped or traced."""
    ok, detail = resumed(proc, DETACH_GRACE_S)
    check("%s: the target runs on, no thread left stopped or traced" % name, ok, detail)


def text(b, limit=None):
    """b decoded and stripped; cut after limit characters."""
    s = b.decode(errors="replace").strip()
    return s if limit is None or len(s) <= limit else s[:limit] + "..."


def said(err):
    """What a failed run said: its stderr's first line (a usage error prints
    the whole help after it), with the number of lines."""
    lines = text(err).splitlines()
    return "%r (%d lines)" % (lines[0][:300], len(lines)) if lines else "nothing"


def snapshot_replayed(ident, proc, doc, what):
    """`snapshot --async` of proc, then `replay --async --json` of the image:
    the document doc (its stopped_ns 0), or, doc None, a one-line error
    and no image."""
    with tempfile.TemporaryDirectory(prefix="fp-async-img-") as tmp:
        img = os.path.join(tmp, "g.fpimg")
        status, out, err = fp("snapshot", "--async", "--pid", proc.pid, "-o", img)
        if doc is None:
            check("%s: %s: snapshot --async refused: exit 1, one line, no image" % (ident, what),
                  status == 1 and len(text(err).splitlines()) == 1 and not os.path.exists(img),
                  "status %s, stderr %s" % (status, said(err)))
            return
        rstatus, rout, rerr = fp("replay", "--async", "--json", img) if status == 0 else (None, b"", b"")
        try:
            got = json.loads(rout) if rstatus == 0 else None
        except ValueError:
            got = None
        want = dict(doc, stopped_ns=0)
        check("%s: %s: snapshot --async, replay --async --json gives the live dump's graph" % (ident, what),
              got == want, "snapshot %s %s, replay %s %s, %s" % (
                  status, said(err), rstatus, said(rerr),
                  "no document" if got is None else "%d nodes, the live dump %d" % (
                      len(got.get("tasks") or []), len(want.get("tasks") or []))))


def graph(ident, entry, proc, rest, snapshot=True):
    """Part 1: the dump of a parked target against its own truth; snapshot
    False: `snapshot --async` must refuse it (3.14+ without asyncio's C
    module, whose table it needs)."""
    name = ident
    want_tasks, want_futures, names = read_truth(rest, proc.pid)

    status, out, err = fp("dump", "--async", "--json", "--pid", proc.pid)
    try:
        doc = json.loads(out) if status == 0 else None
    except ValueError as e:
        doc, err = None, err + (" [%s]" % e).encode()
    ok = isinstance(doc, dict) and isinstance(doc.get("tasks"), list) \
        and all(isinstance(t, dict) and isinstance(t.get("addr"), int) for t in doc["tasks"])
    check("%s: dump --async --json exits 0 with a JSON document" % name, ok,
          "status %s, stderr %s, stdout %r" % (status, said(err), text(out, 300)))
    points = ("the header", "the same tasks", "each task's name, state, thread, stack and awaited_by as the truth",
              "the same non-task futures")
    if not ok:
        for what in points:
            check("%s: %s" % (name, what), False, "no document to compare")
    else:
        py = doc.get("python") or {}
        header = {"pid": doc.get("pid"), "version": py.get("version"), "free_threaded": py.get("free_threaded"),
                  "debug": py.get("debug"), "asyncio_loaded": doc.get("asyncio_loaded")}
        want = {"pid": proc.pid, "version": entry["version"], "free_threaded": bool(entry.get("free_threaded")),
                "debug": bool(entry.get("debug")), "asyncio_loaded": True}
        check("%s: %s" % (name, points[0]), header == want, "%s, expected %s" % (header, want))

        nodes = doc["tasks"]
        addrs = [t["addr"] for t in nodes]
        twice = sorted({a for a in addrs if addrs.count(a) > 1})
        dumped_tasks = {t["addr"]: t for t in nodes if t.get("task") is True}
        dumped_futures = {t["addr"]: t for t in nodes if t.get("task") is False}
        odd = [a for a in addrs if a not in dumped_tasks and a not in dumped_futures]
        missing = [t for t in want_tasks if t["addr"] not in dumped_tasks]
        extra = sorted(set(dumped_tasks) - {t["addr"] for t in want_tasks})
        diffs = ["missing %s" % label(t) for t in missing]
        diffs += ["a task not in the truth: %#x %r" % (a, dumped_tasks[a].get("name")) for a in extra]
        diffs += ["listed more than once: %#x" % a for a in twice]
        diffs += ["\"task\" neither true nor false: %#x" % a for a in odd]
        check("%s: %s" % (name, points[1]), not diffs,
              "the truth has %d tasks, the dump %d\n%s" % (len(want_tasks), len(dumped_tasks), first(diffs)))
        diffs = task_differences(want_tasks, dumped_tasks, names)
        check("%s: %s" % (name, points[2]), not diffs, first(diffs))
        faults = injected_faults(dumped_tasks)
        missed = [what for what, tasks in faults if not task_differences(want_tasks, tasks, names)]
        check("%s: the comparison reports each injected fault" % name, len(faults) == 6 and not missed,
              "%d faults injected, not reported: %s" % (len(faults), ", ".join(missed)))
        diffs = future_differences(want_futures, dumped_futures, names)
        check("%s: %s" % (name, points[3]), not diffs, first(diffs))
        snapshot_replayed(name, proc, doc if snapshot else None, "parked tasks")

    status, out, err = fp("dump", "--async", "--pid", proc.pid)
    shown = text(out)
    unnamed = [t["name"] for t in want_tasks
               if not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(t["name"]), shown)]
    check("%s: the text form exits 0 and names every task" % name, status == 0 and not unnamed,
          "status %s, stderr %s, names missing: %s" % (status, said(err), ", ".join(unnamed)))
    deeper_threads(name, proc, want_tasks, names)
    check_resumed(name, proc)


def deeper_threads(name, proc, want_tasks, names):
    """--max-depth as deep as the deepest task's coroutine stack and
    shallower than the event loops' threads: their walks fail, the graph
    does not; a running task on such a thread is shown with its coroutine
    alone, which "thread_error" says."""
    depth = max(len(t["stack"]) for t in want_tasks)
    status, out, err = fp("dump", "--async", "--json", "--max-depth", depth, "--pid", proc.pid)
    try:
        doc = json.loads(out) if status == 0 else {}
    except ValueError:
        doc = {}
    dumped = {t["addr"]: t for t in doc.get("tasks") or [] if t.get("task") is True}
    # a running task on a thread whose walk failed: its coroutine alone,
    # saying why; every other task as the truth has it
    want = [dict(t, stack=t["stack"][-1:]) if dumped.get(t["addr"], {}).get("thread_error") else t
            for t in want_tasks]
    diffs = task_differences(want, dumped, names) if dumped else ["no tasks dumped"]
    diffs += ["thread_error %r on %s, which is not running" % (t["thread_error"], names.get(a, hex(a)))
              for a, t in dumped.items() if t.get("thread_error") is not None and not t.get("running")]
    warned = ("deeper than %d frames" % depth) in text(err)
    check("%s: a thread deeper than --max-depth %d fails its walk, not the graph" % (name, depth),
          status == 0 and warned and not diffs,
          "status %s, stderr %s, %s" % (status, said(err), first(diffs) if diffs else "no warning"))


def no_asyncio(ident, entry):
    """Part 2: a program that never imported asyncio: an empty graph, which
    says whether asyncio was found: on 3.14+ its C module (built in), on
    3.11-3.13 its tasks module (never, here).  Returns whether asyncio's C
    module is built in (False before 3.14)."""
    dest = proc = None
    legacy = version(entry) < ASYNC_MIN
    try:
        dest, inside = install(entry.get("root", "/"), (PLAIN,))
        proc, rest = start(entry, inside + "/park_plain.py", TIMEOUT)
        loaded = False if legacy else json.loads(rest)["builtin"]
        status, out, err = fp("dump", "--async", "--json", "--pid", proc.pid)
        try:
            doc = json.loads(out) if status == 0 else {}
        except ValueError:
            doc = {}
        check("%s: without asyncio imported, an empty graph, asyncio_loaded %s" % (ident, loaded),
              status == 0 and doc.get("tasks") == [] and doc.get("asyncio_loaded") is loaded,
              "status %s, stderr %s, asyncio_loaded %s, %s tasks" % (status, said(err), doc.get("asyncio_loaded"),
                                                                    len(doc.get("tasks") or [])))
        snapshot_replayed(ident, proc, doc if loaded or legacy else None, "without asyncio imported")
        return loaded and not legacy
    finally:
        stop(proc, dest)


def mixed(ident, entry):
    """Part 3 (3.14+): tasks of asyncio's pure-Python implementation beside
    its C module (targets/async/park_mixed.py), which records no awaiter of
    theirs: dump --async refuses the graph (exit 1, one line saying why) —
    every task pure through a task factory, and a C task awaiting a pure
    one in a program that put the pure-Python recorder back."""
    for how in ("factory", "patched"):
        dest = proc = None
        try:
            dest, inside = install(entry.get("root", "/"), (MIXED,))
            proc, _ = start(entry, inside + "/park_mixed.py", TIMEOUT, env={"PARK_MIXED": how})
            status, out, err = fp("dump", "--async", "--json", "--pid", proc.pid)
            check("%s: pure-Python tasks beside asyncio's C module (%s): refused, exit 1, one line" % (ident, how),
                  status == 1 and not out and len(text(err).splitlines()) == 1
                  and "pure-Python implementation beside" in text(err),
                  "status %s, stderr %s, stdout %s" % (status, said(err), text(out, 200)))
            check_resumed("%s (%s)" % (ident, how), proc)
        finally:
            stop(proc, dest)


def main():
    manifest, every = interpreters()
    for ident, entry in every:
        if entry is None:
            skip(ident, "not provisioned (no entry in %s)" % manifest)
            continue
        dest = proc = None
        try:
            dest, inside = install(entry.get("root", "/"))
            proc, rest = start(entry, inside + "/park_tasks.py", TIMEOUT)
            graph(ident, entry, proc, rest)
            builtin = no_asyncio(ident, entry)
            # every task of asyncio's pure-Python implementation (3.14+: its
            # C module not imported, which snapshot --async needs unless built in)
            stop(proc, None)
            proc = None
            proc, rest = start(entry, inside + "/park_tasks.py", TIMEOUT, env={"PARK_PURE_TASKS": "1"})
            graph(ident + " pure-Python tasks", entry, proc, rest, snapshot=builtin or not has_graph(entry))
            if has_graph(entry):
                mixed(ident, entry)
        except (RuntimeError, OSError, ValueError, KeyError) as e:
            check("%s: setup" % ident, False, "%s: %s" % (type(e).__name__, e))
        finally:
            stop(proc, dest)
    report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
