"""waiting_threads.py — a main thread that computes for 4 s (a recursive
fib, and a short-lived thread started and joined between rounds) while
three threads wait the whole time: on an Event, on a Condition (10 s
timeout) and in time.sleep(6).  Recorded in wall mode, every tick should
keep the main thread and each waiter alive then: a sampler that leaves
waiting threads out shows it as fewer samples for them than ticks
(docs/accuracy.md)."""
import threading
import time

RUN_S = 4
event = threading.Event()
cond = threading.Condition()


def wait_event():
    event.wait()


def wait_condition():
    with cond:
        cond.wait(10)


def wait_sleep():
    time.sleep(6)


def short():
    x = 0
    for i in range(2000):
        x += i


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


waiters = [threading.Thread(target=f) for f in (wait_event, wait_condition, wait_sleep)]
for t in waiters:
    t.start()
t0 = time.time()
while time.time() - t0 < RUN_S:
    fib(18)
    s = threading.Thread(target=short)
    s.start()
    s.join()
event.set()
with cond:
    cond.notify_all()
