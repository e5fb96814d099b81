"""Accuracy of `frameproof record --async` (TAP).
usage: test_record_async_accuracy.py FRAMEPROOF_BINARY

A task stack's innermost frames are its thread's, so where a task runs the
leaf functions of an async profile are those of a thread-stack profile.
For CPython 3.14 and 3.15 (not provisioned: skipped; the debug builds run
the same work several times slower and are left out),
targets/accuracy/real/asyncio_tasks.py (40 tasks whose stacks change every
few tens of microseconds) is recorded RUNS times by the reference,
`record --blocking --realtime` (every thread stopped, held where the tick
found it), keeping the samples whose stack holds one of the workload's
coroutines (a task running), and RUNS times by `record --async`, leaving
out the samples of a task being stepped (leaf "<task step>").  The mean
distance (total variation) of the async profiles' leaf distributions from
the reference's must stay within BOUND times the reference's own
run-to-run distance (its floor; never below what sampling noise alone
gives at its sample size).

Mutant, run by hand (2026-12-04, 3.15): a build that gives a task being
stepped its waiting chain with no "<task step>" over it (asyncio's sleep
then takes that time) measured 0.17 against a floor of 0.036 (4.7x)."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "targets", "async"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "targets", "accuracy"))
from tap_results import check, report, skip  # noqa: E402
import asyncgraph  # noqa: E402  (the interpreters, their commands)
import compare  # noqa: E402  (tvd, noise_floor)

FP = os.path.abspath(sys.argv[1])
WORKLOAD = os.path.join(HERE, "..", "..", "targets", "accuracy", "real", "asyncio_tasks.py")
COROUTINES = {"task", "handle", "fetch"}   # asyncio_tasks.py's coroutines: a sample in one is a task's
STEP = ("<task>", "<task step>")
IDS = ("3.14", "3.15")
SCALE = "4"      # about 8 s of work on 3.15
RATE = "200"
RUNS = 2
BOUND = 2.0      # seen: 0.56-0.94 (3.15, 2026-12-04); the mutant 4.7
TIMEOUT = 300


def samples(path):
    """Every sample's frames, (file basename, plain function) innermost last."""
    frames, stacks, out = {}, {}, []
    with open(path, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            if r["type"] == "frame":
                frames[r["id"]] = (os.path.basename(r["file"]), r["function"].rsplit(".", 1)[-1])
            elif r["type"] == "stack":
                parent = stacks[r["parent"]] if r["parent"] is not None else ()
                stacks[r["id"]] = parent + (frames[r["frame"]],)
            elif r["type"] == "sample":
                out.append(stacks[r["stack"]])
    return out


def distribution(stacks):
    counts = {}
    for s in stacks:
        counts[s[-1]] = counts.get(s[-1], 0) + 1
    n = sum(counts.values())
    return {k: v / n for k, v in counts.items()}, n


def of_tasks(stacks):
    """Reference samples of a running task: a frame of one of the workload's coroutines."""
    return [s for s in stacks if any(f[0] == "asyncio_tasks.py" and f[1] in COROUTINES for f in s)]


def unstepped(stacks):
    return [s for s in stacks if s[-1] != STEP]


def record(entry, dest, inside, name, flags):
    out = os.path.join(dest, name)
    argv = [FP, "record", "--no-progress", "--format", "json", "--rate", RATE, "-o", out] + flags + ["--"] + \
        asyncgraph.command(entry, [inside + "/asyncio_tasks.py", SCALE])
    r = subprocess.run(argv, capture_output=True, timeout=TIMEOUT, env=asyncgraph.environment(entry),
                       stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        raise RuntimeError("%s exited %d: %s" % (" ".join(flags), r.returncode, r.stderr.decode()[-200:]))
    return samples(out)


def judge(ident, entry):
    dest, inside = asyncgraph.install(entry.get("root", "/"), (WORKLOAD,))
    os.chmod(dest, 0o777)
    try:
        refs = [distribution(of_tasks(record(entry, dest, inside, "ref%d.jsonl" % i, ["--blocking", "--realtime"])))
                for i in range(RUNS)]
        asyncs = [distribution(unstepped(record(entry, dest, inside, "async%d.jsonl" % i, ["--async"])))
                  for i in range(RUNS)]
    finally:
        subprocess.run(["rm", "-rf", dest])
    # The floor: the reference's own run-to-run distance, and never less
    # than the distance sampling noise alone gives at its sample size (two
    # runs can agree by chance).
    floor = max(compare.tvd(refs[0][0], refs[1][0]), compare.noise_floor(refs[0][0], refs[0][1]))
    dists = [compare.tvd(a[0], r[0]) for a in asyncs for r in refs]
    mean = sum(dists) / len(dists)
    check("%s: record --async's leaves within %.1fx the reference's floor" % (ident, BOUND),
          floor > 0 and mean <= BOUND * floor,
          "mean distance %.3f, floor %.3f (%.2fx); samples: reference %s, async %s"
          % (mean, floor, mean / floor if floor else float("inf"), [r[1] for r in refs], [a[1] for a in asyncs]))
    print("# %s: mean distance %.3f, floor %.3f (%.2fx)" % (ident, mean, floor, mean / floor if floor else 0))


def main():
    _, every = asyncgraph.interpreters()
    for ident, entry in every:
        if ident not in IDS:
            continue
        if entry is None:
            skip(ident, "not provisioned")
            continue
        try:
            judge(ident, entry)
        except (RuntimeError, OSError, ValueError, KeyError, subprocess.TimeoutExpired) as e:
            check("%s: setup" % ident, False, "%s: %s" % (type(e).__name__, e))
    report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
