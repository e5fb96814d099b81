"""fpgt -- frameproof ground truth: the in-target side of the checkpoint protocol.

A scenario script imports this module, starts it, and calls ``park(label)``
wherever a thread should stop.  When every participant of a checkpoint is
parked, a dedicated daemon thread (the *channel thread*, named
``fpgt-channel``) verifies that each parker is truly blocked, takes an exact
snapshot of their Python stacks from inside the process, writes it to the
harness, waits for the harness to say ``continue`` and then releases the
parkers.  While the harness holds the checkpoint, the parked stacks cannot
change, so an out-of-process unwinder sampling the process must see exactly
the frames reported here.

Locating the module (PYTHONPATH does not survive a chroot), first lines of
every scenario (its metadata -- versions, builds, timeout -- is in
scenarios/index.json)::

    import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
    import fpgt

API
---
``start(name)``
    Open the channel, calibrate, install error hooks, send the ``hello``
    event.  Call it once, first thing.  If a scenario parks before calling
    it, ``start`` runs implicitly with the script's base name; ``hello`` is
    therefore always the first message.
``expect(label, parties)``
    Declare how many threads take part in checkpoint ``label`` (default 1).
``park(label, parties=None)``
    Block the calling thread (any thread: the main thread, a worker, inside
    a generator, coroutine, class body, ``__del__``, trace function...)
    until the harness releases checkpoint ``label``.  The checkpoint fires
    when ``parties`` threads (or the number given to ``expect``, or 1) have
    parked under that label.  Labels may be reused: the next arrivals form
    the next instance.  ``park`` is one frame deep: its own frame is the
    innermost frame of every parked thread, blocked in ``lock.acquire()``.
``done()``
    Normal end: sends ``done``.  It is an error if threads are still parked.
``fail(message)``
    Send an ``error`` event and exit with status 1.
``thread(target, *args, name=None, stack_size=None, daemon=False, **kw)``
    Start (and return) a ``threading.Thread``; ``stack_size`` is applied to
    that thread only.
``generated_files({relpath: source, ...})`` / ``generated_file(relpath, source)``
    Write generated source files (UTF-8) into one deterministic scratch
    directory under the temp dir; return the directory (or the file path).
    The path depends only on names and contents, so two runs report the
    same file names.
``pending()``
    Labels with parkers waiting for more parties (for diagnostics).
``live(name=None)``
    Live mode (targets/live): the scenario never parks; it runs freely while
    the harness samples it.  Starts the channel like ``start`` and returns
    two lists, ``(ready, stop)``.  The scenario appends anything to
    ``ready`` once it is warmed up (the channel thread then sends the
    ``ready`` event) and runs until ``stop`` is non-empty (the harness sent
    ``stop``, or, by hand, end of input), then calls ``done()``.  Both are
    plain lists so that ``ready.append(1)`` and ``while not stop:`` run no
    Python frame of this module on the scenario's threads.
``should_stop()``
    ``bool(stop)`` for code that does not mind one more frame.
``jit_requested()``
    True when the target runs on a "+jit" interpreter: its environment
    holds ``PYTHON_JIT=1`` (the manifest entry's ``env``; docs/jit.md).
    ``start`` fails when it does and the JIT is off; ``hello`` reports
    ``"jit"``, whether it is on.
``require_jit(*functions, call_frames=0)``
    On a "+jit" interpreter, prove the code under test runs as JIT code, or
    ``fail()``: the JIT is on, each function's code object has a valid
    executor (a hot loop of it was compiled; ``_opcode.get_executor``), and
    the ``call_frames`` frames under the caller each stand at a CALL
    instruction (a caller's position is exact at calls: the optimizer keeps
    ``_SET_IP`` before every ``_PUSH_FRAME``).  Returns {qualname: [byte
    offsets of its executors]}, or None without the JIT (nothing checked).

Uncaught exceptions (main thread, other threads, unraisable ones such as a
failing ``__del__``) and exiting without ``done()`` send an ``error`` event and
terminate the process with a non-zero status, so a broken scenario never
leaves parked threads behind.

Protocol
--------
Two inherited file descriptors: ``FP_GT_WFD`` (target writes) and
``FP_GT_RFD`` (target reads).  Without them stdout/stdin are used, so a person
can run a scenario by hand and type ``continue``; in that mode lines typed
ahead are kept for the next checkpoints and end of input releases all the
remaining ones.  With ``FP_GT_AUTO_CONTINUE=1`` every checkpoint is released
immediately without reading anything.

Target -> harness, one JSON object per line (UTF-8, never ASCII-escaped)::

    {"event": "hello", "pid": N, "scenario": NAME, "protocol": 1,
     "python": {"version": "3.13.1", "hexversion": N, "free_threaded": B,
                "gil_enabled": B, "debug": B, "jit": B, "implementation": "cpython",
                "executable": PATH},
     "park": {"function": "park", "file": PATH, "lasti": N,
              "calibration": "dis" | "observed"}}
    {"event": "checkpoint", "name": LABEL, "seq": N,
     "threads": [THREAD, ...], "all_threads": [{"native_id": N,
     "thread_id": N, "name": S|null, "main": B}, ...]}
    {"event": "ready"}                      (live mode only)
    {"event": "done"}
    {"event": "error", "message": S}

THREAD = {"native_id", "thread_id", "name", "main", "exception", "frames"}
where ``exception`` tells whether the parked thread itself had an exception
being handled (``sys.exception()``) when it called ``park``.  ``threads`` is
sorted: main thread first, then by thread name, then by frames.

FRAME = {"function": co_qualname, "name": co_name, "file": co_filename,
"line", "end_line", "column", "end_column": the entry of
``code.co_positions()`` at ``f_lasti // 2`` (null when unknown or when
``f_lasti`` < 0), "lasti": f_lasti, "first_line": co_firstlineno,
"kind": "generator" for generator, coroutine and async-generator code objects,
else "python"}.  ``frames`` are innermost first, exactly the chain
``sys._current_frames()[ident]`` -> ``f_back`` shows.

``all_threads`` lists every thread of ``threading.enumerate()`` (including
the channel thread and threads that are not parked) plus any parker that
threading does not know about (threads made with ``_thread`` directly).

Harness -> target: the line ``continue`` releases the checkpoint just
reported; in live mode the line ``stop`` (after ``ready``) asks the scenario
to end.  Blank lines are ignored; anything else is a protocol error.  EOF on
the read side at any time means the harness is gone: the process exits at
once with status 3.

How "truly blocked" is established: ``park`` allocates a lock, acquires it,
registers itself and then calls ``lock.acquire()`` again -- a single C call.
The byte offset of that call instruction in ``park``'s code is computed with
``dis`` and confirmed at start-up by parking a helper thread.  Before taking a
snapshot the channel thread polls ``sys._current_frames()`` until every
parker's innermost frame is ``park`` at exactly that offset and, where
``/proc`` is available, the kernel reports the thread as not running.  It
gives up with an ``error`` event after 10 s.  When the harness says
``continue`` the stacks are taken again, before the parkers are released,
and any difference is reported as an ``error``.  (While a sub-interpreter exists,
sys._current_frames() is not used -- on early 3.12 and 3.13 releases, e.g.
3.12.1 and 3.13.0, it corrupts the heap while an isolated sub-interpreter is
running -- and the park() frame objects the parkers registered themselves are
checked instead.)
"""

