# Deep alternation of Python and C frames: 60 levels of Python -> sorted()
# -> key lambda -> Python, then 25 map and 25 functools.reduce layers (debug
# builds have a low C recursion limit), in a thread with a 64 MiB stack;
# every C call re-enters the interpreter.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt
import functools

fpgt.start("recursion_through_c")
sys.setrecursionlimit(10000)


def via_sorted(n):
    if n == 0:
        return via_map(25)
    return sorted([n], key=lambda x: via_sorted(n - 1))[0]


def via_map(n):
    if n == 0:
        return via_reduce(25)
    return list(map(lambda x: via_map(n - 1), [n]))[0]


def via_reduce(n):
    if n == 0:
        fpgt.park("python-c-python")
        return 0
    return functools.reduce(lambda a, b: via_reduce(n - 1), [1, 2])


t = fpgt.thread(via_sorted, 60, name="deep-c", stack_size=64 * 1024 * 1024)
t.join()
fpgt.done()
