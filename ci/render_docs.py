"""ci/render_docs.py — the tables of the docs rendered from the result
files in docs/data/ (see ci/render-docs).  A rendered region of a Markdown
file is the lines between

    <!-- render: NAME -->
    <!-- end render -->

and holds what the renderer of NAME makes of its file in docs/data: its
date, commit and command come from the file, never from prose.  --check
changes nothing and exits 1 when a region differs from what its file
renders (or names no renderer or no file)."""
import argparse
import importlib.util
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA = os.path.join(ROOT, "docs", "data")
DOCS = [os.path.join(ROOT, "README.md")] + sorted(
    os.path.join(ROOT, "docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))
REGION = re.compile(r"(<!-- render: ([a-z0-9-]+) -->\n)(.*?)(<!-- end render -->)", re.S)


def _module(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# NAME: (result file in docs/data, the ci/ module and its function that render it)
RENDERERS = {
    "accuracy-real": ("accuracy-real.json", "accuracy_real", "markdown"),
    "accuracy-real-summary": ("accuracy-real.json", "accuracy_real", "summary_markdown"),
    "accuracy-real-async": ("accuracy-real.json", "accuracy_real", "async_summary_markdown"),
    "accuracy-real-runs6": ("accuracy-real-runs6.json", "accuracy_real", "markdown"),
    "overhead": ("overhead.json", "overhead", "markdown"),
    "bench": ("bench.json", "bench", "markdown"),
    "bench-summary": ("bench.json", "bench", "summary_markdown"),
    "sample-cost": ("sample-cost.json", "sample_cost", "markdown"),
    "sample-cost-rate": ("sample-cost-rate.json", "sample_cost", "markdown"),
    "accuracy-inside": ("accuracy-inside.json", "accuracy_inside", "markdown"),
    "accuracy-inside-summary": ("accuracy-inside.json", "accuracy_inside", "summary_markdown"),
    "field": ("field.json", "field_table", "markdown"),
    "live-field": ("live-field.json", "live_table", "markdown"),
    "async-field": ("async-field.json", "async_field", "markdown"),
    "async-field-summary": ("async-field.json", "async_field", "summary_markdown"),
    "async-live": ("async-live.json", "async_live", "markdown"),
    "async-live-summary": ("async-live.json", "async_live", "summary_markdown"),
    "async-record": ("async-record.json", "async_record", "markdown"),
    "async-record-summary": ("async-record.json", "async_record", "summary_markdown"),
}


def render(name, data_dir=DATA):
    """The Markdown of region NAME from its result file in data_dir;
    ValueError when there is no renderer or no file."""
    if name not in RENDERERS:
        raise ValueError(f"no renderer for region {name!r} (known: {', '.join(sorted(RENDERERS))})")
    data, module, function = RENDERERS[name]
    path = os.path.join(data_dir, data)
    if not os.path.exists(path):
        raise ValueError(f"region {name!r}: no result file {os.path.relpath(path, ROOT)}")
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    return getattr(_module(module), function)(doc)


def rendered(text, data_dir=DATA):
    """text with every region rendered anew."""
    return REGION.sub(lambda m: m.group(1) + render(m.group(2), data_dir) + m.group(4), text)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="ci/render-docs", description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 when a region is stale")
    ap.add_argument("--data", default=DATA, help="the result files (default docs/data)")
    args = ap.parse_args(argv)
    stale = []
    for path in DOCS:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        try:
            new = rendered(text, args.data)
        except ValueError as e:
            print(f"ci/render-docs: {os.path.relpath(path, ROOT)}: {e}", file=sys.stderr)
            return 1
        if new != text:
            stale.append(os.path.relpath(path, ROOT))
            if not args.check:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(new)
    if args.check and stale:
        print("ci/render-docs: stale tables in " + ", ".join(stale) + " (run ci/render-docs)", file=sys.stderr)
        return 1
    for p in stale if not args.check else []:
        print(f"ci/render-docs: rendered {p}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
