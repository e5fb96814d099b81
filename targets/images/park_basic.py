# park_basic.py — a small, deterministic target for memory-image capture
# (targets/capture_images).  It starts five threads: a ~50-frame recursion, a
# suspended generator, a coroutine, a method with a non-ASCII name and one
# inside an except block; every thread then parks on a lock and the script
# prints "ready" on stdout.  It exits by itself after PARK_SECONDS.
import _thread
import threading
import time

DEPTH = 50
SETTLE_SECONDS = 0.3   # lets every worker reach gate.acquire() after the barrier
PARK_SECONDS = 600
gate = threading.Lock()
gate.acquire()
started = threading.Barrier(6)  # five workers and main


def park():
    started.wait()
    gate.acquire()


def recurse(n):
    if n == 0:
        park()
        return 0
    return recurse(n - 1) + 1


def générateur_ünïcode():
    yield 1
    park()
    yield 2


def gen_driver():
    g = générateur_ünïcode()
    next(g)
    next(g)


async def coroutine_λ():
    park()


def coro_driver():
    c = coroutine_λ()
    try:
        c.send(None)
    except StopIteration:
        pass


def in_handler():
    try:
        raise KeyError("parked while handling this")
    except KeyError:
        park()


class Klass:
    def méthode_日本(self):
        park()


def main():
    # _thread keeps the standard library's frames (and its install path)
    # out of the parked stacks.
    workers = [(recurse, (DEPTH,)), (gen_driver, ()), (coro_driver, ()),
               (Klass().méthode_日本, ()), (in_handler, ())]
    for fn, args in workers:
        _thread.start_new_thread(fn, args)
    started.wait()
    time.sleep(SETTLE_SECONDS)
    print("ready", flush=True)
    gate.acquire(timeout=PARK_SECONDS)


if __name__ == "__main__":
    main()
