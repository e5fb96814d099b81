# The main thread is not parked (it waits in Thread.join) while three
# workers park; later the main thread parks alone after they exited.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt
import threading

fpgt.start("main_waits")
fpgt.expect("workers", 3)


def leaf(label):
    fpgt.park(label)


def worker(k):
    if k == 0:
        leaf("workers")
    elif k == 1:
        [leaf("workers") for _ in range(1)]
    else:
        (lambda: leaf("workers"))()


threads = [fpgt.thread(worker, k, name="w%d" % k) for k in range(3)]
for t in threads:
    t.join()
fpgt.park("main-alone")
fpgt.done()
