# GIL builds only: a tiny switch interval and CPU-bound threads fighting
# for the GIL while four other threads park together, three rounds.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt
import threading

fpgt.start("gil_contention")
sys.setswitchinterval(1e-5)
stop = threading.Event()
fpgt.expect("contended", 4)


def fight():
    x = 0
    while not stop.is_set():
        x += 1


def parker(i):
    for r in range(3):
        for _ in range(2000):
            pass
        fpgt.park("contended")


fighters = [fpgt.thread(fight, name="fighter-%d" % i) for i in range(2)]
parkers = [fpgt.thread(parker, i, name="parker-%d" % i) for i in range(3)]
for r in range(3):
    fpgt.park("contended")
stop.set()
for t in fighters + parkers:
    t.join()
sys.setswitchinterval(0.005)
fpgt.done()
