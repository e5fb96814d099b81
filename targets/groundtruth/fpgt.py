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

import _thread
import atexit
import hashlib
import json
import os
import platform
import select
import sys
import tempfile
import threading
import time
import traceback

__all__ = ["start", "expect", "park", "done", "fail", "thread",
           "generated_file", "generated_files", "pending", "live",
           "should_stop", "PROTOCOL"]

PROTOCOL = 1

# inspect.CO_GENERATOR, CO_COROUTINE, CO_ASYNC_GENERATOR (stable values;
# inspect itself is not imported to keep the target light).
_CO_GENERATOR = 0x20
_CO_COROUTINE = 0x80
_CO_ASYNC_GENERATOR = 0x200
_GENERATOR_FLAGS = _CO_GENERATOR | _CO_COROUTINE | _CO_ASYNC_GENERATOR

_BLOCK_TIMEOUT = 10.0        # seconds to wait for parkers to be blocked
_POLL = 0.0005               # seconds between checks
_LIVE_POLL = 0.005           # live mode: how often the channel looks at ``ready``

_allocate_lock = _thread.allocate_lock
_get_ident = _thread.get_ident
_get_native_id = _thread.get_native_id

if hasattr(sys, "exception"):
    _current_exception = sys.exception
else:  # 3.11
    def _current_exception():
        return sys.exc_info()[1]


class _Calibration:
    """Sentinel label used by the start-up calibration helper thread."""


class _Parker:
    __slots__ = ("label", "parties", "lock", "ident", "native_id",
                 "exception", "frame")

    def __init__(self, label, parties, lock, ident, native_id, exception,
                 frame):
        self.frame = frame      # park()'s own frame object
        self.label = label
        self.parties = parties
        self.lock = lock
        self.ident = ident
        self.native_id = native_id
        self.exception = exception


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

# ---------------------------------------------------------------------------
# Module state.  _mutex is a plain C lock: it is never held across a call
# that could block on the harness.

_mutex = _allocate_lock()
_write_mutex = _allocate_lock()
_stack_size_lock = _allocate_lock()
_expected = {}          # label -> parties
_pending = {}           # label -> [parker, ...] still waiting for parties
_ready = []             # [(label, [parker, ...])] complete, not yet reported
_calibration_parkers = []


class _State:
    started = False
    starting = False
    stopping = False
    finished = False       # done sent
    failed = False         # error sent
    hello_sent = False
    scenario = None
    wfd = None
    rfd = None
    auto_continue = False
    stdio = False          # no FP_GT_* fds: lenient by-hand mode
    wake_r = None
    wake_w = None
    channel = None
    seq = 0
    park_lasti = None
    calibration = None
    main_ident = None
    live = False           # live mode: no checkpoints, "ready" and "stop"
    ready_sent = False


# live(): the scenario appends to _live_ready when warmed up; the channel
# thread appends to _live_stop when the harness says "stop".
_live_ready = []
_live_stop = []


_state = _State()


# ---------------------------------------------------------------------------
# Output

def _encode(obj):
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: fall back to escapes
        data = json.dumps(obj, separators=(",", ":")).encode("ascii")
    return data + b"\n"


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except InterruptedError:
            continue
        except OSError:
            # Harness gone (EPIPE) or descriptor unusable.
            os._exit(3)
        view = view[n:]


def _send(obj):
    data = _encode(obj)
    with _write_mutex:
        _write_all(_state.wfd, data)


# ---------------------------------------------------------------------------
# Input

class _LineReader:
    def __init__(self, fd):
        self.fd = fd
        self.buf = b""
        self.eof = False

    def fill(self):
        """Read what is available (the fd is readable).  False on EOF."""
        try:
            chunk = os.read(self.fd, 65536)
        except InterruptedError:
            return True
        except OSError:
            chunk = b""
        if not chunk:
            self.eof = True
            return False
        self.buf += chunk
        return True

    def take_line(self):
        i = self.buf.find(b"\n")
        if i < 0:
            return None
        line, self.buf = self.buf[:i], self.buf[i + 1:]
        return line.decode("utf-8", "replace").strip()


_reader = None


def _harness_gone():
    """EOF on the read side."""
    if _state.stdio:
        # By hand: end of input means "run to the end".
        _state.auto_continue = True
        _live_stop.append(True)
        return
    os._exit(3)


def _check_unsolicited():
    """A line arrived while no checkpoint was outstanding."""
    if _state.stdio:
        return  # by hand: typed-ahead lines wait for their checkpoint
    while True:
        line = _reader.take_line()
        if line is None:
            return
        if line == "stop" and _state.live and _state.ready_sent:
            _live_stop.append(True)
        elif line:
            _fatal("protocol error: unexpected line from harness: %r" % line)


