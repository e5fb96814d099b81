"""The tables rendered from result files (ci/render-docs) are as their
files render them (TAP): every region of README.md and docs/*.md names a
renderer and a file in docs/data/, and holds exactly its rendering; and
the check would notice a stale one — each result file changed in a copy
must change every region rendered from it, and a region naming no file
or renderer is an error.
usage: test_docs_rendered.py SOURCE_DIR"""
import json
import os
import shutil
import sys
import tempfile

SOURCE = sys.argv[1]
sys.path.insert(0, os.path.join(SOURCE, "ci"))
sys.path.insert(0, os.path.join(SOURCE, "tests", "cli"))
import render_docs  # noqa: E402
from tap_results import check, report  # noqa: E402


def texts():
    out = {}
    for path in render_docs.DOCS:
        with open(path, encoding="utf-8") as f:
            out[os.path.relpath(path, SOURCE)] = f.read()
    return out


def regions(text):
    return [m.group(2) for m in render_docs.REGION.finditer(text)]


def doctored(value):
    """value with every number in it changed (names and roles kept)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, list):
        return [doctored(v) for v in value]
    return {k: doctored(v) for k, v in value.items()}


docs = texts()
names = sorted({n for t in docs.values() for n in regions(t)})
check("the docs have rendered regions", bool(names), "no <!-- render: NAME --> region found")
for path, text in docs.items():
    for name in regions(text):
        try:
            fresh = render_docs.rendered(text)
            check(f"{path}: region {name} is as docs/data/{render_docs.RENDERERS[name][0]} renders it",
                  fresh == text,
                  "stale: run ci/render-docs")
        except ValueError as e:
            check(f"{path}: region {name} renders", False, str(e))
with tempfile.TemporaryDirectory(prefix="fp-render-") as tmp:
    for name in (n for n in names if n in render_docs.RENDERERS):
        shutil.copytree(render_docs.DATA, os.path.join(tmp, name))
        src = os.path.join(tmp, name, render_docs.RENDERERS[name][0])
        with open(src, encoding="utf-8") as f:
            doc = json.load(f)
        # the table's figures: "rows", live-field.json's "cells", bench.json's "results"
        part = next(k for k in ("rows", "cells", "results") if k in doc)
        doc[part] = doctored(doc[part])
        doc["date"] = doc["date"] + " (doctored)"
        with open(src, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        for path, text in docs.items():
            if name in regions(text):
                check(f"{path}: a changed {render_docs.RENDERERS[name][0]} makes region {name} stale",
                      render_docs.rendered(text, os.path.join(tmp, name)) != text)
    bogus = "<!-- render: no-such-table -->\nx\n<!-- end render -->\n"
    try:
        render_docs.rendered(bogus)
        check("a region naming no renderer is an error", False, "rendered without error")
    except ValueError:
        check("a region naming no renderer is an error", True)
report()
