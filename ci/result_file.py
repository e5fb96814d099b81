"""ci/result_file.py — what the ci/ scripts that write a result file for
docs/data share: the commit and date a result is stamped with, and how the
file is written (ci/render_docs.py renders the docs' tables from it)."""
import datetime
import json
import subprocess


def stamp(commit=None, date=None):
    """(commit, date): commit, else the checkout's HEAD (short); date (as
    "YYYY-MM-DD HH:MM UTC"), else now."""
    if not commit:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
    if not date:
        date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return commit, date


def write(path, doc):
    """Writes doc as a result file: JSON, one space of indent, a final newline."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
