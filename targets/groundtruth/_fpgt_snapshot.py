"""The parked stacks, seen from inside the target (private to fpgt).

Waits until every parker of a checkpoint is truly blocked: its innermost
frame is its own park() frame at _state.park_lasti and, where /proc exists,
the kernel says the thread is not running (10 s at most, then _fatal).  Then
records each parker's frames, innermost first (THREAD and FRAME in fpgt.py's
protocol), and every thread of the process; at ``continue`` it takes them
again and reports any difference.

Contract: frames come from sys._current_frames(), or from the park() frames
the parkers registered while a sub-interpreter exists; callers drop the
frame references they get as soon as they are done with them.
"""

import json
import sys
import threading
import time

from _fpgt_errors import _fatal
from _fpgt_state import _BLOCK_TIMEOUT, _POLL, _state

# inspect.CO_GENERATOR, CO_COROUTINE, CO_ASYNC_GENERATOR (stable values;
# inspect itself is not imported to keep the target light).
_CO_GENERATOR = 0x20
_CO_COROUTINE = 0x80
_CO_ASYNC_GENERATOR = 0x200
_GENERATOR_FLAGS = _CO_GENERATOR | _CO_COROUTINE | _CO_ASYNC_GENERATOR


def _proc_blocked(native_id):
    """True if the kernel says the thread is not running (or unknown)."""
    try:
        with open("/proc/self/task/%d/stat" % native_id, "rb") as f:
            stat = f.read()
    except OSError:
        return True
    i = stat.rfind(b")")
    if i < 0 or i + 2 >= len(stat):
        return True
    return stat[i + 2:i + 3] != b"R"


def _subinterpreters_exist():
    """True if a sub-interpreter may exist (created from Python)."""
    for name in ("_interpreters", "_xxsubinterpreters"):
        mod = sys.modules.get(name)
        if mod is None:
            continue
        try:
            if len(mod.list_all()) > 1:
                return True
        except Exception:
            return True
    return False


def _current_frames(captured):
    """sys._current_frames(), or the parkers' own frames if unsafe.

    On early 3.12 and 3.13 releases (3.12.1, 3.13.0), sys._current_frames()
    corrupts the heap while an isolated sub-interpreter has a thread running
    (it makes frame objects for the other interpreter's frames).  Then the
    park() frames the parkers captured themselves are used instead: they are
    the objects sys._current_frames() would return for threads in park().
    """
    if captured and _subinterpreters_exist():
        return dict(captured)
    return sys._current_frames()


def _await_blocked(parkers):
    deadline = time.monotonic() + _BLOCK_TIMEOUT
    captured = {p.ident: p.frame for p in parkers}
    while True:
        frames = _current_frames(captured)
        laggard = None
        for p in parkers:
            f = frames.get(p.ident)
            if (f is None or f is not p.frame
                    or f.f_lasti != _state.park_lasti
                    or not _proc_blocked(p.native_id)):
                laggard = p
                break
        f = None
        if laggard is None:
            return frames
        if time.monotonic() > deadline:
            frames = None
            _fatal("checkpoint %r: thread %d did not block in park() within"
                   " %.0f s" % (laggard.label, laggard.native_id,
                                _BLOCK_TIMEOUT))
        frames = None
        time.sleep(_POLL)


def _frame_record(f, positions_cache):
    code = f.f_code
    lasti = f.f_lasti
    entry = positions_cache.get(id(code))
    if entry is None or entry[0] is not code:
        entry = (code, list(code.co_positions()))
        positions_cache[id(code)] = entry
    positions = entry[1]
    if lasti is not None and lasti >= 0 and lasti // 2 < len(positions):
        line, end_line, column, end_column = positions[lasti // 2]
    else:
        line = end_line = column = end_column = None
    return {
        "function": code.co_qualname,
        "name": code.co_name,
        "file": code.co_filename,
        "line": line,
        "end_line": end_line,
        "column": column,
        "end_column": end_column,
        "lasti": lasti,
        "first_line": code.co_firstlineno,
        "kind": "generator" if code.co_flags & _GENERATOR_FLAGS else "python",
    }


def _snapshot(parkers, frames):
    by_ident = {t.ident: t for t in threading.enumerate()}
    main_ident = _state.main_ident
    positions_cache = {}
    threads = []
    for p in parkers:
        records = []
        f = frames[p.ident]
        while f is not None:
            records.append(_frame_record(f, positions_cache))
            f = f.f_back
        t = by_ident.get(p.ident)
        threads.append({
            "native_id": p.native_id,
            "thread_id": p.ident,
            "name": t.name if t is not None else None,
            "main": p.ident == main_ident,
            "exception": p.exception,
            "frames": records,
        })
    threads.sort(key=lambda t: (not t["main"], t["name"] or "",
                                json.dumps(t["frames"], sort_keys=True)))
    all_threads = []
    seen = set()
    for t in by_ident.values():
        seen.add(t.ident)
        all_threads.append({"native_id": t.native_id, "thread_id": t.ident,
                            "name": t.name, "main": t.ident == main_ident})
    for p in parkers:
        if p.ident not in seen:
            all_threads.append({"native_id": p.native_id,
                                "thread_id": p.ident, "name": None,
                                "main": p.ident == main_ident})
    all_threads.sort(key=lambda t: (not t["main"], t["name"] or "",
                                    t["thread_id"]))
    return threads, all_threads


def _verify_unchanged(label, parkers, threads):
    """Check that the parked stacks did not change while they were held."""
    frames = _await_blocked(parkers)
    try:
        again, _ = _snapshot(parkers, frames)
    finally:
        frames = None
    if again != threads:
        changed = [t["name"] or t["native_id"]
                   for t, u in zip(threads, again) if t != u]
        _fatal("checkpoint %r: stacks of threads %r changed while the"
               " checkpoint was held" % (label, changed))
