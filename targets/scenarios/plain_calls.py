# A plain chain of module-level function calls in the main thread, parked at
# the bottom; then a multi-line call expression (line != end_line) and a
# parked module-level frame.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt

fpgt.start("plain_calls")


def level_d(x):
    fpgt.park("bottom")
    return x + 1


def level_c(x):
    return level_d(x) * 2


def level_b(x):
    y = level_c(x)
    return y


def level_a():
    return level_b(1)


def multiline(a, b):
    return fpgt.park(
        "multiline",
    ) or (a, b)


level_a()
multiline(1,
          2)
fpgt.park("module")
fpgt.done()
