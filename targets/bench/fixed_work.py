"""fixed_work.py — a fixed amount of CPU-bound Python work, timed from
inside: calls of short and long functions, a generator, allocation and a
sort, in THREADS threads (default 1: the main thread alone) each doing
ROUNDS rounds.  Prints one
JSON line {"seconds": wall time of the work, "threads": N} on stdout.
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


def work(rounds):
    for _ in range(rounds):
        one_round()


def main():
    rounds = int(sys.argv[1])
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    start = time.perf_counter()
    if threads == 1:  # in the main thread: one thread with Python frames
        work(rounds)
    ts = [threading.Thread(target=work, args=(rounds,)) for _ in range(threads if threads > 1 else 0)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print(json.dumps({"seconds": time.perf_counter() - start, "threads": threads}), flush=True)


if __name__ == "__main__":
    main()