# This file is the public face: every name a scenario uses is an attribute
# of fpgt.  It holds park() and what depends on park() itself (its offset,
# the calibration, the parking bookkeeping, start and done), and the channel
# thread's entry point, whose file and function name identify fpgt's frames
# in stacks.  The rest is in private modules next to it, each importing only
# the ones listed before it:
#   _fpgt_state.py     constants and the module state (the one copy)
#   _fpgt_wire.py      output to the harness, the hello message
#   _fpgt_errors.py    _fatal, fail and the error hooks
#   _fpgt_input.py     input from the harness
#   _fpgt_snapshot.py  waiting until parkers are blocked, the stack snapshots
#   _fpgt_channel.py   the channel thread's loop and checkpoints
#   _fpgt_helpers.py   helpers for scenarios (thread, generated_files, ...)

import _thread
import atexit
import os
import sys
import threading
import time
import traceback

from _fpgt_state import (PROTOCOL, _BLOCK_TIMEOUT, _POLL, _Calibration,
                         _Parker, _allocate_lock, _calibration_parkers,
                         _current_exception, _expected, _get_ident,
                         _get_native_id, _live_ready, _live_stop, _mutex,
                         _pending, _ready, _state)
from _fpgt_wire import (_default_name, _jit_enabled, _open_channel_fds,
                        _send, _send_hello)
