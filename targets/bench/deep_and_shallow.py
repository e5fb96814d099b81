"""deep_and_shallow.py — the same CPU-bound work done in turn at the top of
a shallow stack and at the bottom of a deep one (DEPTH frames), ROUNDS
times each, timed from inside in the process's CPU time.  A sampler whose
ticks are spaced in wall time while each sample holds the target for a time
that grows with the stack gives the deep phase more than its share; the
truth is the share printed here.  Prints one JSON line {"shallow": s,
"deep": s} of CPU seconds on stdout.
usage: deep_and_shallow.py DEPTH ROUNDS"""
import json
import sys
import time

WORK_CALLS = 300   # calls of work() per phase
WORK_N = 200       # loop iterations per call


def work(n):
    s = 0
    for i in range(n):
        s += i
    return s


def shallow_phase():
    for _ in range(WORK_CALLS):
        work(WORK_N)


def deep(n):
    if n == 0:
        for _ in range(WORK_CALLS):
            work(WORK_N)
        return
    deep(n - 1)


def main():
    depth, rounds = int(sys.argv[1]), int(sys.argv[2])
    sys.setrecursionlimit(depth + 1000)
    spent = {"shallow": 0.0, "deep": 0.0}
    for _ in range(rounds):
        t0 = time.process_time()
        shallow_phase()
        t1 = time.process_time()
        deep(depth)
        t2 = time.process_time()
        spent["shallow"] += t1 - t0
        spent["deep"] += t2 - t1
    print(json.dumps(spent))


if __name__ == "__main__":
    main()
