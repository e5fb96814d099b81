# Recursion 300 deep in the main thread (a few 16 KiB data-stack chunks),
# parked on the way down at depth 150 and at the bottom.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt

fpgt.start("recursion_300")


def down(n):
    if n == 150:
        fpgt.park("depth150")
    if n == 300:
        fpgt.park("depth300")
        return 0
    return down(n + 1) + 1


down(1)
fpgt.done()
