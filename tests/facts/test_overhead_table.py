"""ci/overhead.py's rows and table say what the pairs measured (TAP): the
slowdown is the median pair's, the middle half its quartiles; the waited
columns are the share of the work's time its threads waited for a CPU
(waited_s over seconds x threads), alone and under the sampler; the CPU
time column is the median pair's change; a probe's row, which takes no
samples, shows no held, missed or per-tick figure; and one pair changed
changes the table.
usage: test_overhead_table.py SOURCE_DIR"""
import os
import sys

SOURCE = sys.argv[1]
sys.path.insert(0, os.path.join(SOURCE, "ci"))
sys.path.insert(0, os.path.join(SOURCE, "tests", "cli"))
import overhead  # noqa: E402
from tap_results import check, report  # noqa: E402


def timing(seconds, cpu_s, waited_s, threads=1):
    return {"seconds": seconds, "cpu_s": cpu_s, "waited_s": waited_s, "threads": threads}


ALONE = [timing(1.00, 0.99, 0.001), timing(1.10, 1.08, 0.002), timing(0.90, 0.89, 0.000)]
UNDER = [timing(1.05, 1.01, 0.030), timing(1.21, 1.12, 0.036), timing(0.927, 0.90, 0.027)]
SAMPLED = [{"scheduled": 1000, "missed": 4, "kept": 990, "held": 0.05}, {"scheduled": 1100, "missed": 2, "kept": 1095,
                                                                        "held": 0.06},
           {"scheduled": 900, "missed": 0, "kept": 900, "held": 0.04}]
PROBED = [{"scheduled": 0, "missed": 0, "kept": 0, "held": 0.0}] * 3


def table(rows):
    doc = {"date": "2026-12-04 00:00 UTC", "commit": "abc1234", "command": "ci/overhead", "rounds": 3, "rows": rows}
    return {line.split(" | ")[2]: line for line in overhead.markdown(doc).splitlines()
            if line.startswith("| 3.11 ")}


def cells(line):
    return [c.strip() for c in line.strip("|").split("|")]


sampled = overhead.row("3.11", "default", 1000, 1, ALONE, UNDER, SAMPLED)
probe = overhead.row("3.11", "probe: wake on its CPU", 1000, 1, ALONE, UNDER, PROBED)
# pairs: +5.0 %, +10.0 %, +3.0 % -> median +5.0 %; CPU +2.02 %, +3.70 %, +1.12 % -> +2.02 %;
# waited under: 2.857 %, 2.975 %, 2.913 % -> 2.913 %; alone 0.1 %, 0.18 %, 0 % -> 0.1 %
check("the slowdown is the median pair's", abs(sampled["slowdown_pct"] - 5.0) < 1e-9, sampled["slowdown_pct"])
check("the middle half is the pairs' quartiles",
      [round(q, 6) for q in sampled["slowdown_quartiles_pct"]] == [4.0, 7.5], sampled["slowdown_quartiles_pct"])
check("waited: waited_s over the work's time, median of the runs",
      abs(sampled["waited_pct"] - 100.0 * 0.027 / 0.927) < 1e-9 and abs(sampled["waited_alone_pct"] - 0.1) < 1e-9,
      (sampled["waited_pct"], sampled["waited_alone_pct"]))
check("CPU time: the median pair's change", abs(sampled["cpu_slowdown_pct"] - 100.0 * (1.01 / 0.99 - 1)) < 1e-9,
      sampled["cpu_slowdown_pct"])
check("ticks: scheduled and missed summed, thread samples per tick", sampled["ticks_scheduled"] == 3000 and
      sampled["ticks_missed"] == 6 and abs(sampled["kept_per_tick"] - 2985 / 3000) < 1e-12, sampled)
rows = table([sampled, probe])
got = cells(rows["default"])
check("the table's row of a sampled mode", got == ["3.11", "1000 Hz", "default", "1.000 s", "1.050 s", "+5.0 %",
                                                   "+4.0 to +7.5 %", "5.0 %", "0.10 %", "2.91 %", "+2.0 %",
                                                   "0.20 %", "0.995"], got)
got = cells(rows["probe: wake on its CPU"])
check("a probe's row shows no held, missed or per-tick figure", got[7] == "—" and got[11] == "—" and got[12] == "—"
      and got[9] == "2.91 %", got)
two = [timing(1.00, 0.99, 0.001, threads=2)] * 3
check("waited is per thread of the work", abs(overhead.row("3.11", "x", 1000, 2, two, two, SAMPLED)["waited_pct"] -
                                              0.05) < 1e-9)
moved = list(UNDER)
moved[0] = timing(1.08, 1.01, 0.030)
check("one pair changed changes the table", table([overhead.row("3.11", "default", 1000, 1, ALONE, moved, SAMPLED)])
      ["default"] != rows["default"])
report()
