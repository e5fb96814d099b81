# running.py — the live target of ci/bench and ci/record-rate: THREADS
# threads (default 1, the main one included) each alternating two call
# chains of the same depth (a1 -> a2 -> a3 -> leaf and b1 -> b2 -> b3 ->
# leaf) for ever, so that their stacks change between any two samples.
# Prints "ready" on stdout after a warm-up.
# usage: running.py [THREADS]
import sys
import threading

WARMUP = 200      # rounds of both chains before "ready"
WORK = 40         # loop iterations in each leaf


def leaf(n, k):
    total = 0
    for i in range(n):
        total += i * k
    return total


def a3(n):
    return leaf(n, 3) + 1


def a2(n):
    return a3(n) + 1


def a1(n):
    return a2(n) + 1


def b3(n):
    return leaf(n, 5) + 2


def b2(n):
    return b3(n) + 2


def b1(n):
    return b2(n) + 2


def spin(ready=None):
    rounds = 0
    while True:
        a1(WORK)
        b1(WORK)
        rounds += 1
        if rounds == WARMUP and ready:
            ready()


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    for _ in range(threads - 1):
        threading.Thread(target=spin, daemon=True).start()
    spin(lambda: print("ready", flush=True))


main()
