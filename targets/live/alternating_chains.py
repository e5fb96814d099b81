# Live: a driver alternates two call chains of the same shape and depth,
# a1 -> a2 -> a3 -> leaf_a and b1 -> b2 -> b3 -> leaf_b, so the frame slots
# of one chain are reused by the other at every depth.  Lines carry "@tag"
# comments that alternating_chains.decl.json refers to.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt

WARMUP = 200                      # rounds before "ready"
WORK = 40                         # loop iterations in each leaf


def leaf_a(n):                    # @leaf_a
    total = 0                     # @leaf_a
    for i in range(n):            # @leaf_a
        total += i * 3            # @leaf_a
    return total                  # @leaf_a


def a3(n):                        # @a3
    return leaf_a(n) + 1          # @a3 @a3-call


def a2(n):                        # @a2
    return a3(n) + 1              # @a2 @a2-call


def a1(n):                        # @a1
    return a2(n) + 1              # @a1 @a1-call


def leaf_b(n):                    # @leaf_b
    total = 1                     # @leaf_b
    for i in range(n):            # @leaf_b
        total += i * 5            # @leaf_b
    return total                  # @leaf_b


def b3(n):                        # @b3
    return leaf_b(n) + 2          # @b3 @b3-call


def b2(n):                        # @b2
    return b3(n) + 2              # @b2 @b2-call


def b1(n):                        # @b1
    return b2(n) + 2              # @b1 @b1-call


def driver(ready, stop):          # @driver
    rounds = 0                    # @driver
    while not stop:               # @driver
        a1(WORK)                  # @driver @driver-a
        b1(WORK)                  # @driver @driver-b
        rounds += 1               # @driver
        if rounds == WARMUP:      # @driver
            ready.append(rounds)  # @driver
    return rounds                 # @driver


ready, stop = fpgt.live("alternating_chains")
driver(ready, stop)               # @module-driver
fpgt.done()
