# greenlets.py — a live target that spends most of its time inside
# greenlets other than the main one (docs/greenlet.md): the main greenlet
# spins WORK * 3/4 loop iterations and switches to worker_a, which spins
# WORK and switches to worker_b, which spins WORK and switches back to
# main, for ever (or SECONDS).  WORK sets how often the thread switches
# greenlets (2000: every ~50 us; 50: every ~2 us on a 2026 laptop core).
# With `park`, it first parks for good inside a greenlet (parked ->
# deeper -> time.sleep), to dump a greenlet that is not running code.
# Prints its pid on stdout.
# usage: greenlets.py [busy|park] [SECONDS] [WORK]
import os
import sys
import time

import greenlet


def spin(n):
    x = 0
    for i in range(n):
        x += i
    return x


def worker_a():
    while True:
        spin(WORK)
        gb.switch()


def worker_b():
    while True:
        spin(WORK)
        main.switch()


def parked():
    def deeper():
        time.sleep(1000)
    deeper()


mode = sys.argv[1] if len(sys.argv) > 1 else "busy"
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 1e18
WORK = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
main = greenlet.getcurrent()
ga = greenlet.greenlet(worker_a)
gb = greenlet.greenlet(worker_b)
print(os.getpid(), flush=True)
if mode == "park":
    greenlet.greenlet(parked).switch()
end = time.time() + seconds
while time.time() < end:
    spin(WORK * 3 // 4)
    ga.switch()
