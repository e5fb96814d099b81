"""fpgt's constants and module state (private to fpgt; see fpgt.py).

The one copy of everything the fpgt modules share: the protocol version,
the timing constants, the C-level lock and thread-id functions, the parker
record, the checkpoint bookkeeping (_expected, _pending, _ready,
_calibration_parkers), the _state object and the live-mode lists.

Contract: imports no other fpgt module.  The others import these names and
change them only in place (attributes of _state, items of the dicts and
lists), never by rebinding, so every module sees the same objects.
"""

import _thread
import sys

PROTOCOL = 1

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
# Module state.  _mutex is a plain C lock: it is never held across a call
# that could block on the harness.

_mutex = _allocate_lock()
_write_mutex = _allocate_lock()
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
    park_code = None       # park.__code__: fpgt.py sets it
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
