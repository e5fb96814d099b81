"""Target of test_record: for SECONDS seconds the main thread and one
thread named "worker" each alternate hot() (three units of work) and
cold() (one unit), both through spin(); then it exits 0."""
import sys
import threading
import time

SECONDS = float(sys.argv[1])
# Short, so that each thread's 5 ms turn with the GIL spans many hot()+cold()
# cycles: with 10000, one cycle of a debug build lasted about one turn, a
# thread could wait for the GIL at the same phase each time, and in wall
# mode cold() then truly held it as long as hot() (3.14-dbg: 154 against 162).
UNIT = 1000


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
