# One generator (and one coroutine) started in a worker thread and resumed
# in the main thread: the suspended frame moves between threads.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt

fpgt.start("generator_cross_thread")


def wandering():
    yield "started"
    fpgt.park("resumed-elsewhere")
    yield "done"


async def wandering_coro():
    await Suspend()
    fpgt.park("coro-resumed-elsewhere")


class Suspend:
    def __await__(self):
        yield "suspended"


box = {}


def starter():
    g = wandering()
    next(g)
    c = wandering_coro()
    c.send(None)
    box["gen"], box["coro"] = g, c
    fpgt.park("worker-holds-both")


t = fpgt.thread(starter, name="starter")
t.join()
next(box["gen"])
try:
    box["coro"].send(None)
except StopIteration:
    pass
fpgt.done()
