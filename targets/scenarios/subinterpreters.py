# Sub-interpreters (low-level _interpreters, or _xxsubinterpreters before
# 3.13): a thread of the main interpreter runs code in a sub-interpreter,
# which blocks in os.read() three calls deep, while the main thread and a
# worker park.  Ground truth covers main-interpreter threads only: the
# sub-interpreter thread is not parked and its stack is not reported (it does
# not appear in all_threads either, which lists threading.enumerate(); its
# thread is the "sub-runner" thread, which does).  A last checkpoint comes
# after the sub-interpreter has been destroyed.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt
import threading

try:
    import _interpreters as interpreters
except ImportError:
    import _xxsubinterpreters as interpreters

fpgt.start("subinterpreters")

ready_r, ready_w = os.pipe()
go_r, go_w = os.pipe()
SUB_CODE = """
import os

def sub_leaf():
    os.write({ready}, b"r")
    os.read({go}, 1)

def sub_middle():
    sub_leaf()

def sub_top():
    sub_middle()

sub_top()
""".format(ready=ready_w, go=go_r)

iid = interpreters.create()
failure = []


def run_sub():
    try:
        result = interpreters.run_string(iid, SUB_CODE)
        if result is not None:
            failure.append(result)
    except Exception as e:
        failure.append(e)
        os.write(ready_w, b"!")


def worker():
    fpgt.park("sub-running", 2)


runner = fpgt.thread(run_sub, name="sub-runner")
if os.read(ready_r, 1) != b"r":
    fpgt.fail("sub-interpreter failed: %r" % failure)
w = fpgt.thread(worker, name="main-interp-worker")
fpgt.park("sub-running", 2)
w.join()
os.write(go_w, b"g")
runner.join()
if failure:
    fpgt.fail("sub-interpreter failed: %r" % failure)
interpreters.destroy(iid)
fpgt.park("sub-destroyed")
fpgt.done()
