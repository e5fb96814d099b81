"""ci/overhead.py — what sampling costs the target (see ci/overhead): a
fixed amount of work (targets/bench/fixed_work.py, timed from inside) run
under `frameproof record` in each mode at each rate, each such run paired
with a run of the same work alone right beside it (alone first in even
rounds, second in odd ones), so that the machine's speed, which drifts by
tens of per cent over minutes, is nearly the same for both halves of a
pair; the slowdown of a mode is the median over its pairs of (time under
record / time alone - 1), with the spread of those pairs beside it.  Also
gives the share of the run the samples held the target (record's own
held_s over its elapsed_s) and the share of ticks each mode kept (thread
samples of the work's threads over ticks scheduled)."""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "facts"))
sys.path.insert(0, HERE)
import fpfacts  # noqa: E402
import result_file  # noqa: E402

WORK = os.path.join(ROOT, "targets", "bench", "fixed_work.py")
MODES = {"default": [], "--no-hold": ["--no-hold"],
         "plain (--no-colocate --no-pause-torn)": ["--no-colocate", "--no-pause-torn"], "--blocking": ["--blocking"]}
DEFAULT_PYTHONS = ["3.11", "3.15"]
DEFAULT_RATES = [1000, 10000]
DEFAULT_ROUNDS = 5
DEFAULT_WORK_ROUNDS = 1500   # about 2 s of work on 3.11 on this class of machine
RUN_TIMEOUT_S = 600


def say(msg):
    print(msg, file=sys.stderr, flush=True)


class Work:
    """fixed_work.py placed in an interpreter's root."""

    def __init__(self, entry):
        self.root = entry.get("root", "/")
        self.argv = list(entry["argv"])
        self.dir = tempfile.mkdtemp(prefix="fp-overhead-", dir=os.path.join(self.root, "tmp"))
        shutil.copy(WORK, self.dir)
        self.script = "/tmp/" + os.path.basename(self.dir) + "/fixed_work.py"

    def command(self, rounds, threads):
        prefix = ["chroot", self.root] if self.root != "/" else []
        return prefix + self.argv + [self.script, str(rounds), str(threads)]

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def seconds_of(stdout):
    for line in stdout.splitlines():
        if line.startswith("{"):
            return json.loads(line)["seconds"]
    raise RuntimeError("the work printed no timing: %r" % stdout[-200:])


