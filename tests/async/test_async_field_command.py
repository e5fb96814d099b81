"""ci/async-field's unwinder commands (TAP): any unwinder that prints the
`dump --async --json` document can be judged beside the built-in views.
usage: test_async_field_command.py FRAMEPROOF_BINARY

On the first provisioned 3.14+ interpreter with the GIL (3.15 preferred),
ci/async-field runs with four commands: frameproof itself (every task
exact), the same output with its first task dropped (the judge must count
one task missing and no other failure), with its running task's stack cut
to its coroutine (as CPython 3.15's get_all_awaited_by() gives it: one
"stack cut inside", nothing else) and a command that exits 1 (counted
once, as "exit status 1"); the run exits 0 (a wrong view is data) and its
result file has one row per view; the view of CPython's
get_async_stack_trace() is judged on the running task and the two tasks
that await it, in turn (3 tasks).  On the first 3.11-3.13 interpreter,
ci/async-field with the task-dropping command has two rows: frameproof
exact, the command one task short; no CPython view.  A --command without {pid}, or named like
a built-in view, is a usage error."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
sys.path.insert(0, os.path.join(REPO, "targets", "async"))
from tap_results import check, report, skip  # noqa: E402
from asyncgraph import interpreters, has_graph, reads_graph  # noqa: E402

FP = os.path.abspath(sys.argv[1])
FIELD = os.path.join(REPO, "ci", "async-field")
TIMEOUT = 300
# Drops the first task of the document on stdin: the fault the judge must see.
DROP_FIRST = ("import json, sys; d = json.load(sys.stdin); "
              "d['tasks'].remove(next(t for t in d['tasks'] if t['task'])); json.dump(d, sys.stdout)")

# Cuts each running task's stack to its coroutine, the outermost frame.
CUT_RUNNING = ("import json, sys; d = json.load(sys.stdin); "
               "[t.update(stack=t['stack'][-1:]) for t in d['tasks'] if t.get('running')]; json.dump(d, sys.stdout)")


def field(*args):
    return subprocess.run([FIELD, "--frameproof", FP, *args], capture_output=True, text=True, timeout=TIMEOUT)


def main():
    _, every = interpreters()
    usable = [(i, e) for i, e in every if e is not None and has_graph(e)]
    usable.sort(key=lambda ie: ie[0] != "3.15")
    if not usable:
        skip("ci/async-field --command", "no 3.14+ interpreter with the GIL provisioned")
        report()
        return 0
    ident = usable[0][0]
    with tempfile.TemporaryDirectory(prefix="fp-field-cmd-") as tmp:
        drop = os.path.join(tmp, "drop_first.py")
        with open(drop, "w", encoding="utf-8") as f:
            f.write(DROP_FIRST + "\n")
        cut = os.path.join(tmp, "cut_running.py")
        with open(cut, "w", encoding="utf-8") as f:
            f.write(CUT_RUNNING + "\n")
        r = field("--python", ident, "--report-dir", tmp,
                  "--command", "copy=%s dump --async --json --pid {pid}" % FP,
                  "--command", "drop-one=sh -c '%s dump --async --json --pid {pid} | %s %s'" % (FP, sys.executable, drop),
                  "--command", "cut-running=sh -c '%s dump --async --json --pid {pid} | %s %s'" % (FP, sys.executable, cut),
                  "--command", "fails=sh -c 'exit 1' {pid}")
        check("%s: ci/async-field with four commands exits 0" % ident, r.returncode == 0,
              "status %d: %s" % (r.returncode, r.stderr[-600:]))
        try:
            with open(os.path.join(tmp, "async-field.json"), encoding="utf-8") as f:
                rows = {row["view"]: row for row in json.load(f)["rows"]}
        except (OSError, ValueError, KeyError) as e:
            rows = {}
            check("%s: a result file" % ident, False, repr(e))
        frameproof = rows.get("frameproof", {}).get("tasks", {})
        truth = frameproof.get("truth")
        copy = rows.get("copy", {})
        check("%s: the command copying frameproof is exact on every task" % ident,
              truth and copy.get("tasks", {}).get("exact") == truth and not copy.get("failures"),
              json.dumps(copy)[:400])
        drop_one = rows.get("drop-one", {})
        check("%s: the command dropping a task: one task missing, nothing else" % ident,
              truth and drop_one.get("tasks", {}).get("exact") == truth - 1
              and {c: f["count"] for c, f in drop_one.get("failures", {}).items()} == {"missing task": 1},
              json.dumps(drop_one)[:400])
        cut_running = rows.get("cut-running", {})
        check("%s: the command cutting the running task's stack: one stack cut inside, nothing else" % ident,
              truth and cut_running.get("tasks", {}).get("exact") == truth - 1
              and {c: f["count"] for c, f in cut_running.get("failures", {}).items()} == {"stack cut inside": 1},
              json.dumps(cut_running)[:400])
        running = rows.get("RemoteUnwinder running", {}).get("tasks", {})
        check("%s: get_async_stack_trace() judged on the running task and its two awaiters" % ident,
              running.get("truth") == 3, json.dumps(running))
        fails = rows.get("fails", {})
        check("%s: the failing command: counted once as its exit status" % ident,
              fails.get("tasks", {}).get("exact") == 0 and list(fails.get("failures", {})) == ["exit status 1"]
              and fails["failures"]["exit status 1"]["count"] == 1, json.dumps(fails)[:400])
    legacy = [i for i, e in every if e is not None and reads_graph(e) and not has_graph(e)]
    if legacy:
        # 3.11-3.13: frameproof's view and the commands, judged against the
        # graph the tasks' own fields give; CPython's views have no row there
        with tempfile.TemporaryDirectory(prefix="fp-field-cmd-") as tmp:
            drop = os.path.join(tmp, "drop_first.py")
            with open(drop, "w", encoding="utf-8") as f:
                f.write(DROP_FIRST + "\n")
            r = field("--python", legacy[0], "--report-dir", tmp, "--command",
                      "drop-one=sh -c '%s dump --async --json --pid {pid} | %s %s'" % (FP, sys.executable, drop))
            try:
                with open(os.path.join(tmp, "async-field.json"), encoding="utf-8") as f:
                    rows = {row["view"]: row for row in json.load(f)["rows"]}
            except (OSError, ValueError, KeyError):
                rows = {}
            fpt = rows.get("frameproof", {}).get("tasks", {})
            drop_one = rows.get("drop-one", {})
            check("%s: ci/async-field: frameproof exact, the command dropping a task one short, no CPython view"
                  % legacy[0], r.returncode == 0 and sorted(rows) == ["drop-one", "frameproof"]
                  and fpt.get("truth") and fpt.get("exact") == fpt["truth"]
                  and drop_one.get("tasks", {}).get("exact") == fpt["truth"] - 1
                  and {c: f["count"] for c, f in drop_one.get("failures", {}).items()} == {"missing task": 1},
                  "status %d, rows %s: %s" % (r.returncode, sorted(rows), r.stderr[-400:]))
    else:
        skip("ci/async-field on 3.11-3.13", "no 3.11-3.13 interpreter provisioned")
    for spec, why in (("nopid=%s dump --async --json" % FP, "{pid}"), ("frameproof=%s {pid}" % FP, "exists already")):
        r = field("--python", ident, "--command", spec)
        check("ci/async-field --command %s: a usage error" % spec.split("=")[0],
              r.returncode == 2 and why in r.stderr, "status %d: %s" % (r.returncode, r.stderr[-300:]))
    report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
