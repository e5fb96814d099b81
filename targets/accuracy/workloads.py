"""workloads.py — targets of the statistical accuracy run (ci/accuracy):
each workload runs for SECONDS and accounts, from inside, the wall time
each of its threads spends in each stack.  A profile of the run is then
compared with that truth.

usage: workloads.py WORKLOAD SECONDS TRUTH_PATH [SEED [UNIT_US]]

Every thread does its work below a frame of the workload's own function
(its anchor: the workload's name, or `mixed` for each thread of `threads`);
the work itself is an inline loop in the innermost function of a known
stack, timed with time.perf_counter_ns() around the loop and added to that
stack's account.  A stack is named by the functions below the anchor,
innermost last ("a1;a2;leaf_a"); time inside the anchor outside every
account (the loop that picks the next piece, calls, returns, the
accounting itself) is "(run)".  Pieces of work have
random lengths (a seeded generator) so that no sampling period lines up
with them: a unit of work lasts UNIT_US microseconds (default 1000),
calibrated at start-up on the interpreter at hand, and a piece is 0.5 to
1.5 times its weight in units.  At the end TRUTH_PATH gets one JSON document:
{"workload": W, "anchor": A, "threads": [{"role": R, "native_id": N,
"run_ns": T, "stacks": {"a1;a2;leaf_a": ns, ..., "(run)": ns}}]}.

Workloads (the names of the `ci/accuracy` table):
  alternating  two chains of the same depth, a1->a2->leaf_a 3x the work of b1->b2->leaf_b
  nested       outer() works, then calls inner(), which works 1.5x as long
  shared_leaf  x->leaf and y->leaf: one leaf under two parents, 2:1
  generator    consume() works between values; the generator's own frame
               works to produce each one (1:2)
  threads      four threads (the main one included), each splitting its
               time between leaf_a and leaf_b in a different ratio
  syscalls     crunch() works for a fiftieth of a unit, then syscall()
               makes one short system call (getppid): a stop asked from
               another CPU lands at the next system call when that comes
               first, so a sampler that stops the target from afar shows
               syscall() far above its share of the time
"""
import functools
import json
import os
import random
import sys
import threading
import time

DEFAULT_UNIT_US = 1000.0
CALIBRATION_ITERATIONS = 200000
PIECE_MIN, PIECE_MAX = 0.5, 1.5   # a piece is UNIT * weight * uniform(PIECE_MIN, PIECE_MAX) iterations
THREADS = 4
THREAD_SHARES = (0.2, 0.4, 0.6, 0.8)   # share of leaf_a's pieces in each thread of `threads`

now = time.perf_counter_ns


class Account:
    def __init__(self, role):
        self.role = role
        self.native_id = threading.get_native_id()
        self.stacks = {}
        self.run_ns = 0

    def add(self, stack, ns):
        self.stacks[stack] = self.stacks.get(stack, 0) + ns

    def document(self):
        stacks = dict(self.stacks)
        stacks["(run)"] = self.run_ns - sum(self.stacks.values())
        return {"role": self.role, "native_id": self.native_id, "run_ns": self.run_ns, "stacks": stacks}


UNIT = 1   # loop iterations of one unit of work, set by calibrate()


def calibrate(unit_us):
    """Loop iterations that take unit_us microseconds here (best of three)."""
    best = None
    for _ in range(3):
        t = now()
        for _ in range(CALIBRATION_ITERATIONS):
            pass
        ns = now() - t
        best = ns if best is None else min(best, ns)
    return max(1, int(CALIBRATION_ITERATIONS * unit_us * 1000 / max(best, 1)))


def iterations(rng, weight):
    return int(UNIT * weight * rng.uniform(PIECE_MIN, PIECE_MAX))


# -- alternating ----------------------------------------------------------
# The chains are written out, not made by a factory: each function must be
# its own code object with its own name, as the profile shows it.
def leaf_a(acc, n):
    t = now()
    for _ in range(n):
        pass
    acc.add("a1;a2;leaf_a", now() - t)


def a2(acc, n):
    leaf_a(acc, n)


def a1(acc, n):
    a2(acc, n)


def leaf_b(acc, n):
    t = now()
    for _ in range(n):
        pass
    acc.add("b1;b2;leaf_b", now() - t)


def b2(acc, n):
    leaf_b(acc, n)


