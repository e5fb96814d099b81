"""ci/async-live's bookkeeping (TAP), without an interpreter: how a view's
reads are counted when its reader dies, and how a run is merged into a
result file.
usage: test_async_live_run.py

A stand-in reader (this file run with --reader) prints empty task graphs
and kills itself with SIGABRT after a given number of them, as CPython's
debug builds abort inside get_async_stack_trace():
- a CPython view whose reader dies after 2 calls, 7 calls asked: new
  readers make the calls left; 7 lines, 2 of them deaths (a failed-read
  class of their own), 5 graphs;
- one whose every reader dies at its first call, 30 calls asked: 20
  readers (MAX_CRASHES), 20 failed reads and 10 calls not made;
- a frameproof view whose reader dies: a failed measurement, not a row;
- a graph of a task the program does not have is counted wrong, an error
  line as a failed read;
- into(): a run replacing every row of an earlier partial run (its views
  on its interpreters) drops that run from the result's runs, and keeps
  the rows of views it did not run and the interpreters of both runs; a
  run on other interpreters keeps the earlier run as the source of its
  rows, and an interpreter measured again leaves the earlier run's list.
- the churn check (targets/async/churn_check.py) on a graph 3.12 gave: a
  running task's just-called coroutine at its first step, at no line,
  is right; the same frame in a task not running, or a frame under it at
  no line, is wrong."""
import json
import os
import signal
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
sys.path.insert(0, os.path.join(REPO, "ci"))

EMPTY = json.dumps({"pid": 1, "asyncio_loaded": True, "tasks": []})


def reader(lines, calls):
    """The stand-in: min(lines, calls) empty graphs, then death by SIGABRT
    while calls are left."""
    for _ in range(min(lines, calls)):
        print(EMPTY, flush=True)
    if lines < calls:
        os.kill(os.getpid(), signal.SIGABRT)


if len(sys.argv) > 1 and sys.argv[1] == "--reader":
    signal.signal(signal.SIGABRT, signal.SIG_DFL)
    reader(int(sys.argv[2]), int(sys.argv[-1]))
    sys.exit(0)

from tap_results import check, report  # noqa: E402
import async_live  # noqa: E402
import churn_check  # noqa: E402  (async_live puts targets/async on the path)

# A graph 3.12 gave (ci/async-live, 2026-12-05): a running job whose step_a
# has just called step_b, whose first step is at its POP_TOP (no line).
STARTED = os.path.join(REPO, "tests", "data", "async", "churn_started_coroutine_3.12.json")


def stand_in(lines):
    """reader_argv replaced: every reader is this file, dying after lines graphs."""
    def argv(view, fp, entry, inside, pid, count):
        return [sys.executable, os.path.abspath(__file__), "--reader", str(lines), str(count)], None
    return argv


def view(reader):
    return {"view": "test view", "role": "field", "reader": reader, "args": [], "command": "-"}


def run(reader_kind, lines, count):
    async_live.reader_argv = stand_in(lines)
    try:
        return async_live.run_view(view(reader_kind), "-", {"id": "test"}, "-", 0, count), None
    except async_live.MeasurementError as e:
        return None, str(e)


