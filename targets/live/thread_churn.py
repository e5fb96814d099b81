# Live: threads start and exit continuously (thread states and native ids
# are reused).  The main thread starts BATCH workers and joins them, again
# and again; each worker alternates the chains c1 -> c2 -> leaf_c and
# d1 -> d2 -> leaf_d a few times, then exits.  Lines carry "@tag" comments
# that thread_churn.decl.json refers to.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import threading
import fpgt

BATCH = 4                         # workers alive at a time
ROUNDS = 400                      # chain pairs per worker (a few ms)
WARMUP = 5                        # batches before "ready"


def leaf_c(n):                    # @leaf_c
    s = 0                         # @leaf_c
    for i in range(n):            # @leaf_c
        s += i                    # @leaf_c
    return s                      # @leaf_c


def c2(n):                        # @c2
    return leaf_c(n) + 1          # @c2 @c2-call


def c1(n):                        # @c1
    return c2(n) + 1              # @c1 @c1-call


def leaf_d(n):                    # @leaf_d
    s = 2                         # @leaf_d
    for i in range(n):            # @leaf_d
        s -= i                    # @leaf_d
    return s                      # @leaf_d


def d2(n):                        # @d2
    return leaf_d(n) + 2          # @d2 @d2-call


def d1(n):                        # @d1
    return d2(n) + 2              # @d1 @d1-call


def churn_worker(n):              # @churn_worker
    total = 0                     # @churn_worker
    for _ in range(ROUNDS):       # @churn_worker
        total += c1(n)            # @churn_worker @churn_worker-c
        total += d1(n)            # @churn_worker @churn_worker-d
    return total                  # @churn_worker


def spawner(ready, stop):         # @spawner
    batches = 0                   # @spawner
    while not stop:               # @spawner
        threads = []              # @spawner
        for _ in range(BATCH):    # @spawner
            t = threading.Thread(target=churn_worker, args=(40,))  # @spawner @spawner-threading
            t.start()             # @spawner @spawner-threading
            threads.append(t)     # @spawner
        for t in threads:         # @spawner
            t.join()              # @spawner @spawner-threading
        batches += 1              # @spawner
        if batches == WARMUP:     # @spawner
            ready.append(batches)  # @spawner
    return batches                # @spawner


ready, stop = fpgt.live("thread_churn")
spawner(ready, stop)              # @module-spawner
fpgt.done()
