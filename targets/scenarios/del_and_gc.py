# Finalisers: __del__ run by gc.collect() on a reference cycle, __del__ run
# when the last reference goes away, a weakref callback and a
# weakref.finalize callback.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt
import gc
import weakref

fpgt.start("del_and_gc")
gc.disable()


class Cyclic:
    def __init__(self):
        self.me = self

    def __del__(self):
        fpgt.park("__del__-in-gc.collect")


class Plain:
    def __del__(self):
        fpgt.park("__del__-on-decref")


class Target:
    pass


def collect():
    gc.collect()


def make_cycle():
    Cyclic()


make_cycle()
collect()


def drop():
    p = Plain()
    del p


drop()
t = Target()
r = weakref.ref(t, lambda ref: fpgt.park("weakref-callback"))
del t
t2 = Target()
weakref.finalize(t2, fpgt.park, "weakref.finalize")
del t2
fpgt.done()
