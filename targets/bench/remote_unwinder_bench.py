# remote_unwinder_bench.py — times CPython's own out-of-process unwinder for
# ci/bench: one _remote_debugging.RemoteUnwinder(PID, all_threads=True) (with
# cache_frames=True when CACHE is 1), WARMUP untimed get_stack_trace() calls,
# then N timed ones (time.perf_counter_ns).  Prints one JSON object: calls,
# failed calls (the first error), p50 and mean microseconds per call, and the
# peak RSS of this process (VmHWM of /proc/self/status, KiB; getrusage's
# ru_maxrss would also count the image of the process that started this one).
# With COLOCATE 1, before each call (outside the timed part) this process
# moves to the CPU the target's main thread last ran on (field 39 of
# /proc/PID/stat), as `frameproof bench --colocate` does for a one-thread
# target: while it reads, that thread does not run.
# usage: remote_unwinder_bench.py PID N CACHE(0|1) [WARMUP [COLOCATE(0|1)]]
import json
import os
import resource
import sys
import time

DEFAULT_WARMUP = 100
NS_PER_US = 1000.0
STAT_CPU_FIELD = 39  # "processor": the CPU the thread last ran on (proc(5))


def last_cpu(pid):
    """The CPU the main thread of pid last ran on, or None."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            # comm (field 2) may hold spaces and parentheses: split after its last ")"
            after_comm = f.read().rpartition(b")")[2].split()
        return int(after_comm[STAT_CPU_FIELD - 3])
    except (OSError, IndexError, ValueError):
        return None


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
    if len(sys.argv) not in (4, 5, 6):
        sys.exit("usage: remote_unwinder_bench.py PID N CACHE(0|1) [WARMUP [COLOCATE(0|1)]]")
    pid, n, cache = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
    warmup = int(sys.argv[4]) if len(sys.argv) >= 5 else DEFAULT_WARMUP
    colocate = len(sys.argv) == 6 and sys.argv[5] == "1"
    cpu, moves = None, 0

    def follow():
        nonlocal cpu, moves
        now = last_cpu(pid)
        if now is not None and now != cpu:
            try:
                os.sched_setaffinity(0, {now})
                cpu, moves = now, moves + 1
            except OSError:
                pass
    import _remote_debugging as rd
    kw = {"cache_frames": True} if cache else {}
    u = rd.RemoteUnwinder(pid, all_threads=True, **kw)
    failed, first_error = 0, None
    for _ in range(warmup):
        if colocate:
            follow()
        try:
            u.get_stack_trace()
        except Exception:
            pass
    ns = []
    clock = time.perf_counter_ns
    for _ in range(n):
        if colocate:
            follow()
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
           "peak_rss_kib": peak_rss_kib(), "colocate_moves": moves if colocate else None}
    if n:
        out["p50_us"] = ns[n // 2] / NS_PER_US
        out["mean_us"] = sum(ns) / n / NS_PER_US
    print(json.dumps(out), flush=True)


main()
