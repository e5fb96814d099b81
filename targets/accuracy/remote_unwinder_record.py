"""remote_unwinder_record.py — a minimal sampling profiler on CPython's own
out-of-process unwinder, _remote_debugging.RemoteUnwinder (3.14+), for the
accuracy verdict (ci/accuracy real): it attaches to PID (retrying for up to
ATTACH_S while the target starts), calls get_stack_trace() on a fixed
schedule of RATE Hz (a tick it overran is skipped, never caught up) until
SIGTERM or the target is gone, and writes the samples to OUT as collapsed
stacks in the format of CPython 3.15's `profiling.sampling --collapsed`
("tid:N;file:function:line;... COUNT", outermost first) and a JSON
summary on stdout: ticks (attempts), ok, errors (the first message).

usage: remote_unwinder_record.py PID RATE OUT"""
import collections
import json
import os
import signal
import sys
import time

ATTACH_S = 10.0
GONE_AFTER_S = 1.0    # this long without one good sample after one worked: the target has exited


def attach(rd, pid):
    deadline = time.monotonic() + ATTACH_S
    while True:
        try:
            return rd.RemoteUnwinder(pid, all_threads=True)
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def one_line(frame):
    """A frame as one collapsed field: a file or function name may hold a
    newline (code compiled from a string), a ';' or a space."""
    return frame.replace("\n", "\\n").replace(";", ":").replace(" ", "_")


def main():
    pid, rate, out = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    import _remote_debugging as rd
    u = attach(rd, pid)
    counts = collections.Counter()
    ticks = ok = errors = 0
    first_error = None
    period = 1.0 / rate
    next_t = time.monotonic()
    last_ok = next_t
    while not stop:
        ticks += 1
        try:
            for item in u.get_stack_trace():
                for t in getattr(item, "threads", [item]):
                    frames = [one_line(f"{f.filename}:{f.funcname}:{getattr(f, 'lineno', 0)}")
                              for f in reversed(t.frame_info)]
                    counts[";".join([f"tid:{t.thread_id}"] + frames)] += 1
            ok += 1
            last_ok = time.monotonic()
        except Exception as e:
            errors += 1
            first_error = first_error or f"{type(e).__name__}: {e}"
            if time.monotonic() - last_ok > GONE_AFTER_S or not os.path.exists(f"/proc/{pid}"):
                break
        next_t += period
        now = time.monotonic()
        if next_t > now:
            time.sleep(next_t - now)
        else:
            next_t = now   # overran: skip the missed ticks
    with open(out, "w", encoding="utf-8") as f:
        for stack, n in counts.items():
            f.write(f"{stack} {n}\n")
    print(json.dumps({"ticks": ticks, "ok": ok, "errors": errors, "first_error": first_error}), flush=True)


if __name__ == "__main__":
    main()
