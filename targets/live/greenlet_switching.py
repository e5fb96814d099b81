# Live: the main greenlet and two others switch round for ever, each running
# a call chain of its own between switches (driver -> m_mid -> leaf_m,
# run_a -> a_mid -> leaf_a, run_b -> b_mid -> leaf_b): the thread state's
# current frame and data stack are swapped at every switch (greenlet), and
# each greenlet's stack ends at its own first entry frame, not at the
# thread's base frame (3.15).  Lines carry "@tag" comments that
# greenlet_switching.decl.json refers to.  Needs greenlet.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt

import greenlet

WARMUP = 200                      # rounds before "ready"
WORK = 40                         # loop iterations in each leaf


def leaf_a(n):                    # @leaf_a
    total = 0                     # @leaf_a
    for i in range(n):            # @leaf_a
        total += i * 3            # @leaf_a
    return total                  # @leaf_a


def a_mid(n):                     # @a_mid
    return leaf_a(n) + 1          # @a_mid @a_mid-call


def run_a():                      # @run_a
    while True:                   # @run_a
        a_mid(WORK)               # @run_a @run_a-call
        gb.switch()               # @run_a


def leaf_b(n):                    # @leaf_b
    total = 1                     # @leaf_b
    for i in range(n):            # @leaf_b
        total += i * 5            # @leaf_b
    return total                  # @leaf_b


def b_mid(n):                     # @b_mid
    return leaf_b(n) + 2          # @b_mid @b_mid-call


def run_b():                      # @run_b
    while True:                   # @run_b
        b_mid(WORK)               # @run_b @run_b-call
        main.switch()             # @run_b


def leaf_m(n):                    # @leaf_m
    total = 2                     # @leaf_m
    for i in range(n):            # @leaf_m
        total += i * 7            # @leaf_m
    return total                  # @leaf_m


def m_mid(n):                     # @m_mid
    return leaf_m(n) + 3          # @m_mid @m_mid-call


def driver(ready, stop):          # @driver
    rounds = 0                    # @driver
    while not stop:               # @driver
        m_mid(WORK)               # @driver @driver-call
        ga.switch()               # @driver
        rounds += 1               # @driver
        if rounds == WARMUP:      # @driver
            ready.append(rounds)  # @driver
    return rounds                 # @driver


main = greenlet.getcurrent()
ga = greenlet.greenlet(run_a)
gb = greenlet.greenlet(run_b)
ready, stop = fpgt.live("greenlet_switching")
driver(ready, stop)               # @module-driver
fpgt.done()
