"""The prose that restates a shared fact agrees with facts/facts.env (TAP):
the supported CPython range wherever README.md and the public header state
it, README's default FRAMEPROOF_HOME, and the .fpimg fixed-header table of docs/image-format.md (offsets,
header size, thread entry and region header sizes).  facts.env is the
source; this test keeps the human-readable copies honest, and proves it
would notice by checking doctored copies, which must fail.
usage: test_facts_docs.py SOURCE_DIR"""
import os
import re
import sys

SOURCE = sys.argv[1]
sys.path.insert(0, os.path.join(SOURCE, "facts"))
sys.path.insert(0, os.path.join(SOURCE, "tests", "cli"))
import fpfacts  # noqa: E402  (the shared facts)
from tap_results import check, report  # noqa: E402

FACTS = fpfacts.load()
# Sentences that state the supported range; group "r" is the range.
RANGE_PATTERNS = [
    re.compile(r": not supported \((?P<r>\d+\.\d+–\d+\.\d+) are\)"),
    re.compile(r"`libframeproof`, CPython (?P<r>\d+\.\d+–\d+\.\d+)"),
    re.compile(r"stack unwinder for CPython (?P<r>\d+\.\d+–\d+\.\d+)"),
]
RANGE_FILES = ["README.md", "unwinder/include/frameproof/frameproof.h"]
# docs/image-format.md fixed-header rows: | offset | size | field | meaning |
HEADER_FIELDS = {
    "magic": 0, "format version": "FPIMG_OFF_FORMAT", "header size": "FPIMG_OFF_HEADER_SIZE",
    "flags": "FPIMG_OFF_FLAGS", "hexversion": "FPIMG_OFF_HEXVERSION", "pid": "FPIMG_OFF_PID",
    "thread count": "FPIMG_OFF_THREAD_COUNT", "runtime address": "FPIMG_OFF_RUNTIME",
    "region count": "FPIMG_OFF_REGION_COUNT", "python version": "FPIMG_OFF_PYVERSION",
    "asyncio table": "FPIMG_OFF_ASYNCIO",
}
ROW = re.compile(r"^\| (\d+) \| (\d+) \| ([a-z ]+) \|")

def range_problems(texts):
    want = fpfacts.supported_range(FACTS)
    found, bad = 0, []
    for path, text in texts.items():
        for pat in RANGE_PATTERNS:
            for m in pat.finditer(text):
                found += 1
                if m.group("r") != want:
                    bad.append("%s: %r (facts: %s)" % (path, m.group(0), want))
    if found < len(RANGE_PATTERNS):
        bad.append("only %d statements of the range found" % found)
    return bad


def image_doc_problems(text):
    rows = {}
    for line in text.splitlines():
        m = ROW.match(line)
        if m and m.group(3) in HEADER_FIELDS and m.group(3) not in rows:
            rows[m.group(3)] = (int(m.group(1)), int(m.group(2)))
    bad = []
    for field, key in HEADER_FIELDS.items():
        want = key if isinstance(key, int) else int(FACTS[key])
        if field not in rows:
            bad.append("no row for %r" % field)
        elif rows[field][0] != want:
            bad.append("%s at offset %d, facts say %d" % (field, rows[field][0], want))
    pyver = rows.get("python version")
    if pyver and pyver[1] != int(FACTS["FPIMG_PYVERSION_LEN"]):
        bad.append("python version field is %d bytes, facts say %s" % (pyver[1], FACTS["FPIMG_PYVERSION_LEN"]))
    for phrase in ("%s for version 1" % FACTS["FPIMG_HEADER_SIZE"],
                   "%s when the image records asyncio's table" % FACTS["FPIMG_ASYNCIO_HEADER_SIZE"],
                   "thread count x %s bytes" % FACTS["FPIMG_THREAD_ENTRY"],
                   "One %s-byte entry per thread" % FACTS["FPIMG_THREAD_ENTRY"],
                   "Each region is a %s-byte header" % FACTS["FPIMG_REGION_HEADER"]):
        if phrase not in text:
            bad.append("missing %r" % phrase)
    return bad


def read(rel):
    with open(os.path.join(SOURCE, rel), encoding="utf-8") as f:
        return f.read()


texts = {rel: read(rel) for rel in RANGE_FILES}
bad = range_problems(texts)
check("the supported range in README.md and frameproof.h is " + fpfacts.supported_range(FACTS), not bad,
      "\n".join(bad))
home = re.findall(r"`\$FRAMEPROOF_HOME` \(default `([^`]*)`\)", texts["README.md"])
check("README.md gives the default FRAMEPROOF_HOME of facts.env",
      home == [FACTS["FRAMEPROOF_HOME_DEFAULT"]], "README: %r" % home)
doc = read("docs/image-format.md")
bad = image_doc_problems(doc)
check("docs/image-format.md states the header layout of facts.env", not bad, "\n".join(bad))

# The checks must notice a copy that drifted.
drifted = dict(texts)
drifted["README.md"] = texts["README.md"].replace(fpfacts.supported_range(FACTS), "3.11–3.14", 1)
check("a drifted range is caught", range_problems(drifted) != [])
moved = doc.replace("| 20 | 4 | hexversion |", "| 24 | 4 | hexversion |", 1)
check("a moved header field is caught", moved != doc and image_doc_problems(moved) != [])

report()
