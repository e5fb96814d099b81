# Generator frames: parked inside a generator driven by a for loop, by next()
# from another generator, after a send(), and in a worker thread.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt

fpgt.start("generators")


def counter(n, label):
    for i in range(n):
        if i == n - 1:
            fpgt.park(label)
        yield i


def doubler(gen):
    while True:
        try:
            v = next(gen)
        except StopIteration:
            return
        yield v * 2


def echo():
    total = 0
    while True:
        got = yield total
        if got is None:
            return
        total += got
        if total == 6:
            fpgt.park("after-send")


def in_thread():
    for _ in counter(2, "thread-gen"):
        pass


for _ in counter(3, "for-loop"):
    pass
list(doubler(counter(2, "next-chain")))
e = echo()
next(e)
e.send(1)
e.send(5)
e.close()
t = fpgt.thread(in_thread, name="gen-thread")
t.join()
fpgt.done()
