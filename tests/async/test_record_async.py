"""Live tests of `frameproof record --async` (TAP).
usage: test_record_async.py FRAMEPROOF_BINARY

For every interpreter of the provisioning matrix and its JIT ids (not
provisioned: skipped), targets/async/owner_swap.py runs one task,
"shared", whose awaiter keeps moving between two owner tasks; while owner-a
awaits it, it spins in spin_a(), while owner-b does, in spin_b() (its JOIN).
Three recordings of RECORD_S seconds each, --format json:

- --async (running mode): every task stack must be one the program can
  have at that instant (the root an owner's marker, then owner(), asyncio's
  sleep, shared's marker and shared_loop, and spin_a only under owner-a,
  spin_b only under owner-b; or shared alone, caught between leaving one
  owner and joining the other), both spins seen, most ticks kept;
- --async --inject-fault stale-awaiter (the task stacks joined through the
  previous read's awaiter edges): the same check must find wrong stacks —
  the mutant that proves it can fail;
- --async --async-mode all: every read gives the main task, the owner that
  awaits nothing and shared joined to the other owner (or, caught between
  owners, both owners and shared alone), once each — but for a read whose
  running task record left out because its thread's walk failed (its chain
  missing, every stack there right): no more such reads than the summary's
  "lost: N running tasks";
- --async --max-depth 4 (the loop thread deeper than that): every read
  succeeds, the running task counted lost, no task stack kept.

The target must run on afterwards with no thread stopped or traced; a
program that imported asyncio and made no task gives no task stack and
counts its thread as running none (every read an empty graph).  On
3.11-3.13 the awaiter moves between the owners' TaskGroups, what those
versions record of an awaiter (owner_swap.py)."""
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "targets", "async"))
from tap_results import check, report, skip  # noqa: E402
import asyncgraph  # noqa: E402  (starting targets; the interpreters)
import owner_swap  # noqa: E402  (its JOIN and problem(); nothing runs on import)

FP = os.path.abspath(sys.argv[1])
TARGET = os.path.join(HERE, "..", "..", "targets", "async", "owner_swap.py")
JOIN, OWNERS = owner_swap.JOIN, owner_swap.OWNERS
RECORD_S = 2
RATE = 100
SHALLOW_DEPTH = 4     # deeper than every task's coroutine chain, shallower than the loop thread's stack
KEPT_MIN = 0.5        # running mode: least share of ticks with a task stack (0.93-0.97 seen, 3.15, 2026-12-04)
SPIN_MIN = 0.1        # least share of the kept stacks inside each spin function
TIMEOUT = 60
DETACH_GRACE_S = 2.0


def stacks_by_tick(path):
    """{t_ns: [stack as a tuple of function names, root first]} of a json profile, and its header."""
    frames, stacks, ticks, header = {}, {}, defaultdict(list), None
    with open(path) as f:
        for line in f:
            d = json.loads(line)
            kind = d["type"]
            if kind == "header":
                header = d
            elif kind == "frame":
                frames[d["id"]] = d["function"]
            elif kind == "stack":
                stacks[d["id"]] = (d["parent"], d["frame"])
            elif kind == "sample":
                names, s = [], d["stack"]
                while s is not None:
                    parent, frame = stacks[s]
                    names.append(frames[frame])
                    s = parent
                ticks[d["t_ns"]].append(tuple(reversed(names)))
    return ticks, header


def shared_problem(stack):
    """What is wrong with a stack of the task shared (root first), or None."""
    p = owner_swap.problem(stack)
    return "%s: %s" % p if p else None


def running_problems(ticks):
    """Problems of a running-mode profile: (problems, stacks, spin counts)."""
    problems, n, spins = [], 0, defaultdict(int)
    for t, stacks in sorted(ticks.items()):
        if len(stacks) != 1:
            problems.append("%d stacks at one tick (one thread runs one task)" % len(stacks))
        for st in stacks:
            n += 1
            p = shared_problem(st)
            if p:
                problems.append(p)
            for f in st:
                if f in JOIN:
                    spins[f] += 1
    return problems, n, spins


