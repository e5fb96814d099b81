"""fixed_work.py — a fixed amount of CPU-bound Python work, timed from
inside: calls of short and long functions, a generator, allocation and a
sort, in THREADS threads (default 1: the main thread alone) each doing
ROUNDS rounds.  Prints one JSON line on stdout: {"seconds": wall time of
the work, "threads": N, "cpu_s": CPU time the work threads ran, "waited_s":
time they were ready to run but waited for a CPU} — the last two summed over
the work threads, from the kernel's /proc/thread-self/schedstat (null where
it cannot be read): a sampler that takes a thread's CPU to read it shows as
waited time, which the machine's changing speed does not move.
usage: fixed_work.py ROUNDS [THREADS]"""
import json
import sys
import threading
import time


def leaf(x):
    return x * 3 + 1


def short_chain(x):
    return leaf(x) ^ leaf(x + 1)


def numbers(n):
    for i in range(n):
        yield i * i


def long_piece(n):
    total = 0
    for v in numbers(n):
        total += short_chain(v)
    return total


def one_round():
    data = [(i * 7919) % 1009 for i in range(2000)]
    data.sort(key=lambda v: -v)
    words = {str(i): i for i in range(500)}
    return long_piece(3000) + sum(words.values()) + data[0]


def schedstat():
    """(ns run on a CPU, ns waited on a run queue) of the calling thread,
    or None."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            ran, waited = f.read().split()[:2]
        return int(ran), int(waited)
    except (OSError, ValueError):
        return None


def work(rounds, account):
    before = schedstat()
    for _ in range(rounds):
        one_round()
    after = schedstat()
    account.append((after[0] - before[0], after[1] - before[1]) if before and after else None)


def main():
    rounds = int(sys.argv[1])
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    account = []   # (ran, waited) ns of each work thread
    start = time.perf_counter()
    if threads == 1:  # in the main thread: one thread with Python frames
        work(rounds, account)
    ts = [threading.Thread(target=work, args=(rounds, account)) for _ in range(threads if threads > 1 else 0)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    seconds = time.perf_counter() - start
    known = None not in account
    print(json.dumps({"seconds": seconds, "threads": threads,
                      "cpu_s": sum(a[0] for a in account) / 1e9 if known else None,
                      "waited_s": sum(a[1] for a in account) / 1e9 if known else None}), flush=True)


if __name__ == "__main__":
    main()
