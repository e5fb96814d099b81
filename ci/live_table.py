"""ci/live_table.py — the live state of the field as data: what the live
reports (live.json of `frameproof conform --live`, one per part of ci/live)
say per interpreter and configuration, written as a result file
(docs/data/live-field.json) that ci/render_docs.py renders into the README
and docs/live-runs.md.

usage: python3 ci/live_table.py OUT.json LIVE.json... --command "COMMAND" [--commit HASH] [--date D]

A cell sums, over the scenarios of one interpreter, the samples one
configuration took, the wrong ones (a stack the target never had, returned
as a success) and the rejected ones (reported as failed: torn or
incomplete); a configuration that did not run there (not applicable, not
run) leaves the cell empty.  A case that ended in an error (the target or
the harness failed) is counted in its cells as errored, never dropped, and
named in the list of errors.  Wrong samples are also kept per scenario, so
that the table can say where each unwinder went wrong."""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import result_file  # noqa: E402

NOT_COUNTED = ("n/a", "not_run")


def _cell():
    return {"samples": 0, "wrong": 0, "rejected": 0, "cases": 0, "errors": 0}


def summarize(reports, command, commit, date):
    """The live-field.json document of the live reports (each a parsed live.json)."""
    interps, configs, budgets = [], [], []
    cells, wrong_by, errors = {}, {}, []
    seconds = 0.0
    for rep in reports:
        if rep.get("interrupted"):
            raise ValueError("a report is of an interrupted run")
        seconds += rep.get("seconds") or 0.0
        opts = rep.get("options", {})
        names = []
        for c in rep.get("cases", []):
            i = c["interpreter"]
            if i not in interps:
                interps.append(i)
            for g in c.get("unwinders", []) or []:
                name = g["name"]
                if name not in configs:
                    configs.append(name)
                if name not in names:
                    names.append(name)
                if g.get("status") == "n/a" or c.get("status") == "skip":
                    continue
                if c.get("status") == "error" or g.get("status") == "error":
                    cell = cells.setdefault(name, {}).setdefault(i, _cell())
                    cell["errors"] += 1
                    what = "%s %s %s" % (i, c["scenario"], name)
                    errors.append({"case": what, "error": g.get("error") or c.get("error") or "no message"})
                    continue
                if g.get("status") in NOT_COUNTED:
                    continue
                cell = cells.setdefault(name, {}).setdefault(i, _cell())
                cell["samples"] += g.get("samples", 0)
                cell["wrong"] += g.get("wrong", 0)
                cell["rejected"] += g.get("rejected", 0)
                cell["cases"] += 1
                if g.get("wrong", 0):
                    per = wrong_by.setdefault(name, {})
                    per[c["scenario"]] = per.get(c["scenario"], 0) + g["wrong"]
        budgets.append({"configurations": names, "samples": opts.get("samples"), "duration_s": opts.get("duration")})
    return {"date": date, "commit": commit, "command": command, "seconds": round(seconds, 1),
            "interpreters": interps, "configurations": configs, "budgets": budgets,
            "cells": cells, "wrong_by_scenario": wrong_by, "errors": errors}


# How the table names a configuration (the harness's names otherwise).
LABELS = {
    "frameproof:vm+cache": "frameproof `vm+cache` (the library's default)",
    "frameproof:vm+cache+blocking": "`vm+cache+blocking`",
    "frameproof:vm+cache+colocate": "`vm+cache+colocate`",
    "frameproof:vm+cache+colocate+pause-torn": "`vm+cache+colocate+pause-torn` (record's default)",
    "cpython:cache-off": "CPython cache off",
    "cpython:cache-on": "CPython cache on",
    "cpython:cache-on+colocate": "CPython cache on, colocated",
}
OWN = "frameproof"


def _pct(part, whole):
    return 100.0 * part / whole if whole else 0.0


