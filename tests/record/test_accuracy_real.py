"""The accuracy verdict on a real program has teeth (TAP): the asyncio
workload of targets/accuracy/real/ (40 tasks of short coroutines) on the
host's 3.11, at 0.4 of its work, recorded three times with `frameproof
record --blocking` (the reference and its measured noise floor) and once
with the mutant sampler `--inject-fault drop-torn` (drops every thread
sample whose walk tore), which ci/accuracy real must judge beyond its
bound; and that a row's runs are taken in rounds. Skipped, saying why, when
3.11 is not provisioned or the build has no such mutant. asyncio, not
gevent: its stacks change every few microseconds, so the mutant tears and
drops in every run; on gevent the colocated sampler tore so rarely in some
runs that the mutant dropped almost nothing. Whether frameproof's default
passes is left to the full run: one short run on a loaded machine is too
noisy to be a test.
usage: test_accuracy_real.py FRAMEPROOF_BINARY"""
import importlib.util
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
from tap_results import check, report, skip  # noqa: E402

spec = importlib.util.spec_from_file_location("accuracy_real", os.path.join(ROOT, "ci", "accuracy_real.py"))
accuracy_real = importlib.util.module_from_spec(spec)
spec.loader.exec_module(accuracy_real)
rp = accuracy_real.rp

INTERPRETER = "3.11"
WORKLOAD = "asyncio"
SCALE = 0.4          # about 2.5 s of work on 3.11
REFERENCES = 3       # three pairs: a steadier floor than one
MUTANT = "mutant drop-torn"


class FakeProfile:
    kept, dropped, torn, left_out, stepped = 1, 0, 0, 0, 0

    def distribution(self):
        return {("f", "g"): 1.0}


def run_order():
    """The rows' runs come in rounds (reference, then each profiler), so that
    a drift of the machine's speed reaches them alike: a run of one
    profiler after another fails this."""
    order = []

    def runner_of(name):
        def runner(ctx, interp, place, workload, scale, flags):
            order.append(name)
            return FakeProfile(), 1
        return runner
    plan = [(rp.Profiler(n, role, runner_of(n)), k) for n, role, k in
            (("ref", "reference", 3), ("judged", "judged", 3), ("mutant", "mutant", 1))]
    ctx = accuracy_real.parse_args([])
    ctx.started = time.monotonic()
    got = accuracy_real.interleaved_runs(ctx, None, None, "w", plan, "order:")
    want = ["ref", "judged", "mutant", "ref", "judged", "ref", "judged"]
    check("ci/accuracy real takes a row's runs in rounds (reference, then each profiler)", order == want,
          f"{order} != {want}")
    check("ci/accuracy real keeps each profiler's runs apart",
          [len(got[n].dists) for n in ("ref", "judged", "mutant")] == [3, 3, 1], str(got))


def merged_results():
    """--merge: a later result's rows replace every row of its (workload,
    interpreter) in place, a new case goes last, the header says where each
    came from, and results of a different rate are refused."""
    def doc(date, commit, cases, **kw):
        rows = [{"workload": w, "interpreter": i, "profiler": p, "role": "judged", "verdict": v}
                for w, i, p, v in cases]
        d = {"date": date, "commit": commit, "command": f"run {commit}", "rate_hz": 1000, "reference": "r",
             "bound": 1.25, "scale": 1.0, "top": 20, "seconds": 10, "rows": rows}
        d.update(kw)
        return d
    a = doc("2026-01-01 10:00 UTC", "aaa", [("t", "3.11", "x", "fail"), ("t", "3.11", "y", "fail"),
                                             ("t", "3.13", "x", "pass")])
    b = doc("2026-01-01 11:00 UTC", "bbb", [("t", "3.11", "x", "pass"), ("g", "3.14", "x", "pass")])
    m = accuracy_real.merge([a, b])
    got = [(r["workload"], r["interpreter"], r["profiler"], r["verdict"]) for r in m["rows"]]
    want = [("t", "3.11", "x", "pass"), ("t", "3.13", "x", "pass"), ("g", "3.14", "x", "pass")]
    check("--merge replaces a re-run case's rows in place and appends new cases", got == want, str(got))
    check("--merge names the source of the re-run rows",
          m["commit"] == "aaa (2026-01-01 10:00 UTC); the rows of t 3.11, g 3.14 from bbb (2026-01-01 11:00 UTC)"
          and m["date"] == "2026-01-01 11:00 UTC" and m["command"] == "run aaa; run bbb" and m["seconds"] == 20,
          str({k: m[k] for k in ("commit", "date", "command", "seconds")}))
    try:
        accuracy_real.merge([a, doc("2026-01-02 10:00 UTC", "ccc", [], rate_hz=100)])
        refused = False
    except ValueError:
        refused = True
    check("--merge refuses results taken at another rate", refused)
    c = doc("2026-01-01 12:00 UTC", "ccc", [("t", "3.11", "x", "pass"), ("g", "3.14", "x", "fail")])
    mm = accuracy_real.merge([m, c])
    check("--merge of a merged result names only the runs its rows came from",
          mm["commit"] == "aaa (2026-01-01 10:00 UTC); the rows of t 3.11, g 3.14 from ccc (2026-01-01 12:00 UTC)"
          and mm["command"] == "run aaa; run ccc", str({k: mm[k] for k in ("commit", "command")}))
    d = doc("2026-01-01 13:00 UTC", "ddd", [("g", "3.14", "x", "pass")])
    md = accuracy_real.merge([m, d])
    check("--merge of a merged result names only the cases left from each run",
          md["commit"] == "aaa (2026-01-01 10:00 UTC); the rows of t 3.11 from bbb (2026-01-01 11:00 UTC); "
          "the rows of g 3.14 from ddd (2026-01-01 13:00 UTC)"
          and md["command"] == "run aaa; run bbb; run ddd", str({k: md[k] for k in ("commit", "command")}))


