"""Reading the results of runs (part of run_scenario.py).

Renders a checkpoint for people (or as indented JSON), and compares two
runs of one scenario: normalized() drops what differs from run to run (pids,
thread ids), first_difference() names the first place two values differ.

Contract: pure functions of the messages; nothing here does I/O.
"""

import json


def _short(text, limit=120):
    text = str(text)
    if len(text) <= limit:
        return text
    return "%s...(%d chars)...%s" % (text[:limit // 2], len(text),
                                     text[-limit // 2:])


def format_checkpoint(scenario, msg, raw=False):
    """Human-readable rendering (or indented JSON with raw=True)."""
    if raw:
        return "[%s] checkpoint %s" % (scenario, json.dumps(
            msg, indent=1, ensure_ascii=False))
    lines = ["[%s] checkpoint #%s %r: %d parked, %d threads alive" % (
        scenario, msg.get("seq"), msg["name"], len(msg["threads"]),
        len(msg["all_threads"]))]
    for t in msg["threads"]:
        lines.append("  thread %s (native %s)%s%s, %d frames" % (
            _short(t.get("name")), t["native_id"],
            " main" if t["main"] else "",
            " in-exception" if t["exception"] else "", len(t["frames"])))
        frames = t["frames"]
        shown = frames if len(frames) <= 40 else frames[:20] + [None] + \
            frames[-20:]
        for fr in shown:
            if fr is None:
                lines.append("      ... %d more frames ..." % (
                    len(frames) - 40))
                continue
            lines.append("    %-9s %s  %s:%s:%s-%s:%s lasti=%s" % (
                fr["kind"], _short(fr["function"], 80),
                _short(fr["file"], 80), fr["line"], fr["column"],
                fr["end_line"], fr["end_column"], fr["lasti"]))
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# Determinism

def normalized(result):
    """Checkpoints with run-specific values (pids, thread ids) removed."""
    cps = []
    for cp in result["checkpoints"]:
        cps.append({
            "name": cp["name"],
            "seq": cp.get("seq"),
            "threads": [{k: v for k, v in t.items()
                         if k not in ("native_id", "thread_id")}
                        for t in cp["threads"]],
            "all_threads": sorted((t.get("name") or "", t.get("main", False))
                                  for t in cp["all_threads"]),
        })
    return cps


def first_difference(a, b, path="$"):
    if type(a) is not type(b):
        return "%s: %r vs %r" % (path, a, b)
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return "%s.%s missing on one side" % (path, k)
            d = first_difference(a[k], b[k], "%s.%s" % (path, k))
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return "%s: length %d vs %d" % (path, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, "%s[%d]" % (path, i))
            if d:
                return d
        return None
    if a != b:
        ra, rb = repr(a), repr(b)
        return "%s: %s vs %s" % (path, ra[:200], rb[:200])
    return None