def short_read(stacks):
    """Whether a read lacks one chain, the running task's, and has every
    other right: a read whose running task record left out (its thread's
    walk failed; record counts it in "lost: N running tasks"), with the
    tasks that await it, which are no leaves then.  Shared running: the
    main task and the owners shared did not join; the main task running:
    shared's chain and the other owner, as in a whole read."""
    main = [s for s in stacks if s[:1] == ("Task-1",)]
    alone = [s[0] for s in stacks if len(s) == 3 and s[0] in OWNERS and s[1:] == ("owner", "sleep")]
    shared = [s for s in stacks if "shared" in s]
    if len(main) + len(alone) + len(shared) != len(stacks) or len(set(alone)) != len(alone) or \
            main not in ([], [("Task-1", "main", "sleep")]) or any(shared_problem(s) for s in shared):
        return False
    if not main:
        joined = shared[0][0] if len(shared) == 1 and shared[0][0] in OWNERS else None
        return len(shared) == 1 and sorted(alone) == sorted(OWNERS - {joined})
    return not shared and 1 <= len(alone) <= 2


def all_problems(ticks):
    """Problems of an all-mode profile: every read the main task, the free
    owner and shared joined to the other (or both owners and shared alone);
    and the reads short of a left-out running task's chain (short_read),
    returned apart."""
    problems, short = [], 0
    for t, stacks in sorted(ticks.items()):
        main = [s for s in stacks if s[:1] == ("Task-1",)]
        alone = sorted(s[0] for s in stacks if len(s) == 3 and s[0] in OWNERS and s[1:] == ("owner", "sleep"))
        shared = [s for s in stacks if "shared" in s]
        if main != [("Task-1", "main", "sleep")] or len(shared) != 1 or len(main) + len(alone) + 1 != len(stacks):
            if short_read(stacks):
                short += 1
                continue
            problems.append("read at %d ns: %s" % (t, " | ".join(";".join(s) for s in stacks)))
            continue
        p = shared_problem(shared[0])
        joined = shared[0][0] if shared[0][0] in OWNERS else None
        want = sorted(OWNERS - {joined})
        if p or alone != want:
            problems.append(p or "free owners %s with shared under %s" % (alone, joined))
    return problems, short


def record(pid, out, extra):
    r = subprocess.run([FP, "record", "--async", "--pid", str(pid), "--duration", str(RECORD_S), "--rate", str(RATE),
                        "--format", "json", "-o", out, "--no-progress"] + extra,
                       capture_output=True, timeout=TIMEOUT)
    return r.returncode, r.stderr.decode(errors="replace")


