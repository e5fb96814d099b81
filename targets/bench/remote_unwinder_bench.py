# remote_unwinder_bench.py — times CPython's own out-of-process unwinder for
# ci/bench: one _remote_debugging.RemoteUnwinder(PID, all_threads=True) (with
# cache_frames=True when CACHE is 1), WARMUP untimed get_stack_trace() calls,
# then N timed ones (time.perf_counter_ns).  Prints one JSON object: calls,
# failed calls (the first error), p50 and mean microseconds per call, and the
# peak RSS of this process (VmHWM of /proc/self/status, KiB; getrusage's
# ru_maxrss would also count the image of the process that started this one).
# usage: remote_unwinder_bench.py PID N CACHE(0|1) [WARMUP]
import json
import resource
import sys
import time

DEFAULT_WARMUP = 100
NS_PER_US = 1000.0


def peak_rss_kib():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit("usage: remote_unwinder_bench.py PID N CACHE(0|1) [WARMUP]")
    pid, n, cache = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
    warmup = int(sys.argv[4]) if len(sys.argv) == 5 else DEFAULT_WARMUP
    import _remote_debugging as rd
    kw = {"cache_frames": True} if cache else {}
    u = rd.RemoteUnwinder(pid, all_threads=True, **kw)
    failed, first_error = 0, None
    for _ in range(warmup):
        try:
            u.get_stack_trace()
        except Exception:
            pass
    ns = []
    clock = time.perf_counter_ns
    for _ in range(n):
        t0 = clock()
        try:
            u.get_stack_trace()
        except Exception as e:
            failed += 1
            if first_error is None:
                first_error = "%s: %s" % (type(e).__name__, e)
        ns.append(clock() - t0)
    ns.sort()
    out = {"calls": n, "failed": failed, "first_error": first_error, "cache_frames": cache,
           "peak_rss_kib": peak_rss_kib()}
    if n:
        out["p50_us"] = ns[n // 2] / NS_PER_US
        out["mean_us"] = sum(ns) / n / NS_PER_US
    print(json.dumps(out), flush=True)


main()
