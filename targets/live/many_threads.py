# Live: the main thread and 16 worker threads run the same code at
# different recursion depths: pad() recurses to the thread's depth, then
# alternates the chains x1 -> x2 -> leaf_x and y1 -> y2 -> leaf_y.  Lines
# carry "@tag" comments that many_threads.decl.json refers to.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import threading
import fpgt

WORKERS = 16
WARMUP = 50                       # main-thread rounds before "ready"


def leaf_x(n):                    # @leaf_x
    s = 0                         # @leaf_x
    for i in range(n):            # @leaf_x
        s += i                    # @leaf_x
    return s                      # @leaf_x


def x2(n):                        # @x2
    return leaf_x(n) + 1          # @x2 @x2-call


def x1(n):                        # @x1
    return x2(n) + 1              # @x1 @x1-call


def leaf_y(n):                    # @leaf_y
    s = 1                         # @leaf_y
    for i in range(n):            # @leaf_y
        s *= 1                    # @leaf_y
    return s                      # @leaf_y


def y2(n):                        # @y2
    return leaf_y(n) + 2          # @y2 @y2-call


def y1(n):                        # @y1
    return y2(n) + 2              # @y1 @y1-call


def pad(n, stop, ready):          # @pad
    if n > 0:                     # @pad
        return pad(n - 1, stop, ready)  # @pad @pad-self
    rounds = 0                    # @pad
    while not stop:               # @pad
        x1(30)                    # @pad @pad-x
        y1(30)                    # @pad @pad-y
        rounds += 1               # @pad
        if rounds == WARMUP and ready is not None:  # @pad
            ready.append(rounds)  # @pad
    return rounds                 # @pad


def worker(i, stop, ready):       # @worker
    return pad(i % 9, stop, ready)  # @worker @worker-pad


ready, stop = fpgt.live("many_threads")
threads = [threading.Thread(target=worker, args=(i, stop, None), name="worker-%d" % i)
           for i in range(1, WORKERS + 1)]
for t in threads:
    t.start()
worker(0, stop, ready)            # @module-worker
for t in threads:
    t.join()
fpgt.done()