def exchangeable():
    """The permutation p beside the verdict: runs drawn from the
    references' own distribution get a large p, runs with 0.03 of the mass
    moved between two of 20 leaves a small one (seeded draws of 1 600
    samples); 3 and 1 runs give no p (4 splits)."""
    import random
    rng = random.Random(7)
    leaves = [("f.py", "l%d" % k) for k in range(20)]

    def draw(weights):
        got = rng.choices(leaves, weights, k=1600)
        return {k: got.count(k) / 1600 for k in set(got)}
    even = [1.0] * 20
    shifted = [0.4] + [1.6] + [1.0] * 18
    refs = [draw(even) for _ in range(6)]
    same = accuracy_real.verdict.exchangeable_p([draw(even) for _ in range(6)], refs)
    moved = accuracy_real.verdict.exchangeable_p([draw(shifted) for _ in range(6)], refs)
    check("exchangeable_p: a sampler that moves 0.03 of the mass gets p < 0.01, an unbiased one p > 0.1",
          same > 0.1 and moved < 0.01, f"unbiased {same}, shifted {moved}")
    check("exchangeable_p: no p from 4 splits", accuracy_real.verdict.exchangeable_p(refs[:1], refs[1:4]) is None)


def task_leaves():
    """The task-stack workload reads every profile for its samples of a task
    running: a thread stack holding a coroutine of the workload; a task
    stack whose own frames (innermost of its innermost task marker) hold a
    coroutine or function of the workload — not CPython's task being
    stepped, whose own frames are the event loop's, nor frameproof's
    "<task step>" (counted apart)."""
    keep = rp.task_keep("asyncio-tasks")
    got = rp.leaves.Leaves(keep)
    loop = [("runners.py", "Runner.run"), ("events.py", "Handle._run")]
    got.add(loop + [("asyncio_tasks.py", "task"), ("asyncio_tasks.py", "handle"), ("asyncio_tasks.py", "digest")])
    got.add(loop)                                                    # the loop, no task running
    got.add([("<task>", "Task-1"), ("asyncio_tasks.py", "main"), ("<task>", "Task-2")] + loop)   # CPython, stepping
    got.add([("<task>", "Task-1"), ("asyncio_tasks.py", "main"), ("<task>", "Task-9"),
             ("asyncio_tasks.py", "handle"), ("asyncio_tasks.py", "score")])
    got.add([("<task>", "Task-1"), ("asyncio_tasks.py", "main"), ("<task>", "Task-9"),
             ("asyncio_tasks.py", "handle"), ("tasks.py", "sleep"), ("<task>", "<task step>")], 3)
    got.add([("<task>", "Task-1"), ("asyncio_tasks.py", "main"), ("<task>", "Task-15"),
             ("asyncio_tasks.py", "build")], 2)                      # CPython, the task's coroutines cut off
    got.add([("asyncio_tasks.py", "build")])                         # a thread stack with no coroutine: not a task's
    want = {("asyncio_tasks.py", "digest"): 1, ("asyncio_tasks.py", "score"): 1, ("asyncio_tasks.py", "build"): 2}
    check("the task-stack workload keeps the samples of a task running, by their own frames",
          (dict(got.counts), got.left_out, got.stepped) == (want, 3, 3),
          f"{dict(got.counts)}, left out {got.left_out}, stepped {got.stepped}")


def main():
    run_order()
    merged_results()
    exchangeable()
    task_leaves()
    frameproof = os.path.abspath(sys.argv[1])
    name = f"{INTERPRETER} {WORKLOAD}: the verdict fails the {MUTANT} sampler"
    _, provisioned = rp.fpfacts.provisioned(rp.fpfacts.load())
    if INTERPRETER not in provisioned:
        skip(name, f"{INTERPRETER} is not provisioned")
        return report()
    interp = rp.Interp(provisioned[INTERPRETER])
    help_text = subprocess.run([frameproof, "record", "--help"], capture_output=True, text=True).stdout
    table = rp.profiler_table(help_text)
    mutant = next(p for p in table if p.name == MUTANT)
    why = mutant.applies(interp)
    place = rp.Place(interp)
    try:
        why = why or rp.check_workload(interp, place, WORKLOAD)
    finally:
        place.close()
    if why:
        skip(name, why)
        return report()
    ctx = accuracy_real.parse_args(["--runs", "1", "--mutant-runs", "1", "--scale", str(SCALE),
                                    "--references", str(REFERENCES), "--frameproof", frameproof])
    ctx.started = time.monotonic()
    rows = {r["profiler"]: r for r in accuracy_real.case(ctx, [table[0], mutant], INTERPRETER, interp, WORKLOAD)}
    ref, m = rows[table[0].name], rows[MUTANT]
    check(f"{INTERPRETER} {WORKLOAD}: two reference runs and a measured floor",
          ref["verdict"].startswith("reference") and ref.get("floor", 0) > 0, str(ref))
    check(name, m["verdict"].startswith("fails, as it must"),
          f"x floor {m.get('x_floor')}, TVD {m.get('tvd_mean')}, floor {m.get('floor')}, kept {m.get('kept')}, "
          f"{m.get('reason', '')}")
    return report()


if __name__ == "__main__":
    main()
