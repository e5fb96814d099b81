"""check_messages — every error message of the library follows the one
convention written in unwinder/src/fp_error.h.

Usage: check_messages.py SRC_DIR

Reads every call of the message helpers (fpi_err, fpi_err_code, fpi_msg,
fpi_err_prefix, fpi_err_append) in SRC_DIR/*.c, takes its format string and checks
it as TAP, one test per rule with the offending call sites listed."""
import pathlib
import re
import sys

CALL = re.compile(r"\b(fpi_err|fpi_err_code|fpi_msg|fpi_err_prefix|fpi_err_append)\s*\(")
LITERAL = re.compile(r'\s*"((?:[^"\\]|\\.)*)"')
# Names spelled as their owner spells them may start a message.
PROPER = ("CPython", "ELF", "TLBC", "Py_Version", "_PyRuntime", "_PyCFrame")


def format_strings(src_dir):
    """(where, helper, format) for every helper call with a literal format."""
    for path in sorted(pathlib.Path(src_dir).glob("*.c")):
        text = path.read_text()
        for m in CALL.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            # Skip the helpers' own definitions and declarations.
            head = text[m.end():m.end() + 200]
            if re.match(r"\s*(fpi_errbuf|char)\s*\*", head):
                continue
            args = text[m.end():m.end() + 600]
            first = re.search(r'"', args)
            if not first:
                continue
            pos, parts = first.start(), []
            while True:
                lm = LITERAL.match(args, pos)
                if not lm:
                    break
                parts.append(lm.group(1))
                pos = lm.end()
            yield f"{path.name}:{line}", m.group(1), "".join(parts)


def starts_right(fmt):
    return (fmt[:1].islower() or fmt.startswith("%") or fmt.startswith(PROPER))


RULES = [
    ("one line, no trailing period", lambda h, f: "\\n" not in f and not f.rstrip().endswith(".")),
    ("starts lower-case or with a proper name", lambda h, f: h == "fpi_err_append" or starts_right(f)),
    ("addresses as 0x%llx, version hex as 0x%08x, a byte as 0x%02x",
     lambda h, f: "@0x" not in f and "%p" not in f and "%#" not in f and
     all(m in ("llx", "08x", "02x") for m in re.findall(r"0x%(\w+?x)", f))),
    ("what failed: why (fpi_err_code adds the code's name as the why)",
     lambda h, f: h in ("fpi_err_append", "fpi_err_prefix") or f == "%s" or (h == "fpi_err_code") == (": " not in f)),
    ("context goes in front (append only builds '; ' lists)",
     lambda h, f: h != "fpi_err_append" or f.startswith("%s") or f.startswith(": ")),
    ("out of memory says what was being allocated", lambda h, f: f != "out of memory"),
]


def main():
    calls = list(format_strings(sys.argv[1]))
    print(f"1..{len(RULES) + 1}")
    print(f"{'ok' if len(calls) > 50 else 'not ok'} 1 - message helpers found ({len(calls)} calls)")
    failed = len(calls) <= 50
    for i, (name, rule) in enumerate(RULES, 2):
        bad = [f"{where}: {fmt!r}" for where, helper, fmt in calls if not rule(helper, fmt)]
        print(f"{'not ok' if bad else 'ok'} {i} - {name}")
        for b in bad:
            print(f"# {b}")
        failed |= bool(bad)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