from _fpgt_errors import (_atexit, _excepthook, _fatal,
                          _threading_excepthook, _unraisablehook, fail)
from _fpgt_input import _open_reader
from _fpgt_snapshot import (_CO_ASYNC_GENERATOR, _CO_COROUTINE,
                            _CO_GENERATOR, _current_frames, _proc_blocked)
from _fpgt_channel import _channel_loop, _wake
from _fpgt_helpers import (generated_file, generated_files, jit_requested,
                           require_jit, should_stop, thread)

__all__ = ["start", "expect", "park", "done", "fail", "thread",
           "generated_file", "generated_files", "pending", "live",
           "should_stop", "PROTOCOL"]

# Names read as fpgt.NAME that nothing in this file uses: the API's
# require_jit, and the code flags selftest.py compares with inspect's.
_REEXPORTED = (require_jit, _CO_GENERATOR, _CO_COROUTINE, _CO_ASYNC_GENERATOR)


# ---------------------------------------------------------------------------
# The park function.  Keep it exactly like this: one frame, the last action a
# single C-level blocking call.  _PARK_LASTI is derived from this code.

def park(label, parties=None):
    """Block the calling thread at checkpoint ``label`` until released."""
    exception = _current_exception() is not None
    lock = _allocate_lock()
    lock.acquire()
    _arrive(label, parties, lock, exception)
    lock.acquire()


_PARK_CODE = park.__code__
_state.park_code = _PARK_CODE


# ---------------------------------------------------------------------------
# Start-up

def _dis_park_lasti():
    """Offset of the final ``lock.acquire()`` call instruction in park()."""
    import dis
    insts = list(dis.get_instructions(_PARK_CODE))
    acquire_at = None
    for i, ins in enumerate(insts):
        if ins.argval == "acquire":
            acquire_at = i
    if acquire_at is None:
        return None
    for ins in insts[acquire_at + 1:]:
        if ins.opname == "CALL" or (ins.opname.startswith("CALL")
                                    and ins.opname != "PRECALL"):
            return ins.offset
    return None


def _calibrate():
    predicted = _dis_park_lasti()
    box = []
    started = _allocate_lock()
    started.acquire()

    def helper():
        box.append((_get_ident(), _get_native_id()))
        started.release()
        park(_Calibration)

    _thread.start_new_thread(helper, ())
    started.acquire()
    ident, native_id = box[0]
    deadline = time.monotonic() + _BLOCK_TIMEOUT
    observed = None
    stable_since = None
    lasti = None
    how = None
    while True:
        with _mutex:
            captured = [fr for _, fr in _calibration_parkers]
        f = _current_frames(captured and {ident: captured[0]}).get(ident)
        captured = None
        if f is not None and f.f_code is _PARK_CODE:
            cur = f.f_lasti
            if predicted is not None and cur == predicted and _proc_blocked(
                    native_id) and _calibration_parkers:
                lasti, how = predicted, "dis"
                break
            if cur != observed or not _calibration_parkers:
                observed, stable_since = cur, time.monotonic()
            elif (time.monotonic() - stable_since > 1.0
                  and _proc_blocked(native_id)):
                lasti, how = observed, "observed"
                break
        f = None
        if time.monotonic() > deadline:
            _fatal("calibration failed: helper thread never blocked in park()"
                   " (predicted lasti %r, observed %r)" % (predicted, observed))
        time.sleep(_POLL)
    _state.park_lasti = lasti
    _state.calibration = how
    with _mutex:
        locks = [lock for lock, _ in _calibration_parkers]
        del _calibration_parkers[:]
    for lock in locks:
        lock.release()
    # Wait until the helper thread is gone (its thread state removed), so it
    # never shows up as an extra thread at the first checkpoint.
    task = "/proc/self/task/%d" % native_id
    while os.path.exists(task):
        if time.monotonic() > deadline:
            _fatal("calibration helper thread did not exit")
        time.sleep(_POLL)


