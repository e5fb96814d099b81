"""Helpers for scenarios (private to fpgt, which re-exports them).

thread(), should_stop(), jit_requested(), require_jit(), generated_files()
and generated_file(), as fpgt.py's API describes them.

Contract: none of them touches the checkpoint machinery; require_jit
reports what it finds wrong through fail().
"""

import hashlib
import os
import sys
import tempfile
import threading

from _fpgt_errors import fail
from _fpgt_state import _allocate_lock, _get_ident, _live_stop
from _fpgt_wire import _jit_enabled

_stack_size_lock = _allocate_lock()


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
