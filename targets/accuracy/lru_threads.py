"""lru_threads.py — the body of CPython's test_functools
test_lru_cache_threaded3 (five threads, each calling an lru_cache'd
function that sleeps 10 ms) in a loop for 3 s, a short computation
between rounds; at exit, on stderr, the rounds, the calls and the mean
time one call spent in the function by its own perf_counter.  The
function's time summed over the run divided by the run's length is the
mean number of threads inside it: a wall-mode profile's samples of it per
sampled tick must come out the same (docs/accuracy.md)."""
import functools, threading, time, sys
spent = []
def run_once():
    @functools.lru_cache(maxsize=2)
    def f(x):
        t0 = time.perf_counter()
        time.sleep(.01)
        spent.append(time.perf_counter() - t0)
        return 3 * x
    def test(i, x):
        assert f(x) == 3 * x
    threads = [threading.Thread(target=test, args=(i, v)) for i, v in enumerate([1, 2, 2, 3, 2])]
    for t in threads: t.start()
    for t in threads: t.join()
def busy(n):
    return sum(i * i for i in range(n))
t_end = time.perf_counter() + 3
rounds = 0
while time.perf_counter() < t_end:
    run_once(); busy(20000); rounds += 1
print("lru_threads: rounds", rounds, "f calls", len(spent), "mean f ms %.2f" % (1000 * sum(spent) / len(spent)), "max %.2f" % (1000 * max(spent)), file=sys.stderr)