def _wait_continue():
    while True:
        line = _reader.take_line()
        if line is not None:
            if line == "continue":
                return
            if line:
                _fatal("protocol error: expected 'continue', got %r" % line)
            continue
        if _state.auto_continue:
            return
        try:
            select.select([_reader.fd], [], [])
        except InterruptedError:
            continue
        if not _reader.fill():
            _harness_gone()
            if _state.auto_continue:
                return


# ---------------------------------------------------------------------------
# Errors

def _fatal(message, status=1):
    """Report an error to the harness and terminate the process."""
    with _mutex:
        first = not _state.failed
        _state.failed = True
    if first:
        try:
            sys.stderr.write("fpgt: error: %s\n" % message)
            sys.stderr.flush()
        except Exception:
            pass
        try:
            if _state.wfd is None:
                _open_channel_fds()
            if not _state.hello_sent:
                _send_hello()
            _send({"event": "error", "message": message})
        except BaseException:
            pass
    os._exit(status)


def fail(message):
    """Fail the scenario: send an ``error`` event, exit with status 1."""
    _fatal(str(message))


def _format_exc(exc_type, exc, tb):
    return "".join(traceback.format_exception(exc_type, exc, tb)).rstrip()


def _excepthook(exc_type, exc, tb):
    _fatal("uncaught exception in main thread:\n" +
           _format_exc(exc_type, exc, tb))


def _threading_excepthook(args):
    if args.exc_type is SystemExit:
        return
    name = args.thread.name if args.thread is not None else "?"
    _fatal("uncaught exception in thread %r:\n%s" % (
        name, _format_exc(args.exc_type, args.exc_value,
                          args.exc_traceback)))


def _unraisablehook(u):
    msg = u.err_msg or "Exception ignored in"
    _fatal("unraisable exception: %s %r:\n%s" % (
        msg, u.object, _format_exc(u.exc_type, u.exc_value,
                                   u.exc_traceback)))


def _atexit():
    if _state.started and not _state.finished and not _state.failed:
        _fatal("scenario exited without fpgt.done()")


# ---------------------------------------------------------------------------
# Start-up

def _open_channel_fds():
    wfd = os.environ.get("FP_GT_WFD")
    rfd = os.environ.get("FP_GT_RFD")
    if wfd and rfd:
        _state.wfd = int(wfd)
        _state.rfd = int(rfd)
    else:
        _state.wfd = sys.stdout.fileno()
        _state.rfd = sys.stdin.fileno()
        _state.stdio = True
    _state.auto_continue = os.environ.get("FP_GT_AUTO_CONTINUE", "") not in (
        "", "0")


def _jit_enabled():
    jit = getattr(sys, "_jit", None)
    return jit is not None and jit.is_enabled() is True


def _python_info():
    try:
        import sysconfig
        free_threaded = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    except Exception:
        free_threaded = False
    is_gil_enabled = getattr(sys, "_is_gil_enabled", None)
    gil_enabled = bool(is_gil_enabled()) if is_gil_enabled else True
    return {
        "version": platform.python_version(),
        "hexversion": sys.hexversion,
        "free_threaded": free_threaded,
        "gil_enabled": gil_enabled,
        "debug": hasattr(sys, "gettotalrefcount"),
        "jit": _jit_enabled(),
        "implementation": sys.implementation.name,
        "executable": sys.executable,
    }


def _send_hello():
    _state.hello_sent = True
    _send({
        "event": "hello",
        "pid": os.getpid(),
        "scenario": _state.scenario or _default_name(),
        "protocol": PROTOCOL,
        "python": _python_info(),
        "park": {
            "function": _PARK_CODE.co_qualname,
            "file": _PARK_CODE.co_filename,
            "lasti": _state.park_lasti,
            "calibration": _state.calibration,
        },
    })


def _default_name():
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None) or (sys.argv[0] if sys.argv else "")
    return os.path.splitext(os.path.basename(path))[0] or "scenario"


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
    global _reader
    _reader = _LineReader(_state.rfd)
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


def _wake():
    try:
        os.write(_state.wake_w, b"!")
    except OSError:
        pass


# ---------------------------------------------------------------------------
# Channel thread

def _channel_main():
    try:
        _channel_loop()
    except SystemExit:
        raise
    except BaseException:
        _fatal("fpgt channel thread crashed:\n" + traceback.format_exc())


