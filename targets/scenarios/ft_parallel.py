# Free-threaded builds only: eight threads compute in parallel and park
# together, five rounds in a row, each round at a different depth; the main
# thread only joins them.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt
import threading

fpgt.start("ft_parallel")
N = 8
ROUNDS = 5
barrier = threading.Barrier(N)
fpgt.expect("round", N)


def compute(n):
    total = 0
    for i in range(20000):
        total += i * n
    return total


def descend(depth):
    if depth:
        return descend(depth - 1)
    fpgt.park("round")


def worker(i):
    for r in range(ROUNDS):
        compute(i + r)
        barrier.wait()
        descend((i + r) % N)


threads = [fpgt.thread(worker, i, name="par-%d" % i) for i in range(N)]
for t in threads:
    t.join()
fpgt.done()
