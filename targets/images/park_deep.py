# park_deep.py — a memory-image target whose main thread parks under ~1500
# Python frames of two alternating functions (several data-stack chunks),
# while one worker parks in a lambda called from a list comprehension.
# Prints "ready" on stdout once everything is parked; exits by itself after
# PARK_SECONDS.
import _thread
import sys
import threading
import time

DEPTH = 1500
SETTLE_SECONDS = 0.3
PARK_SECONDS = 600
gate = threading.Lock()
gate.acquire()
ready = threading.Event()


def even(n):
    if n == 0:
        ready.wait()
        time.sleep(SETTLE_SECONDS)
        print("ready", flush=True)
        gate.acquire(timeout=PARK_SECONDS)
        return 0
    return odd(n - 1) + 1


def odd(n):
    return even(n - 1) + 1


def worker():
    [(lambda: (ready.set(), gate.acquire()))() for _ in range(1)]


if __name__ == "__main__":
    sys.setrecursionlimit(DEPTH * 4)
    _thread.start_new_thread(worker, ())
    even(DEPTH)
