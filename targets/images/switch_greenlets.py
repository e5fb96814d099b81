# switch_greenlets.py — a target for capturing a refused image
# (targets/capture_images --refused): the main greenlet and two others
# switch round without pause, so that a process stopped at a random instant
# is often in the middle of greenlet's switch, between the thread state and
# the frames it names.  It prints "ready" after a warm-up, "no greenlet" and
# exits 3 where greenlet is not installed, and exits by itself after
# RUN_SECONDS.
import sys
import time

try:
    import greenlet
except ImportError:
    print("no greenlet", flush=True)
    sys.exit(3)

WARMUP = 200
RUN_SECONDS = 600


def leaf(n):
    total = 0
    for i in range(n):
        total += i
    return total


def run_a():
    while True:
        leaf(40)
        gb.switch()


def run_b():
    while True:
        leaf(40)
        main.switch()


main = greenlet.getcurrent()
ga = greenlet.greenlet(run_a)
gb = greenlet.greenlet(run_b)
end = time.monotonic() + RUN_SECONDS
rounds = 0
while time.monotonic() < end:
    leaf(40)
    ga.switch()
    rounds += 1
    if rounds == WARMUP:
        print("ready", flush=True)
