# Parked threads next to threads that keep running Python code (not parked,
# so not in "threads" but in "all_threads"); in free-threaded builds they
# run truly in parallel with the sampler.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt
import threading

fpgt.start("busy_neighbours")
stop = threading.Event()
started = threading.Barrier(4)


def spin_leaf(counter):
    while not stop.is_set():
        for _ in range(1000):
            counter += 1
    return counter


def spinner(depth):
    if depth:
        return spinner(depth - 1)
    started.wait()
    return spin_leaf(0)


def parked_worker():
    started.wait()
    fpgt.park("neighbours", 2)
    fpgt.park("neighbours-again", 2)


spinners = [fpgt.thread(spinner, d, name="spinner-%d" % d) for d in (0, 3)]
worker = fpgt.thread(parked_worker, name="parked-worker")
started.wait()
fpgt.park("neighbours", 2)
fpgt.park("neighbours-again", 2)
stop.set()
for t in spinners + [worker]:
    t.join()
fpgt.done()
