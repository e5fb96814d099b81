"""Counts the test cases of a meson test run (testlog.json): a TAP test
counts each of its subtests, any other test counts once.  Prints a table of
failures and the closing line "N passed, N failed, N skipped"; exits 1 if
anything failed.  Under each failed test it repeats the lines that say why
(a TAP test's "not ok" lines and their comments, or the end of its output),
so that the end of the run names the failing check."""
import json
import re
import sys

TAP_LINE = re.compile(r"^(not ok|ok)\b(.*)$")
DETAIL_LINES = 12  # lines of evidence repeated per failing subtest
TAIL_LINES = 20  # lines of output repeated for a test that crashed or is not TAP


def count_tap(stdout):
    passed = failed = skipped = 0
    for line in stdout.splitlines():
        m = TAP_LINE.match(line.strip())
        if not m:
            continue
        directive = m.group(2).upper()
        if "# SKIP" in directive:
            skipped += 1
        elif m.group(1) == "ok" or "# TODO" in directive:
            passed += 1
        else:
            failed += 1
    return passed, failed, skipped


def tap_evidence(stdout):
    """The "not ok" lines of a TAP output, each with the comments after it."""
    out, keep = [], 0
    for line in stdout.splitlines():
        m = TAP_LINE.match(line.strip())
        if m:
            keep = DETAIL_LINES if m.group(1) == "not ok" and "# SKIP" not in m.group(2).upper() else 0
            if keep:
                out.append(line)
        elif keep and line.startswith("#"):
            out.append(line)
            keep -= 1
    return out


def tail(t):
    text = (t.get("stdout") or "") + (t.get("stderr") or "")
    return ["(result %s)" % t.get("result")] + text.splitlines()[-TAIL_LINES:]


def main(argv):
    path = argv[1]
    passed = failed = skipped = 0
    failures = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            t = json.loads(line)
            result = t.get("result")
            if t.get("protocol") == "tap" or "1.." in (t.get("stdout") or ""):
                p, fl, s = count_tap(t.get("stdout") or "")
                if p + fl + s == 0:
                    fl = 1
                if result not in ("OK", "SKIP", "EXPECTEDFAIL") and fl == 0:
                    fl = 1  # crashed or timed out after its last TAP line
                passed, failed, skipped = passed + p, failed + fl, skipped + s
                if fl:
                    ev = tap_evidence(t.get("stdout") or "")
                    failures.append((t["name"], ev if ev and result in ("OK", "FAIL") else ev + tail(t)))
            elif result in ("OK", "EXPECTEDFAIL"):
                passed += 1
            elif result == "SKIP":
                skipped += 1
            else:
                failed += 1
                failures.append((t["name"], tail(t)))
    i = 2
    while i < len(argv):
        if argv[i] == "--extra-pass":
            passed += 1
        elif argv[i] == "--extra-fail":
            failed += 1
            failures.append((argv[i + 1], []))
        i += 2
    for name, evidence in failures:
        print(f"FAILED: {name}")
        for line in evidence:
            print(f"    {line}")
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
