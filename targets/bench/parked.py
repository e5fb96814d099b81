# parked.py — a parked target for ci/bench: THREADS Python threads (the main
# thread and THREADS-1 others), each recursing DEPTH calls deep in descend()
# and then blocking for good on one lock, so that every sample of it is the
# same.  Prints "ready" on stdout once every thread is parked.
# usage: parked.py THREADS DEPTH
import sys
import threading

PARK = threading.Lock()           # held by the main thread for ever
PARKED = threading.Semaphore(0)   # one release per parked non-main thread


def descend(n, at_bottom):
    if n > 1:
        return descend(n - 1, at_bottom)
    return at_bottom()


def park():
    PARKED.release()
    PARK.acquire()                # never returns: the main thread holds PARK


def main_bottom(others):
    for _ in range(others):
        PARKED.acquire()
    print("ready", flush=True)
    PARK.acquire()                # blocks for good: PARK is already held


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: parked.py THREADS DEPTH")
    threads, depth = int(sys.argv[1]), int(sys.argv[2])
    if threads < 1 or depth < 1:
        sys.exit("parked.py: THREADS and DEPTH must be at least 1")
    sys.setrecursionlimit(max(sys.getrecursionlimit(), depth + 100))
    PARK.acquire()
    for _ in range(threads - 1):
        threading.Thread(target=descend, args=(depth, park), daemon=True).start()
    descend(depth, lambda: main_bottom(threads - 1))


main()