def _channel_loop():
    while True:
        watch = [_state.wake_r]
        if not _state.auto_continue:
            watch.append(_state.rfd)
        if _state.live and not _state.ready_sent:
            if _live_ready:
                _state.ready_sent = True
                _send({"event": "ready"})
            timeout = _LIVE_POLL
        else:
            timeout = None
        try:
            readable, _, _ = select.select(watch, [], [], timeout)
        except InterruptedError:
            continue
        if _state.wake_r in readable:
            try:
                os.read(_state.wake_r, 4096)
            except OSError:
                pass
        if _state.rfd in readable and not _state.auto_continue:
            if _reader.fill():
                _check_unsolicited()
            else:
                _harness_gone()
        while True:
            with _mutex:
                if _ready:
                    label, parkers = _ready.pop(0)
                else:
                    label = None
                    stop = _state.stopping
            if label is None:
                break
            _checkpoint(label, parkers)
        if stop:
            return


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


def _checkpoint(label, parkers):
    frames = _await_blocked(parkers)
    try:
        threads, all_threads = _snapshot(parkers, frames)
    finally:
        frames = None
    seq = _state.seq
    _state.seq += 1
    _send({"event": "checkpoint", "name": label, "seq": seq,
           "threads": threads, "all_threads": all_threads})
    _wait_continue()
    _verify_unchanged(label, parkers, threads)
    threads = None
    for p in parkers:
        p.frame = None
    for p in parkers:
        p.lock.release()


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
# Helpers for scenarios

def thread(target, *args, name=None, stack_size=None, daemon=False,
           **kwargs):
    """Start a threading.Thread running ``target(*args, **kwargs)``."""
    t = threading.Thread(target=target, args=args, kwargs=kwargs, name=name,
                         daemon=daemon)
    if stack_size is None:
        t.start()
        return t
    with _stack_size_lock:
        old = threading.stack_size(stack_size)
        try:
            t.start()
        finally:
            threading.stack_size(old)
    return t


def live(name=None):
    """Start the channel in live mode; return the lists (ready, stop)."""
    _state.live = True
    start(name)
    return _live_ready, _live_stop


def should_stop():
    """True once the harness asked a live scenario to stop."""
    return bool(_live_stop)


def jit_requested():
    """True when the target was launched with the JIT turned on."""
    # JIT_ENV_NAME=JIT_ENV_VALUE of facts/facts.env, which a chroot cannot
    # read: the manifest's "env" of every "+jit" entry.
    return os.environ.get("PYTHON_JIT") == "1"


def require_jit(*functions, call_frames=0):
    """See the module docstring: executors of functions, callers at calls."""
    if not jit_requested():
        return None
    if not _jit_enabled():
        fail("PYTHON_JIT=1 but the JIT is off (sys._jit.is_enabled() is not True)")
    import _opcode
    import dis
    found = {}
    for fn in functions:
        code = fn.__code__
        offsets = []
        # Executors hang at the instructions that entered them (ENTER_EXECUTOR
        # in the adaptive bytecode, where a hot JUMP_BACKWARD was).
        for off in range(0, len(code._co_code_adaptive), 2):
            try:
                ex = _opcode.get_executor(code, off)
            except ValueError:
                continue
            if ex.is_valid():
                offsets.append(off)
        if not offsets:
            fail("the JIT is on but %s has no valid executor: its loop did not run as JIT code"
                 % code.co_qualname)
        found[code.co_qualname] = offsets
    f = sys._getframe(1)
    for _ in range(call_frames):
        f = f.f_back
        if f is None:
            fail("require_jit: fewer than %d frames under the caller" % call_frames)
        op = dis.opname[f.f_code.co_code[f.f_lasti]]
        if not op.startswith("CALL"):
            fail("%s stands at %s (offset %d, line %s), not at the call it made under the JIT"
                 % (f.f_code.co_qualname, op, f.f_lasti, f.f_lineno))
    return found


def generated_files(files):
    """Write {relpath: source} into one deterministic scratch directory.

    Returns the directory.  Its path depends only on the names and contents,
    so repeated runs (and concurrent runs) use the same file names; files are
    replaced atomically and left in place for later runs.
    """
    h = hashlib.sha256()
    for relpath in sorted(files):
        h.update(relpath.encode("utf-8", "surrogatepass") + b"\0")
        h.update(files[relpath].encode("utf-8") + b"\0")
    uid = os.getuid() if hasattr(os, "getuid") else 0
    base = os.path.join(tempfile.gettempdir(), "fpgt-generated-%d" % uid,
                        h.hexdigest()[:16])
    for relpath, source in files.items():
        data = source.encode("utf-8")
        path = os.path.join(base, relpath)
        try:
            with open(path, "rb") as f:
                if f.read() == data:
                    continue
        except OSError:
            pass
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = "%s.%d.%d.tmp" % (path, os.getpid(), _get_ident())
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    return base


def generated_file(relpath, source):
    """Write one file like generated_files() and return its path."""
    return os.path.join(generated_files({relpath: source}), relpath)
