"""selftimed.py — the truth from inside for functions' shares of a
program's wall time: wraps each MODULE:QUALNAME with a perf_counter timer,
runs SCRIPT with ARGS as __main__, and at exit writes to OUT (- for
stderr) one line per function

    selftimed MODULE:QUALNAME share S (N calls, T s of W s)

S is the share of the wall time from the start to the exit spent inside the
timer's wrapper, whose code is named timed_NAME (NAME the function's own
name): a profiler's share of samples whose stack holds timed_NAME, on the
same run, is judged against S, which no sampler's bias can move.  The
wrapper's frame holds the timer's calls as well as the function's; its
call, first statement and return fall outside the timed span, so each
call adds the time they take, measured at the start on a wrapped no-op
(a calibration of a fraction of a second; a few hundred nanoseconds a
call, which matter for a function of a microsecond or two).  The functions are looked up on their
module at call time (methods, module attributes), not in SCRIPT's own
namespace.

usage: selftimed.py MODULE:QUALNAME[,MODULE:QUALNAME...] OUT SCRIPT [ARGS...]
example: selftimed.py selectors:EpollSelector.select - asyncio_tasks.py 0.5"""
import atexit
import functools
import importlib
import runpy
import sys
import time


CALIBRATION_CALLS = 100000


def timer(original, name):
    """(the timer's wrapper of original, named timed_NAME, and its [seconds, calls])."""
    spent = [0.0, 0]

    clock = time.perf_counter

    # The clock is read as early and as late in the frame as it can be, so
    # that little of the frame's life is left outside the timed span.
    def timed(*args, **kwargs):
        spent[1] += 1
        spent[0] -= clock()
        try:
            return original(*args, **kwargs)
        finally:
            spent[0] += clock()

    timed.__code__ = timed.__code__.replace(co_name="timed_" + name, co_qualname="timed_" + name)
    functools.update_wrapper(timed, original)
    return timed, spent


def outside_per_call():
    """Seconds a call of a wrapper spends outside its timed span (its call,
    its first statement, its return), measured on a wrapped no-op: the
    loop's time less an empty loop's and less the span it timed."""
    def noop():
        pass
    wrapped, spent = timer(noop, "noop")
    rounds = range(CALIBRATION_CALLS)
    best = None
    for _ in range(3):
        spent[0] = 0.0
        a = time.perf_counter()
        for _ in rounds:
            wrapped()
        b = time.perf_counter()
        for _ in rounds:
            pass
        c = time.perf_counter()
        got = ((b - a) - (c - b) - spent[0]) / CALIBRATION_CALLS
        best = got if best is None else min(best, got)
    return max(best, 0.0)


def wrap(spec):
    module_name, _, qualname = spec.partition(":")
    owner = importlib.import_module(module_name)
    parts = qualname.split(".")
    for part in parts[:-1]:
        owner = getattr(owner, part)
    timed, spent = timer(getattr(owner, parts[-1]), parts[-1])
    setattr(owner, parts[-1], timed)
    return spent


def main():
    if len(sys.argv) < 4 or ":" not in sys.argv[1]:
        sys.exit(__doc__.split("\n\n")[-1])
    specs, out, script = sys.argv[1].split(","), sys.argv[2], sys.argv[3]
    t0 = time.perf_counter()   # the calibration is part of the run a profiler sees
    outside = outside_per_call()
    spent = [wrap(spec) for spec in specs]

    def report():
        wall = time.perf_counter() - t0
        text = "".join(f"selftimed {spec} share {(t + n * outside) / wall:.4f} ({n} calls, {t:.3f} s timed and "
                       f"{n * outside:.3f} s outside the span of {wall:.3f} s)\n" for spec, (t, n) in zip(specs, spent))
        if out == "-":
            sys.stderr.write(text)
        else:
            with open(out, "w") as f:
                f.write(text)

    atexit.register(report)
    sys.argv = [script] + sys.argv[4:]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
