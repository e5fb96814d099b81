"""Errors of the fpgt target (private to fpgt; see fpgt.py).

_fatal reports an ``error`` event to the harness (opening the channel and
sending ``hello`` first when start() has not) and ends the process; fail()
is its public form.  The hooks start() installs turn an uncaught exception
(main thread or other thread), an unraisable one and an exit without done()
into _fatal.

Contract: _fatal never returns; only the first error is reported, a later
one (another thread's) only exits.
"""

import os
import sys
import traceback

from _fpgt_state import _mutex, _state
from _fpgt_wire import _open_channel_fds, _send, _send_hello


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
