"""ci/overhead.py — what sampling costs the target (see ci/overhead): a
fixed amount of work (targets/bench/fixed_work.py, timed from inside) run
alone and under `frameproof record` in each mode at each rate, the runs of
one round alternating so that drift in the machine's speed falls on every
mode alike; the slowdown of a mode is its median time over the median time
alone, less one.  Also gives the share of ticks each mode kept (thread
samples of the work's threads over ticks scheduled)."""
import argparse
import datetime
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
import fpfacts  # noqa: E402

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
                                  "missed": summary["missed_ticks"], "kept": summary["thread_samples"]}


def markdown(doc):
    """The table of an overhead.json document, with its date and command."""
    lines = [f"What record costs the target, {doc['date']} on {doc['commit']}: `{doc['command']}` "
             f"({doc['rounds']} rounds, median of each; fixed work timed from inside)", "",
             "| interpreter | rate | mode | work alone | under record | slowdown | ticks missed | "
             "thread samples per tick |", "|---|---:|---|---:|---:|---:|---:|---:|"]
    for r in doc["rows"]:
        missed = 100.0 * r["ticks_missed"] / r["ticks_scheduled"] if r["ticks_scheduled"] else 0.0
        lines.append("| %s | %d Hz | %s | %.3f s | %.3f s | %+.1f %% | %.2f %% | %.3f |" % (
            r["interpreter"], r["rate_hz"], r["mode"], r["alone_s"], r["median_s"], r["slowdown_pct"], missed,
            r["kept_per_tick"] or 0.0))
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
            alone, under = [], {(m, r): [] for m in MODES for r in rates}
            ticks = {(m, r): [] for m in MODES for r in rates}
            for k in range(args.rounds):
                say("overhead: %s round %d of %d" % (ident, k + 1, args.rounds))
                alone.append(run_alone(cmd))
                for rate in rates:
                    for mode, flags in MODES.items():
                        t, info = run_recorded(args.frameproof, flags, rate, cmd)
                        under[(mode, rate)].append(t)
                        ticks[(mode, rate)].append(info)
            base = statistics.median(alone)
            for (mode, rate), times in under.items():
                infos = ticks[(mode, rate)]
                sched = sum(i["scheduled"] for i in infos)
                kept = sum(i["kept"] for i in infos)
                rows.append({"interpreter": ident, "mode": mode, "rate_hz": rate, "threads": args.threads,
                             "alone_s": base, "median_s": statistics.median(times),
                             "slowdown_pct": 100.0 * (statistics.median(times) / base - 1.0),
                             "runs_s": times, "alone_runs_s": alone, "ticks_scheduled": sched,
                             "ticks_missed": sum(i["missed"] for i in infos),
                             "kept_per_tick": kept / (sched * args.threads) if sched else None})
        finally:
            work.close()
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    doc = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "commit": commit,
           "command": "ci/overhead " + " ".join(sys.argv[1:]), "rounds": args.rounds, "work": args.work, "rows": rows}
    os.makedirs(args.report_dir, exist_ok=True)
    with open(os.path.join(args.report_dir, "overhead.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    print(markdown(doc), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
