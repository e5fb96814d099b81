"""ci/live_table.py sums live reports as the live table claims (TAP): a
cell is the samples, wrong and rejected of one configuration over the
scenarios of one interpreter; a configuration that did not run there is
n/a, not zero; a wrong sample shows in its cell, in the total and in the
list by scenario; an errored case is counted and named, not dropped; an
interrupted report is refused.
usage: test_live_table.py SOURCE_DIR"""
import os
import sys

SOURCE = sys.argv[1]
sys.path.insert(0, os.path.join(SOURCE, "ci"))
sys.path.insert(0, os.path.join(SOURCE, "tests", "cli"))
import live_table  # noqa: E402
from tap_results import check, report  # noqa: E402


def config(name, samples, wrong, rejected, status="pass"):
    return {"name": name, "status": status, "samples": samples, "wrong": wrong, "rejected": rejected}


def case(interp, scenario, *configs, status="pass"):
    return {"interpreter": interp, "scenario": scenario, "status": status, "unwinders": list(configs)}


ALL = {"seconds": 60.0, "options": {"samples": 3000, "duration": 2},
       "cases": [case("3.11", "a", config("frameproof:vm+cache", 100, 0, 40), config("frameproof:vm+nocache", 50, 0, 5)),
                 case("3.11", "b", config("frameproof:vm+cache", 200, 0, 10), config("frameproof:vm+nocache", 60, 0, 6)),
                 case("3.15", "a", config("frameproof:vm+cache", 300, 0, 30), config("frameproof:vm+nocache", 70, 0, 7)),
                 case("3.15", "skipped", config("frameproof:vm+cache", 9, 9, 9), status="skip")]}
PEER = {"seconds": 30.0, "options": {"samples": 20000, "duration": 10},
        "cases": [case("3.11", "a", config("cpython:cache-off", 0, 0, 0, status="n/a")),
                  case("3.15", "a", config("cpython:cache-off", 1000, 7, 100)),
                  case("3.15", "b", config("cpython:cache-off", 1000, 3, 0))]}

doc = live_table.summarize([ALL, PEER], "ci/live --part all --part cpython", "abc1234", "2026-12-03 00:00 UTC")
md = live_table.markdown(doc)
rows = {line.split(" | ")[0].strip("| *"): line for line in md.splitlines() if line.startswith("| ")}
check("a cell sums one configuration over an interpreter's scenarios",
      doc["cells"]["frameproof:vm+cache"]["3.11"] == {"samples": 300, "wrong": 0, "rejected": 50, "cases": 2, "errors": 0},
      str(doc["cells"]["frameproof:vm+cache"]))
check("a skipped case counts nowhere", doc["cells"]["frameproof:vm+cache"]["3.15"]["samples"] == 300,
      str(doc["cells"]["frameproof:vm+cache"]["3.15"]))
check("the 3.11 row: the default's cell and n/a where the peer did not run",
      "| 300, **0**, 16.7 % |" in rows["3.11"] and rows["3.11"].endswith("| n/a |"), rows.get("3.11", md))
check("the 3.15 row: the peer's wrong samples", rows["3.15"].endswith("| 2000, **10**, 5.0 % |"), rows.get("3.15", md))
check("the total row sums every interpreter", "| 600, **0**, 13.3 % |" in rows["all"] and
      rows["all"].endswith("| 2000, **10**, 5.0 % |"), rows.get("all", md))
check("wrong samples are listed by scenario", "CPython cache off: `a` 7, `b` 3" in md, md)
check("the other frameproof configurations share a column", "| the other frameproof configuration (`vm+nocache`) |" in md, md)
try:
    live_table.summarize([dict(ALL, interrupted=True)], "x", "y", "z")
    check("an interrupted report is refused", False, "summarized")
except ValueError:
    check("an interrupted report is refused", True)
check("no errored case, no list of errors", "Errored" not in md, md)
# An errored case (the target failed to start) counts in its cell and is named.
ERR = {"seconds": 5.0, "options": {"samples": 3000, "duration": 2},
       "cases": [dict(case("3.13", "a", config("frameproof:vm+cache", 0, 0, 0, status="not_run"), status="error"),
                      error="target exited with status 1"),
                 case("3.11", "c", config("frameproof:vm+cache", 0, 0, 0, status="not_run"), status="error")]}
edoc = live_table.summarize([ALL, ERR], "c", "abc1234", "2026-12-03 00:00 UTC")
emd = live_table.markdown(edoc)
erows = {line.split(" | ")[0].strip("| *"): line for line in emd.splitlines() if line.startswith("| ")}
check("an errored case alone makes its cell errored, not n/a", "| 1 errored |" in erows.get("3.13", ""), emd)
check("an errored case beside counted ones is added to the cell",
      "| 300, **0**, 16.7 %, 1 errored |" in erows.get("3.11", ""), emd)
check("the total row counts every errored case", "| 600, **0**, 13.3 %, 2 errored |" in erows.get("all", ""), emd)
check("each errored case is named with its error",
      "3.13 a frameproof:vm+cache: target exited with status 1" in emd and "3.11 c frameproof:vm+cache: no message" in emd,
      emd)
# The check can fail: a report with one more wrong sample changes the table.
worse = {**PEER, "cases": PEER["cases"] + [case("3.15", "c", config("cpython:cache-off", 1, 1, 0))]}
check("one more wrong sample changes the table",
      live_table.markdown(live_table.summarize([ALL, worse], "c", "abc1234", "2026-12-03 00:00 UTC")) != md)
report()
