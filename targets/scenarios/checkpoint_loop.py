# Thirty checkpoints in a row reusing two labels, at depths 0..29, alternating
# between the main thread alone and the main thread plus a worker.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt

fpgt.start("checkpoint_loop")


def descend(n, parties):
    if n:
        return descend(n - 1, parties)
    fpgt.park("solo" if parties == 1 else "pair", parties)


def worker():
    for i in range(1, 30, 2):
        descend(29 - i, 2)


t = fpgt.thread(worker, name="loop-worker")
for i in range(30):
    descend(i, 1 if i % 2 == 0 else 2)
t.join()
fpgt.done()
