# Eight worker threads parked at different recursion depths together with the
# main thread; then the workers park again one level shallower.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt

fpgt.start("many_threads")
N = 8


def descend(n, label):
    if n == 0:
        fpgt.park(label, N + 1)
        return
    descend(n - 1, label)


def worker(i):
    descend(i * 3, "all")
    descend(i, "again")


threads = [fpgt.thread(worker, i, name="worker-%d" % i) for i in range(N)]
fpgt.park("all", N + 1)
fpgt.park("again", N + 1)
for t in threads:
    t.join()
fpgt.done()
