# Threads that exit and are replaced between checkpoints: thread states and
# native ids are recycled, the unwinder must not report stale threads.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt

fpgt.start("thread_churn")


def hold(depth, label, parties):
    if depth:
        return hold(depth - 1, label, parties)
    fpgt.park(label, parties)


def first_gen(i):
    hold(i, "first", 5)
    if i >= 2:
        hold(i, "second", 6)


def second_gen(i):
    hold(10 + i, "second", 6)


def third_gen(i):
    hold(20 + i, "third", 3)


first = [fpgt.thread(first_gen, i, name="first-%d" % i) for i in range(4)]
fpgt.park("first", 5)
for t in first[:2]:
    t.join()
second = [fpgt.thread(second_gen, i, name="second-%d" % i) for i in range(3)]
fpgt.park("second", 6)
for t in first + second:
    t.join()
third = [fpgt.thread(third_gen, i, name="third-%d" % i) for i in range(2)]
fpgt.park("third", 3)
for t in third:
    t.join()
fpgt.park("alone")
fpgt.done()