def start(name=None):
    """Start the ground-truth channel and send ``hello``.  Idempotent."""
    with _mutex:
        if _state.started or _state.starting:
            return
        _state.starting = True
    _state.scenario = name or _default_name()
    _state.main_ident = threading.main_thread().ident
    _open_channel_fds()
    sys.excepthook = _excepthook
    threading.excepthook = _threading_excepthook
    sys.unraisablehook = _unraisablehook
    atexit.register(_atexit)
    _calibrate()
    _open_reader(_state.rfd)
    _state.wake_r, _state.wake_w = os.pipe()
    _send_hello()
    # Every scenario on a "+jit" interpreter, not only the JIT ones, fails
    # at once when the JIT it was launched with did not turn on.
    if jit_requested() and not _jit_enabled():
        fail("PYTHON_JIT=1 but the JIT is off (sys._jit.is_enabled() is not True)")
    _state.channel = threading.Thread(target=_channel_main,
                                      name="fpgt-channel", daemon=True)
    _state.channel.start()
    _state.started = True


def _ensure_started():
    if not _state.started:
        if _state.starting:
            # Another thread is inside start(); wait for it.
            while not _state.started:
                time.sleep(_POLL)
        else:
            start()


# ---------------------------------------------------------------------------
# Parking

def expect(label, parties):
    """Declare that checkpoint ``label`` has ``parties`` participants."""
    if not isinstance(parties, int) or parties < 1:
        raise ValueError("parties must be a positive int")
    with _mutex:
        _expected[label] = parties


def pending():
    """{label: number of parkers waiting} for incomplete checkpoints."""
    with _mutex:
        return {k: len(v) for k, v in _pending.items()}


def _arrive(label, parties, lock, exception):
    frame = sys._getframe(1)
    if frame.f_code is not _PARK_CODE:
        raise RuntimeError("_arrive() must be called by park()")
    if label is _Calibration:
        with _mutex:
            _calibration_parkers.append((lock, frame))
        return
    _ensure_started()
    if not isinstance(label, str):
        raise TypeError("checkpoint label must be a str")
    parker = _Parker(label, None, lock, _get_ident(), _get_native_id(),
                     exception, frame)
    frame = None
    complete = False
    with _mutex:
        if _state.stopping:
            error = "park(%r) after done()" % label
        else:
            error = None
            n = parties if parties is not None else _expected.get(label, 1)
            parker.parties = n
            waiting = _pending.setdefault(label, [])
            if waiting and waiting[0].parties != n:
                error = ("checkpoint %r: parties mismatch (%d vs %d)"
                         % (label, waiting[0].parties, n))
            else:
                waiting.append(parker)
                if len(waiting) >= n:
                    _ready.append((label, waiting[:n]))
                    del waiting[:n]
                    complete = True
                if not waiting:
                    del _pending[label]
    if error:
        _fatal(error)
    if complete:
        _wake()


# ---------------------------------------------------------------------------
# Channel thread: its entry point stays in this file (see above)

def _channel_main():
    try:
        _channel_loop()
    except SystemExit:
        raise
    except BaseException:
        _fatal("fpgt channel thread crashed:\n" + traceback.format_exc())


# ---------------------------------------------------------------------------
# End

def done():
    """Normal end of the scenario: send ``done``."""
    _ensure_started()
    with _mutex:
        stuck = {k: len(v) for k, v in _pending.items()}
        busy = bool(_ready)
        if not stuck and not busy:
            _state.stopping = True
    if stuck or busy:
        _fatal("done() while threads are still parked: %r" % (stuck,))
    _wake()
    _state.channel.join()
    _send({"event": "done"})
    _state.finished = True


# ---------------------------------------------------------------------------
# Live mode (the other helpers for scenarios are in _fpgt_helpers.py)

def live(name=None):
    """Start the channel in live mode; return the lists (ready, stop)."""
    _state.live = True
    start(name)
    return _live_ready, _live_stop