def merge(base, doc, views):
    """async_live.into() of doc over the result base (written to a file)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(base, f)
    try:
        return async_live.into(f.name, doc, views)
    finally:
        os.unlink(f.name)


def started_coroutine():
    """The churn check takes a coroutine just called by a running task at
    no line (3.12's first step), at any depth, and no other frame there."""
    with open(STARTED, encoding="utf-8") as f:
        doc = json.load(f)
    job = next(t for t in doc["tasks"] if t.get("running") and (t.get("name") or "").startswith("job-"))
    check("churn check: a running task's just-called coroutine at no line is an instant the program has",
          [(f["function"], f["line"]) for f in job["stack"]][:2] == [("step_b", None), ("step_a", 52)]
          and churn_check.graph_problems(doc) == [], "%s" % churn_check.graph_problems(doc))
    job["running"] = False
    check("churn check: the same frame in a task not running is wrong",
          any("step_b at line None" in p for p in churn_check.graph_problems(doc)),
          "%s" % churn_check.graph_problems(doc))
    job["running"] = True
    job["stack"][1]["line"] = None
    check("churn check: a frame under it at no line is wrong",
          any("step_a at line None" in p for p in churn_check.graph_problems(doc)),
          "%s" % churn_check.graph_problems(doc))


def main():
    started_coroutine()
    got, err = run("cpython", 2, 7)
    check("a reader dying after 2 calls: 7 lines, 2 deaths, 5 graphs",
          got and (got["graphs"], got["failed"], got["crashed"], got.get("not_made")) == (5, 2, 2, None),
          "%s %s" % (got and {k: got[k] for k in ("graphs", "failed", "crashed")}, err))
    died = got and [c for k, c in got["failures"].items() if "the reader died" in k]
    check("the deaths are one failed-read class", died and died[0]["count"] == 2, "%s" % (got and got["failures"]))

    got, err = run("cpython", 0, 30)
    check("every reader dying at its first call: %d deaths, the rest not made" % async_live.MAX_CRASHES,
          got and (got["graphs"], got["failed"], got["crashed"], got.get("not_made")) ==
          (0, async_live.MAX_CRASHES, async_live.MAX_CRASHES, 30 - async_live.MAX_CRASHES),
          "%s %s" % (got and {k: got.get(k) for k in ("graphs", "failed", "crashed", "not_made")}, err))

    got, err = run("frameproof", 2, 7)
    check("a frameproof reader dying: a failed measurement", got is None and err and "2 lines of 7" in err,
          "%s %s" % (got, err))

    wrong = json.dumps({"pid": 1, "tasks": [{"addr": 1, "task": True, "name": "nobody", "state": "pending",
                                             "thread": 1, "interp": 0, "running": False, "stack": [],
                                             "awaited_by": []}]})
    got = async_live.judge_stream([EMPTY, wrong, json.dumps({"pid": 1, "error": "x", "code": -8})], "test")
    check("judged: an empty graph, a wrong one, a failed read",
          (got["graphs"], got["empty"], got["wrong"], got["failed"]) == (2, 1, 1, 1),
          "%s" % {k: got[k] for k in ("graphs", "empty", "wrong", "failed")})

    base = {"date": "d0", "commit": "c0", "command": "all", "views": [], "seconds": 1,
            "interpreters": [{"id": "3.15", "version": "3.15.2"}],
            "rows": [{"interpreter": "3.15", "view": "A", "n": 0}, {"interpreter": "3.15", "view": "B", "n": 0}],
            "runs": [{"date": "d0", "commit": "c0", "command": "all"},
                     {"date": "d1", "commit": "c1", "command": "only B", "views": ["B"], "interpreters": ["3.15"]}]}
    doc = {"date": "d2", "commit": "c2", "command": "B again", "views": [], "seconds": 2,
           "interpreters": [{"id": "3.15", "version": "3.15.2"}, {"id": "3.11", "version": "3.11.2"}],
           "rows": [{"interpreter": "3.15", "view": "B", "n": 2}]}
    merged = merge(base, doc, ["B"])
    check("into(): the replaced partial run dropped, the other view's row kept",
          [r["date"] for r in merged["runs"]] == ["d0", "d2"] and
          [(r["view"], r["n"]) for r in merged["rows"]] == [("A", 0), ("B", 2)],
          "runs %s, rows %s" % (merged["runs"], merged["rows"]))
    check("into(): the interpreters of both runs, each once",
          [i["id"] for i in merged["interpreters"]] == ["3.15", "3.11"], "%s" % merged["interpreters"])
    # a run of the same view on another interpreter replaces no row of d1:
    # d1 stays named as the source of its rows
    other = dict(doc, date="d3", rows=[{"interpreter": "3.11", "view": "B", "n": 3}])
    merged = merge(base, other, ["B"])
    # ... and a run of it on one of two interpreters of an earlier run takes
    # that interpreter from the earlier run's list
    base2 = dict(base, runs=[base["runs"][0], dict(base["runs"][1], interpreters=["3.15", "3.11"])])
    merged2 = merge(base2, other, ["B"])
    check("into(): an interpreter measured again leaves the earlier run's list",
          [(r["date"], r.get("interpreters")) for r in merged2["runs"]] == [("d0", None), ("d1", ["3.15"]),
                                                                           ("d3", ["3.11"])],
          "runs %s" % merged2["runs"])
    check("into(): a run on other interpreters keeps the earlier run of the view, each naming its interpreters",
          [(r["date"], r.get("interpreters")) for r in merged["runs"]] == [("d0", None), ("d1", ["3.15"]),
                                                                          ("d3", ["3.11"])] and
          [(r["interpreter"], r["view"], r["n"]) for r in merged["rows"]] == [("3.15", "A", 0), ("3.15", "B", 0),
                                                                              ("3.11", "B", 3)],
          "runs %s, rows %s" % (merged["runs"], merged["rows"]))
    report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