def b1(acc, n):
    b2(acc, n)


def alternating(acc, rng, deadline):
    while now() < deadline:
        if rng.random() < 0.5:
            a1(acc, iterations(rng, 3))
        else:
            b1(acc, iterations(rng, 1))


# -- nested ---------------------------------------------------------------
def inner(acc, n):
    t = now()
    for _ in range(n):
        pass
    acc.add("outer;inner", now() - t)


def outer(acc, rng):
    n = iterations(rng, 1)
    t = now()
    for _ in range(n):
        pass
    acc.add("outer", now() - t)
    inner(acc, iterations(rng, 1.5))


def nested(acc, rng, deadline):
    while now() < deadline:
        outer(acc, rng)


# -- shared_leaf ----------------------------------------------------------
def leaf(acc, parent, n):
    t = now()
    for _ in range(n):
        pass
    acc.add(parent + ";leaf", now() - t)


def x(acc, n):
    leaf(acc, "x", n)


def y(acc, n):
    leaf(acc, "y", n)


def shared_leaf(acc, rng, deadline):
    while now() < deadline:
        if rng.random() < 0.5:
            x(acc, iterations(rng, 2))
        else:
            y(acc, iterations(rng, 1))


# -- generator ------------------------------------------------------------
def produce(acc, rng, deadline):
    while now() < deadline:
        n = iterations(rng, 2)
        t = now()
        for _ in range(n):
            pass
        acc.add("consume;produce", now() - t)
        yield n


def consume(acc, rng, deadline):
    for _ in produce(acc, rng, deadline):
        n = iterations(rng, 1)
        t = now()
        for _ in range(n):
            pass
        acc.add("consume", now() - t)


def generator(acc, rng, deadline):
    consume(acc, rng, deadline)


# -- syscalls -------------------------------------------------------------
SYSCALL_PIECE = 1 / 50   # crunch()'s weight in units: 20 us at the default unit


def crunch(acc, n):
    t = now()
    for _ in range(n):
        pass
    acc.add("crunch", now() - t)


def syscall(acc):
    t = now()
    os.getppid()
    acc.add("syscall", now() - t)


def syscalls(acc, rng, deadline):
    while now() < deadline:
        crunch(acc, iterations(rng, SYSCALL_PIECE))
        syscall(acc)


# -- threads --------------------------------------------------------------
def mixed(acc, rng, deadline, share):
    while now() < deadline:
        if rng.random() < share:
            a1(acc, iterations(rng, 1))
        else:
            b1(acc, iterations(rng, 1))


WORKLOADS = {"alternating": alternating, "nested": nested, "shared_leaf": shared_leaf, "generator": generator,
             "syscalls": syscalls}


def run(acc, body, rng, deadline):
    t = now()
    body(acc, rng, deadline)
    acc.run_ns = now() - t


def main():
    global UNIT
    name, seconds, truth_path = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    seed = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    unit_us = float(sys.argv[5]) if len(sys.argv) > 5 else DEFAULT_UNIT_US
    UNIT = calibrate(unit_us)
    deadline = now() + int(seconds * 1e9)
    if name == "threads":
        accs = [Account(f"t{i}") for i in range(THREADS)]
        workers = [threading.Thread(target=lambda i=i: (setattr(accs[i], "native_id", threading.get_native_id()),
                                                        run(accs[i], functools.partial(mixed, share=THREAD_SHARES[i]),
                                                            random.Random(seed * THREADS + i), deadline)))
                   for i in range(1, THREADS)]
        for w in workers:
            w.start()
        run(accs[0], functools.partial(mixed, share=THREAD_SHARES[0]), random.Random(seed * THREADS), deadline)
        for w in workers:
            w.join()
    elif name in WORKLOADS:
        accs = [Account("t0")]
        run(accs[0], WORKLOADS[name], random.Random(seed), deadline)
    else:
        sys.exit(f"workloads.py: unknown workload {name!r} (one of {', '.join(list(WORKLOADS) + ['threads'])})")
    with open(truth_path, "w", encoding="utf-8") as f:
        anchor = "mixed" if name == "threads" else name
        json.dump({"workload": name, "anchor": anchor, "unit_us": unit_us, "unit_iterations": UNIT,
                   "threads": [a.document() for a in accs]}, f)


if __name__ == "__main__":
    main()
