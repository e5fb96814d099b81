# greenlet stacks: parked inside a greenlet, in one switched into from it,
# back in the first after the switch back, in a greenlet whose parent is a
# greenlet, in one whose run is a generator's __next__ (3.12+), in the main
# greenlet with others suspended, and two threads each inside a greenlet of
# its own.  Needs greenlet: index.json's "modules" runs it only on the
# interpreters whose manifest entry lists it (provisioning imports it).
# On 3.11 a thread whose whole Python stack is one generator resumed from C
# is never sampled (rule 5 of the live checks, docs/design.md), so the
# generator checkpoint is left out there.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt

import threading

import greenlet

fpgt.start("greenlets")


def b_work():
    fpgt.park("switched-into")
    first.switch()


def b_run():
    b_work()


def c_run():
    fpgt.park("nested-parent")


def inner_a():
    fpgt.park("in-greenlet")
    second.switch()
    fpgt.park("back-in-first")
    greenlet.greenlet(c_run, parent=greenlet.getcurrent()).switch()


def outer_a():
    inner_a()


def ticks():
    fpgt.park("generator-run")
    yield 1


def main_again():
    fpgt.park("main-greenlet")


def thread_greenlet(label):
    fpgt.park(label, 2)


def in_thread():
    greenlet.greenlet(thread_greenlet).switch("two-threads")


first = greenlet.greenlet(outer_a)
second = greenlet.greenlet(b_run)
first.switch()
if sys.version_info >= (3, 12):
    greenlet.greenlet(ticks().__next__).switch()
main_again()
worker = threading.Thread(target=in_thread, name="greenlet-worker")
worker.start()
greenlet.greenlet(thread_greenlet).switch("two-threads")
worker.join()
fpgt.done()
