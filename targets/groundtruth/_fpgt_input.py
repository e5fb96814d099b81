"""Input side of the fpgt channel (private to fpgt; see fpgt.py).

Reads the harness's lines: ``continue`` releases the checkpoint just
reported, ``stop`` (live mode, after ``ready``) ends the scenario, blank
lines are ignored.  End of input means the harness is gone: exit with
status 3 (by hand, with stdin: run to the end).

Contract: only the channel thread reads, after start() has called
_open_reader(); any other line is a protocol error (_fatal), except by hand,
where lines typed ahead wait for their checkpoint.
"""

import os
import select

from _fpgt_errors import _fatal
from _fpgt_state import _live_stop, _state


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


def _open_reader(fd):
    """Start reading the harness's lines from ``fd`` (start() calls it)."""
    global _reader
    _reader = _LineReader(fd)


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


def _read_unsolicited():
    """The read side is readable while no checkpoint is outstanding."""
    if _reader.fill():
        _check_unsolicited()
    else:
        _harness_gone()
