"""Target of test_record: for SECONDS seconds the main thread and one
thread named "worker" each alternate hot() (three units of work) and
cold() (one unit), both through spin(); then it exits 0."""
import sys
import threading
import time

SECONDS = float(sys.argv[1])
UNIT = 10000


def spin(n):
    x = 0
    for i in range(n):
        x += i
    return x


def hot():
    return spin(3 * UNIT)


def cold():
    return spin(UNIT)


def run():
    end = time.monotonic() + SECONDS
    while time.monotonic() < end:
        hot()
        cold()


worker = threading.Thread(target=run, name="worker")
worker.start()
run()
worker.join()
