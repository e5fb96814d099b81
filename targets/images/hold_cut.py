# hold_cut.py — a target whose own frame chain is cut, for the tests of
# `snapshot --keep-failed` (a refused state on demand): outer() calls
# hold(), which sets outer's link to its caller to NULL (through ctypes, at
# the frame's address that outer's frame object names) and clears the word
# of outer's frame object where greenlet keeps a rewritten link, so the
# chain ends at a Python frame that no stack switcher left so; then it
# prints "ready" and blocks for good.  Every sample of it, stopped or not,
# is refused as a cut chain.  The interpreter never follows the cut link:
# hold() never returns, and nothing else runs.
import ctypes
import sys
import sysconfig
import threading

FT = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
HEAD = 32 if FT else 16                       # the object header
F_FRAME = HEAD + 8                            # PyFrameObject: f_back, then f_frame
PREVIOUS = 48 if sys.version_info < (3, 12) else 8   # _PyInterpreterFrame.previous
# PyFrameObject._f_frame_data, after the header: 3.11 and 3.12 40, 3.13 48, 3.14+ 56
FRAME_DATA = HEAD + {11: 40, 12: 40, 13: 48}.get(sys.version_info[1], 56)


def word(addr):
    return ctypes.c_void_p.from_address(addr)


def hold():
    f = sys._getframe(1)                      # outer's frame object
    iframe = word(id(f) + F_FRAME).value
    word(iframe + PREVIOUS).value = None
    word(id(f) + FRAME_DATA).value = None
    print("ready", flush=True)
    threading.Event().wait()


def outer():
    hold()


outer()
