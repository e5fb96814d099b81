"""ci/result_file.py — what the ci/ scripts that write a result file for
docs/data share: the commit and date a result is stamped with, and how the
file is written (ci/render_docs.py renders the docs' tables from it), and
the command it names, without this machine's paths."""
import datetime
import json
import os
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


def publish(doc, name, report_dir, say):
    """Writes doc as docs/data/NAME (report_dir/NAME when given, for a
    trial) and says where, and that ci/render-docs comes next."""
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out_dir = report_dir or os.path.join(repo, "docs", "data")
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, name)
    write(out, doc)
    say("%s written in %.0f s%s" % (out if report_dir else os.path.relpath(out, repo), doc["seconds"],
                                    "" if report_dir else "; run ci/render-docs"))


# Options whose value is a path on the machine that ran: left out of the
# command a result file names (the docs are rendered from it).
PATH_OPTIONS = ("--frameproof", "--report-dir")


def public_args(argv):
    """argv without the options of PATH_OPTIONS and their values."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a in PATH_OPTIONS:
            skip = True
        elif not a.startswith(tuple(o + "=" for o in PATH_OPTIONS)):
            out.append(a)
    return out
