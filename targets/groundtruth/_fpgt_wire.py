"""Output side of the fpgt channel (private to fpgt; see fpgt.py).

Opens the channel's descriptors (FP_GT_WFD and FP_GT_RFD, or stdout and
stdin when a person runs the scenario), writes messages to the harness (one
JSON object per line, UTF-8, whole lines under _write_mutex) and composes
``hello`` (the interpreter's facts, park()'s function, file and offset).

Contract: a failed write means the harness is gone and ends the process
with status 3 at once; nothing here reports through _fatal, so the error
path (_fpgt_errors) can use all of it.
"""

import json
import os
import platform
import sys

from _fpgt_state import PROTOCOL, _state, _write_mutex


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
# Channel descriptors and hello

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
            "function": _state.park_code.co_qualname,
            "file": _state.park_code.co_filename,
            "lasti": _state.park_lasti,
            "calibration": _state.calibration,
        },
    })


def _default_name():
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None) or (sys.argv[0] if sys.argv else "")
    return os.path.splitext(os.path.basename(path))[0] or "scenario"