def recordings(ident, entry):
    dest = proc = None
    tmp = tempfile.mkdtemp(prefix="fp-record-async-")
    try:
        dest, inside = asyncgraph.install(entry.get("root", "/"), files=(TARGET,))
        proc, _ = asyncgraph.start(entry, inside + "/owner_swap.py", TIMEOUT)
        out = os.path.join(tmp, "running.jsonl")
        status, err = record(proc.pid, out, [])
        check("%s: record --async exits 0" % ident, status == 0, err.strip()[-300:])
        if status == 0:
            ticks, header = stacks_by_tick(out)
            problems, n, spins = running_problems(ticks)
            attempts = json.loads(open(out).read().splitlines()[-1]).get("attempts", 0)
            check("%s: running mode: the header says async running" % ident, header.get("async") == "running",
                  "header %s" % header)
            check("%s: running mode: every task stack one the program can have" % ident, not problems,
                  "%d of %d wrong, first: %s" % (len(problems), n, "; ".join(problems[:3])))
            check("%s: running mode: task stacks on %.0f %% of the ticks or more, both spins seen" % (ident,
                  100 * KEPT_MIN), attempts and n >= KEPT_MIN * attempts and
                  all(spins[f] >= SPIN_MIN * n for f in JOIN),
                  "%d stacks of %d reads, spins %s" % (n, attempts, dict(spins)))
        out = os.path.join(tmp, "stale.jsonl")
        status, err = record(proc.pid, out, ["--inject-fault", "stale-awaiter"])
        problems, n = [], 0
        if status == 0:
            problems, n, _ = running_problems(stacks_by_tick(out)[0])
        check("%s: mutant: stacks joined through the previous read's awaiters are found wrong" % ident,
              status == 0 and problems, "status %d, %d stacks, none wrong; %s" % (status, n, err.strip()[-200:]))
        out = os.path.join(tmp, "all.jsonl")
        status, err = record(proc.pid, out, ["--async-mode", "all"])
        problems, reads, short = ["status %d: %s" % (status, err.strip()[-200:])], 0, 0
        if status == 0:
            ticks, _ = stacks_by_tick(out)
            (problems, short), reads = all_problems(ticks), len(ticks)
        m = re.search(r"lost: (\d+) running tasks", err)
        lost = int(m.group(1)) if m else 0
        check("%s: all mode: every read gives each task chain once" % ident, reads and not problems,
              "%d of %d reads wrong, first: %s" % (len(problems), reads, "; ".join(problems[:2])))
        check("%s: all mode: a read short of a chain only for a running task counted lost" % ident, short <= lost,
              "%d reads short of a chain, %d running tasks counted lost" % (short, lost))
        shallow(ident, proc.pid, os.path.join(tmp, "shallow.jsonl"))
        ok, detail = asyncgraph.resumed(proc, DETACH_GRACE_S)
        check("%s: the target runs on, no thread left stopped or traced" % ident, ok, detail)
    finally:
        asyncgraph.stop(proc, dest)
        subprocess.run(["rm", "-rf", tmp])
    no_tasks(ident, entry)


def shallow(ident, pid, out):
    """--max-depth below the event loop thread's depth: its walk fails
    on every read, the graph does not; the running task there is counted
    lost, not kept with its coroutine alone (a stack shorter than the
    truth's)."""
    status, err = record(pid, out, ["--max-depth", str(SHALLOW_DEPTH)])
    lost = re.search(r"lost: (\d+) running tasks whose thread's stack could not be walked \(.*deeper than %d"
                     % SHALLOW_DEPTH, err)
    n = sum(len(v) for v in stacks_by_tick(out)[0].values()) if status == 0 else -1
    check("%s: a thread deeper than --max-depth: its running task counted lost, no stack kept" % ident,
          status == 0 and lost and int(lost.group(1)) > 0 and n == 0,
          "status %d, %d task stacks, stderr %r" % (status, n, err[-400:]))
    # the verdict line counts them: every task stack of the run was lost
    check("%s: the summary's verdict counts the task stacks lost to the unwalked thread" % ident,
          "100.0 % of task stacks lost because their thread's stack could not be walked" in err
          and "too few to bias" not in err, "stderr %r" % err[-600:])


def no_tasks(ident, entry):
    """record --async of a program that imported asyncio and made no task
    (every read an empty graph): exit 0, no task stack, its thread counted
    as running none."""
    argv = asyncgraph.command(entry, ["-c", "import asyncio, time; time.sleep(%d)" % (2 * RECORD_S)])
    r = subprocess.run([FP, "record", "--async", "--duration", "1", "-o", "/dev/null", "--no-progress", "--"] + argv,
                       capture_output=True, timeout=TIMEOUT, env=asyncgraph.environment(entry))
    err = r.stderr.decode(errors="replace")
    left = re.search(r"threads running no task, left out: (\d+)", err)
    check("%s: a program with no task: exit 0, no task stack, its thread counted" % ident,
          r.returncode == 0 and re.search(r"graph reads gave 0 task stacks", err) and left and int(left.group(1)) > 0,
          "status %d, stderr %r" % (r.returncode, err[-400:]))


def main():
    asyncgraph.each_interpreter(recordings, "no asyncio task graph frameproof reads", check, skip,
                                graph=asyncgraph.reads_graph)
    report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
