"""ci/field_table.py — the state of the field as data: what a parked
conformance report (report.json of `frameproof conform` with several
--unwinder) says per unwinder and interpreter, written as a result file
(docs/data/field.json) that ci/render_docs.py renders into the README.

usage: python3 ci/field_table.py REPORT.json OUT.json --command "COMMAND" [--commit HASH]

A cell counts the cases (scenarios) whose verdict for that unwinder was
pass, and those that failed or erred; scenarios that do not apply (skip)
are left out, and a cell whose every case is n/a (the unwinder does not
support that interpreter) is n/a."""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import result_file  # noqa: E402

PASS = "pass"
FAILED = ("fail", "error")
NOT_APPLICABLE = "n/a"


def summarize(report, command, commit, date):
    """The field.json document of a conformance report."""
    interps = [i["id"] for i in report["interpreters"]]
    rows = []
    for u in report["unwinder_names"]:
        row = {}
        for i in interps:
            verdicts = [c.get("verdicts", {}).get(u, c["status"]) for c in report["cases"] if c["interpreter"] == i]
            applicable = [v for v in verdicts if v != "skip"]
            if applicable and all(v == NOT_APPLICABLE for v in applicable):
                row[i] = None
            else:
                row[i] = {"pass": sum(v == PASS for v in applicable), "fail": sum(v in FAILED for v in applicable)}
        rows.append({"unwinder": u, "cells": row})
    return {"date": date, "commit": commit, "command": command, "seconds": report.get("seconds"),
            "scenarios": len(report["scenarios"]), "interpreters": interps, "rows": rows}


NAMES = {"cpython": "cpython (RemoteUnwinder)", "austin": "austin 3.7"}


def markdown(doc):
    """The README's table of a field.json document, with its date and command."""
    lines = [f"{doc['date']} on {doc['commit']}: `{doc['command']}` ({doc['scenarios']} scenarios); each cell: "
             "cases passed/FAILED (every sample of every configuration matched the ground truth on the fields "
             "the unwinder reports; scenarios that do not apply left out; n/a: the unwinder does not support "
             "that interpreter).", "",
             "| unwinder | " + " | ".join(doc["interpreters"]) + " |",
             "|---|" + "---|" * len(doc["interpreters"])]
    for r in doc["rows"]:
        row = r["cells"]
        cells = ["n/a" if row[i] is None else "%d/%d" % (row[i]["pass"], row[i]["fail"]) for i in doc["interpreters"]]
        lines.append("| %s | %s |" % (NAMES.get(r["unwinder"], r["unwinder"]), " | ".join(cells)))
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(prog="ci/field_table.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("report")
    ap.add_argument("out")
    ap.add_argument("--command", required=True, help="the command that made the report, as the table quotes it")
    ap.add_argument("--commit", help="default: the checkout's HEAD")
    args = ap.parse_args(argv)
    with open(args.report, encoding="utf-8") as f:
        report = json.load(f)
    if report.get("interrupted"):
        print("ci/field_table.py: the report is of an interrupted run; not a state of the field", file=sys.stderr)
        return 1
    commit, date = result_file.stamp(args.commit)
    doc = summarize(report, args.command, commit, date)
    result_file.write(args.out, doc)
    sys.stdout.write(markdown(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
