"""tap_results — what the command-line tests share: collecting named
results, the one-line-error check, the host's CPython to run targets with,
and printing them as TAP."""
import os
import sys

results = []


def check(name, ok, detail=""):
    """A result: passed when ok is true.  Any false value fails it — None
    too (what `a and re.search(...)` gives when nothing matched), which
    stored as it came would read as skip()'s mark."""
    results.append((name, bool(ok), detail))


def skip(name, why):
    results.append((name, None, why))


def one_line_error(r, status, needle):
    """(ok, detail): r exited with status and wrote one stderr line holding needle."""
    err = r.stderr.decode(errors="replace") if isinstance(r.stderr, bytes) else r.stderr
    lines = err.strip().splitlines()
    return r.returncode == status and len(lines) == 1 and needle in lines[0], \
        f"status {r.returncode}, stderr {err!r}"


def host_python():
    """The host's CPython: python3.11, else the interpreter running the test."""
    for p in ("/usr/bin/python3.11", sys.executable):
        if os.path.exists(p):
            return p
    return sys.executable


def report():
    print(f"1..{len(results)}")
    for i, (name, ok, detail) in enumerate(results, 1):
        if ok is None:
            print(f"ok {i} - {name} # SKIP {detail}")
        elif ok:
            print(f"ok {i} - {name}")
        else:
            print(f"not ok {i} - {name}")
            for line in str(detail).splitlines():
                print(f"# {line}")
