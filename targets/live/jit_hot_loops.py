# Live: hot loops run as JIT code.  A driver loop alternates two call chains
# of the same shape, a1 -> a2 -> leaf_a and b1 -> b2 -> leaf_b, whose leaves
# spin short loops of their own; every loop here gets hot within the warm-up.
# On a "+jit" interpreter (PYTHON_JIT=1, docs/jit.md) the driver proves
# before "ready" that its loop and both leaves' loops have executors (JIT
# code) and that its callers stand at their calls, or fails loudly;
# elsewhere the same code runs interpreted.  Lines carry "@tag" comments that
# jit_hot_loops.decl.json refers to.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt

WARMUP = 6000                     # rounds before "ready": past the JIT's thresholds
WORK = 30                         # loop iterations in each leaf


def leaf_a(n):                    # @leaf_a
    total = 0                     # @leaf_a
    i = 0                         # @leaf_a
    while i < n:                  # @leaf_a
        total += i * 3            # @leaf_a
        i += 1                    # @leaf_a
    return total                  # @leaf_a


def a2(n):                        # @a2
    return leaf_a(n) + 1          # @a2 @a2-call


def a1(n):                        # @a1
    return a2(n) + 1              # @a1 @a1-call


def leaf_b(n):                    # @leaf_b
    total = 1                     # @leaf_b
    i = 0                         # @leaf_b
    while i < n:                  # @leaf_b
        total += i * 5            # @leaf_b
        i += 1                    # @leaf_b
    return total                  # @leaf_b


def b2(n):                        # @b2
    return leaf_b(n) + 2          # @b2 @b2-call


def b1(n):                        # @b1
    return b2(n) + 2              # @b1 @b1-call


def driver(ready, stop):          # @driver
    rounds = 0                    # @driver
    while not stop:               # @driver
        a1(WORK)                  # @driver @driver-a
        b1(WORK)                  # @driver @driver-b
        rounds += 1               # @driver
        if rounds == WARMUP:      # @driver
            # Before "ready": its frames are gone when sampling starts.
            fpgt.require_jit(driver, leaf_a, leaf_b, call_frames=1)  # @driver
            ready.append(rounds)  # @driver
    return rounds                 # @driver


ready, stop = fpgt.live("jit_hot_loops")
driver(ready, stop)               # @module-driver
fpgt.done()