def _columns(doc):
    """(label, [configurations]) per column: frameproof's configurations
    without a label of their own share one column."""
    cols, rest = [], []
    for name in doc["configurations"]:
        if name in LABELS:
            cols.append((LABELS[name], [name]))
        elif name.startswith(OWN + ":") or name == OWN:
            rest.append(name)
        else:
            cols.append((name.replace("austin", "austin 3.7") if name == "austin" else name, [name]))
    if rest:
        at = max((k + 1 for k, (_, names) in enumerate(cols) if names[0].startswith(OWN)), default=0)
        names = ", ".join("`%s`" % n.split(":", 1)[-1] for n in rest)
        label = ("the other frameproof configuration (%s)" if len(rest) == 1 else
                 "the other %d frameproof configurations (%%s)" % len(rest)) % names
        cols.insert(at, (label, rest))
    return cols


def _sum(doc, names, interp=None):
    total = _cell()
    for n in names:
        for i, c in doc["cells"].get(n, {}).items():
            if interp is None or i == interp:
                for k in total:
                    total[k] += c.get(k, 0)
    return total


def _fmt(c):
    errored = ", %d errored" % c["errors"] if c["errors"] else ""
    if not c["cases"]:
        return errored[2:] if errored else "n/a"
    return "%d, **%d**, %.1f %%%s" % (c["samples"], c["wrong"], _pct(c["rejected"], c["samples"]), errored)


def _budget_words(doc):
    words = []
    for b in doc["budgets"]:
        who = ", ".join(b["configurations"]) if len(b["configurations"]) <= 3 else \
            "%d configurations (%s ...)" % (len(b["configurations"]), b["configurations"][0])
        words.append("%s: %s samples or %g s per scenario" % (who, b["samples"], b["duration_s"]))
    return "; ".join(words)


def markdown(doc):
    """The table of a live-field.json document, with its date and command."""
    cols = _columns(doc)
    lines = [f"{doc['date']} on {doc['commit']}: `{doc['command']}` ({doc['seconds'] / 60:.0f} minutes; "
             f"{_budget_words(doc)}). Each cell: samples, **wrong** (a stack the target never had, returned as a "
             "success), rejected (reported as failed) over every live scenario that applies; n/a: the "
             "configuration does not run there.", "",
             "| interpreter | " + " | ".join(label for label, _ in cols) + " |",
             "|---|" + "---|" * len(cols)]
    for i in doc["interpreters"]:
        lines.append("| %s | %s |" % (i, " | ".join(_fmt(_sum(doc, names, i)) for _, names in cols)))
    lines.append("| **all** | %s |" % " | ".join(_fmt(_sum(doc, names)) for _, names in cols))
    wrong = []
    for label, names in cols:
        per = {}
        for n in names:
            for s, w in doc["wrong_by_scenario"].get(n, {}).items():
                per[s] = per.get(s, 0) + w
        if per:
            wrong.append("%s: %s" % (label, ", ".join("`%s` %d" % (s, w) for s, w in
                                                       sorted(per.items(), key=lambda kv: -kv[1]))))
    lines.append("")
    lines.append("Wrong samples by scenario: " + ("; ".join(wrong) if wrong else "none") + ".")
    errs = doc.get("errors", [])
    if errs:
        lines.append("")
        lines.append("Errored (case, configuration: error): " +
                     "; ".join("%s: %s" % (e["case"], e["error"]) for e in errs) + ".")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(prog="ci/live_table.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("reports", nargs="+", help="live.json of each part")
    ap.add_argument("--command", required=True, help="the command that made the reports, as the table quotes it")
    ap.add_argument("--commit", help="the commit whose build made the reports (default: the checkout's HEAD)")
    ap.add_argument("--date", help="when the run ended, as YYYY-MM-DD HH:MM UTC (default: now)")
    args = ap.parse_args(argv)
    reports = []
    for path in args.reports:
        with open(path, encoding="utf-8") as f:
            reports.append(json.load(f))
    commit, date = result_file.stamp(args.commit, args.date)
    try:
        doc = summarize(reports, args.command, commit, date)
    except ValueError as e:
        print(f"ci/live_table.py: {e}; not a state of the field", file=sys.stderr)
        return 1
    result_file.write(args.out, doc)
    sys.stdout.write(markdown(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
