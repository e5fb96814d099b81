"""Counts the test cases of a meson test run (testlog.json): a TAP test
counts each of its subtests, any other test counts once.  Prints a table of
failures and the closing line "N passed, N failed, N skipped"; exits 1 if
anything failed."""
import json
import re
import sys

TAP_LINE = re.compile(r"^(not ok|ok)\b(.*)$")


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
                    failures.append(t["name"])
            elif result in ("OK", "EXPECTEDFAIL"):
                passed += 1
            elif result == "SKIP":
                skipped += 1
            else:
                failed += 1
                failures.append(t["name"])
    i = 2
    while i < len(argv):
        if argv[i] == "--extra-pass":
            passed += 1
        elif argv[i] == "--extra-fail":
            failed += 1
            failures.append(argv[i + 1])
        i += 2
    for name in failures:
        print(f"FAILED: {name}")
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