def run_alone(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    if r.returncode != 0:
        raise RuntimeError("the work failed alone: %s" % r.stderr[-300:])
    return seconds_of(r.stdout)


def run_recorded(fp, flags, rate, cmd):
    """(seconds of work, the `summary` record of record's json output)."""
    out = tempfile.NamedTemporaryFile(prefix="fp-overhead-", suffix=".jsonl", delete=False)
    out.close()
    try:
        r = subprocess.run([fp, "record", "--no-progress", "--format", "json", "--rate", str(rate), "-o", out.name] +
                           flags + ["--"] + cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        if r.returncode != 0:
            raise RuntimeError("record %s failed: %s" % (" ".join(flags), r.stderr[-300:]))
        with open(out.name, encoding="utf-8") as f:
            summary = [json.loads(line) for line in f if '"summary"' in line][-1]
    finally:
        os.unlink(out.name)
    return seconds_of(r.stdout), {"scheduled": summary["attempts"] + summary["missed_ticks"],
                                  "missed": summary["missed_ticks"], "kept": summary["thread_samples"],
                                  "held": summary["held_s"] / summary["elapsed_s"] if summary["elapsed_s"] else 0.0}


def pair(fp, flags, rate, cmd, alone_first):
    """(seconds alone, seconds under record, record's info) of one pair."""
    if alone_first:
        alone = run_alone(cmd)
        t, info = run_recorded(fp, flags, rate, cmd)
    else:
        t, info = run_recorded(fp, flags, rate, cmd)
        alone = run_alone(cmd)
    return alone, t, info


def quartiles(values):
    """(first quartile, third quartile) of values (inclusive method)."""
    if len(values) < 2:
        return values[0], values[0]
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], q[2]


def markdown(doc):
    """The table of an overhead.json document, with its date and command."""
    lines = [f"What record costs the target, {doc['date']} on {doc['commit']}: `{doc['command']}` "
             f"({doc['rounds']} pairs of runs per row, alone and under record side by side; fixed work timed "
             "from inside; slowdown: the median pair, and the middle half of the pairs)", "",
             "| interpreter | rate | mode | work alone | under record | slowdown | middle half | held | "
             "ticks missed | thread samples per tick |", "|---|---:|---|---:|---:|---:|---|---:|---:|---:|"]
    for r in doc["rows"]:
        missed = 100.0 * r["ticks_missed"] / r["ticks_scheduled"] if r["ticks_scheduled"] else 0.0
        q1, q3 = r["slowdown_quartiles_pct"]
        lines.append("| %s | %d Hz | %s | %.3f s | %.3f s | %+.1f %% | %+.1f to %+.1f %% | %.1f %% | %.2f %% | %.3f |" % (
            r["interpreter"], r["rate_hz"], r["mode"], r["alone_s"], r["median_s"], r["slowdown_pct"], q1, q3,
            r["held_pct"], missed, r["kept_per_tick"] or 0.0))
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(prog="ci/overhead", description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", action="append", help="interpreter id (repeatable; default %s)" % DEFAULT_PYTHONS)
    ap.add_argument("--rate", action="append", type=int, help="sampling rate in Hz (repeatable; default %s)" %
                    DEFAULT_RATES)
    ap.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS, help="runs of each mode (default %(default)s)")
    ap.add_argument("--work", type=int, default=DEFAULT_WORK_ROUNDS, help="rounds of work per run "
                    "(default %(default)s)")
    ap.add_argument("--threads", type=int, default=1, help="threads doing the work (default %(default)s)")
    ap.add_argument("--frameproof", default=os.path.join(ROOT, "build", "frameproof"))
    ap.add_argument("--report-dir", default=os.path.join(ROOT, "overhead-report"))
    args = ap.parse_args()
    facts = fpfacts.load()
    manifest, have = fpfacts.provisioned(facts)
    ids = args.python or DEFAULT_PYTHONS
    missing = [i for i in ids if i not in have]
    if missing:
        sys.exit("ci/overhead: not provisioned (no entry in %s): %s" % (manifest, ", ".join(missing)))
    rates = args.rate or DEFAULT_RATES
    rows = []
    for ident in ids:
        work = Work(have[ident])
        try:
            cmd = work.command(args.work, args.threads)
            keys = [(m, r) for r in rates for m in MODES]
            alone, under, infos = ({k: [] for k in keys} for _ in range(3))
            for k in range(args.rounds):
                say("overhead: %s round %d of %d" % (ident, k + 1, args.rounds))
                for mode, rate in keys:
                    a, t, info = pair(args.frameproof, MODES[mode], rate, cmd, alone_first=k % 2 == 0)
                    alone[(mode, rate)].append(a)
                    under[(mode, rate)].append(t)
                    infos[(mode, rate)].append(info)
            for key in keys:
                mode, rate = key
                slowdowns = [100.0 * (t / a - 1.0) for a, t in zip(alone[key], under[key])]
                sched = sum(i["scheduled"] for i in infos[key])
                kept = sum(i["kept"] for i in infos[key])
                rows.append({"interpreter": ident, "mode": mode, "rate_hz": rate, "threads": args.threads,
                             "alone_s": statistics.median(alone[key]), "median_s": statistics.median(under[key]),
                             "slowdown_pct": statistics.median(slowdowns),
                             "slowdown_quartiles_pct": list(quartiles(slowdowns)), "pair_slowdowns_pct": slowdowns,
                             "held_pct": 100.0 * statistics.median(i["held"] for i in infos[key]),
                             "runs_s": under[key], "alone_runs_s": alone[key], "ticks_scheduled": sched,
                             "ticks_missed": sum(i["missed"] for i in infos[key]),
                             "kept_per_tick": kept / (sched * args.threads) if sched else None})
        finally:
            work.close()
    commit, date = result_file.stamp()
    doc = {"date": date, "commit": commit, "command": "ci/overhead " + " ".join(sys.argv[1:]),
           "rounds": args.rounds, "work": args.work, "rows": rows}
    os.makedirs(args.report_dir, exist_ok=True)
    result_file.write(os.path.join(args.report_dir, "overhead.json"), doc)
    print(markdown(doc), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
