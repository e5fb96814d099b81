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
thread stopped or traced.  Then COUNT reads of one `dump --async --count`
on one session, the target running INTERVAL_US between two of them: each
a graph the program can have or a failed read (at most 2 % of them), and
with the stale-awaiter fault (each graph printed with the previous read's
awaiters) graphs the checks report.  All of it twice per interpreter: the
second time every task is of asyncio's pure-Python implementation (its C
module kept from being imported).  Every graph taken while the tasks churn is one
instant because the target is stopped for the read; these checks are what
would show a graph that is not."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "targets", "async"))
from tap_results import check, report, skip  # noqa: E402
import asyncgraph  # noqa: E402  (starting targets; the interpreters)
from churn_check import graph_problems, injected, reused as churn_reused  # noqa: E402

FP = os.path.abspath(sys.argv[1])
TARGET = os.path.join(HERE, "..", "..", "targets", "async", "churn_tasks.py")
PURE = os.path.join(HERE, "..", "..", "targets", "async", "churn_pure.py")  # it on asyncio's pure-Python tasks
DUMPS = 40
COUNT = 500          # graphs of one `dump --async --count` (and of its stale-awaiter fault)
INTERVAL_US = 1000   # --interval: the target runs 1 ms between two of them (back to back it barely
                     # runs, and a read may find the state the read before found, a failed one again
                     # or the same awaiters: the stale-awaiter fault then misplaces nothing)
COUNT_REFUSED_MAX = COUNT // 50  # reads of COUNT that may fail: the bound on lost graphs, 2 %
REFUSED_MAX = 4      # dumps of DUMPS that may exit 1 (none of 100 on 3.15, nor of 40 on each id, 2026-12-04)
TIMEOUT = 60
DETACH_GRACE_S = 2.0
REUSED_MIN = 5       # jobs at another supervisor's job's address the read before, in COUNT reads, for the
                     # stale-awaiter fault to be judged (3.11-3.15: tens to hundreds; 3.12: 0 in one run, 2026-12-05)  # how long the kernel may take to let the target's threads go


def churn(ident, entry, pure=False):
    """The checks on one run of churn_tasks.py; pure: every task of
    asyncio's pure-Python implementation (churn_pure.py: its C module not
    imported)."""
    dest = proc = None
    ident += " pure-Python tasks" if pure else ""
    try:
        dest, inside = asyncgraph.install(entry.get("root", "/"), files=(TARGET, PURE))
        proc, _ = asyncgraph.start(entry, inside + ("/churn_pure.py" if pure else "/churn_tasks.py"), TIMEOUT)
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
        reused = 0
        for fault, want in ((None, "every graph is one the program can have"),
                            ("stale-awaiter", "the stale-awaiter fault gives graphs the checks report")):
            argv = [FP, "dump", "--async", "--json", "--count", str(COUNT), "--interval", str(INTERVAL_US),
                    "--pid", str(proc.pid)]
            r = subprocess.run(argv + (["--inject-fault", fault] if fault else []), capture_output=True,
                               timeout=TIMEOUT)
            docs = [json.loads(line) for line in r.stdout.decode().splitlines()]
            bad = [p[0] for d in docs if "error" not in d for p in [graph_problems(d)] if p]
            errors = [d["error"] for d in docs if "error" in d]
            if fault is None:
                graphs = [d for d in docs if "error" not in d]
                reused = sum(churn_reused(a, b) for a, b in zip(graphs, graphs[1:]))
            elif reused < REUSED_MIN:
                skip("%s: --count %d on one session: %s" % (ident, COUNT, want),
                     "a job's memory was another supervisor's job's at the read before %d times in %d reads (fewer "
                     "than %d): the fault has too few edges to misplace" % (reused, COUNT, REUSED_MIN))
                continue
            got = len(docs) == COUNT and len(errors) <= COUNT_REFUSED_MAX and (bool(bad) if fault else not bad)
            check("%s: --count %d on one session: %s" % (ident, COUNT, want), got,
                  "status %d, %d lines, %d failed (%s), %d wrong (%s)" % (
                      r.returncode, len(docs), len(errors), "; ".join(errors[:2]), len(bad), "; ".join(bad[:2])))
        ok, detail = asyncgraph.resumed(proc, DETACH_GRACE_S)
        check("%s: the target runs on, no thread left stopped or traced" % ident, ok, detail)
    finally:
        asyncgraph.stop(proc, dest)


def main():
    def both(ident, entry):
        churn(ident, entry)
        churn(ident, entry, pure=True)
    asyncgraph.each_interpreter(both, "no asyncio task graph frameproof reads", check, skip,
                                graph=asyncgraph.reads_graph)
    report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
