# Deep recursion spanning many data-stack chunks: the main thread goes 3000
# deep (parked at 1000 and at 3000), then the main thread (mutual recursion,
# 2000 deep) and a thread with a 64 MiB stack (5000 deep) park together.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt

fpgt.start("recursion_3000")
sys.setrecursionlimit(20000)


def down(n):
    if n == 1000:
        fpgt.park("depth1000")
    if n == 3000:
        fpgt.park("depth3000")
        return 0
    return down(n + 1) + 1


def ping(n, label, parties):
    if n == 0:
        fpgt.park(label, parties)
        return 0
    return pong(n - 1, label, parties) + 1


def pong(n, label, parties):
    if n == 0:
        fpgt.park(label, parties)
        return 0
    return ping(n - 1, label, parties) + 1


def deep_thread():
    ping(5000, "together", 2)


down(1)
t = fpgt.thread(deep_thread, name="deep-5000", stack_size=64 * 1024 * 1024)
ping(2000, "together", 2)
t.join()
fpgt.done()
