# Threads started with _thread.start_new_thread: no threading.Thread
# bootstrap frames, unknown to threading.enumerate().
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt
import _thread

fpgt.start("raw_threads")
finished = []
lock = _thread.allocate_lock()


def raw_worker(depth):
    if depth:
        return raw_worker(depth - 1)
    fpgt.park("raw", 4)
    with lock:
        finished.append(1)


for d in (0, 2, 5):
    _thread.start_new_thread(raw_worker, (d,))
fpgt.park("raw", 4)
while True:
    with lock:
        if len(finished) == 3:
            break
    _thread.allocate_lock().acquire(True, 0.001)
fpgt.done()
