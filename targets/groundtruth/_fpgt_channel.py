"""The fpgt channel thread's work (private to fpgt; see fpgt.py).

_channel_loop sleeps until a checkpoint is complete (_arrive() and done()
wake it through the wake pipe, _wake) or the harness writes; for each
complete checkpoint it waits until the parkers are blocked, sends the
snapshot, waits for ``continue``, checks that the stacks did not change and
releases the parkers.  In live mode it sends ``ready`` once the scenario
has appended to its ready list.  The thread's entry point, _channel_main,
is in fpgt.py: the live declarations recognise the channel thread by that
frame (function _channel_main, file */fpgt.py).

Contract: runs on the channel thread only; returns once done() has set
_state.stopping and no complete checkpoint is left.
"""

import os
import select

from _fpgt_input import _read_unsolicited, _wait_continue
from _fpgt_snapshot import _await_blocked, _snapshot, _verify_unchanged
from _fpgt_state import _LIVE_POLL, _live_ready, _mutex, _ready, _state
from _fpgt_wire import _send


def _wake():
    try:
        os.write(_state.wake_w, b"!")
    except OSError:
        pass


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
            _read_unsolicited()
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
