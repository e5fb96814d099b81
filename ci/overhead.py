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
samples of the work's threads over ticks scheduled), and, from the kernel's
account of the work's threads (fixed_work.py), the share of the work's time
they waited for a CPU while ready to run, alone and under record — the
time the sampler took from them, which drift does not move — and the
median pair's change in the CPU time they ran (the caches a sampler
disturbs)."""
import argparse
import functools
import json
import os
import shlex
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
# ci/overhead --probe: parts of the default's tick alone (targets/bench/tick_probe.c).
PROBE_MODES = {"probe: wake on its CPU": "wake", "probe: wake + hold": "hold",
               "probe: wake + hold + 2 reads": "read"}
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


def timing_of(stdout):
    """fixed_work.py's line: seconds, threads, cpu_s, waited_s."""
    for line in stdout.splitlines():
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError("the work printed no timing: %r" % stdout[-200:])


def run_alone(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    if r.returncode != 0:
        raise RuntimeError("the work failed alone: %s" % r.stderr[-300:])
    return timing_of(r.stdout)


def run_recorded(fp, flags, rate, cmd):
    """(the work's timing, the `summary` record of record's json output)."""
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
    return timing_of(r.stdout), {"scheduled": summary["attempts"] + summary["missed_ticks"],
                                  "missed": summary["missed_ticks"], "kept": summary["thread_samples"],
                                  "held": summary["held_s"] / summary["elapsed_s"] if summary["elapsed_s"] else 0.0}


def run_probed(probe, what, rate, cmd):
    """(the work's timing, info) with tick_probe doing `what` on the work's
    CPU at rate from just after the work starts until it ends."""
    work = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    p = subprocess.Popen([probe, str(work.pid), str(rate), what], stderr=subprocess.PIPE, text=True)
    out, err = work.communicate(timeout=RUN_TIMEOUT_S)
    _, perr = p.communicate(timeout=RUN_TIMEOUT_S)
    if work.returncode != 0:
        raise RuntimeError("the work failed under the probe: %s" % err[-300:])
    if p.returncode != 0:
        raise RuntimeError("tick_probe %s failed: %s" % (what, perr[-300:]))
    return timing_of(out), {"scheduled": 0, "missed": 0, "kept": 0, "held": 0.0}


def runners(fp, probe):
    """{mode: runner(rate, cmd) -> (the work's timing, info)}: record with
    each mode's flags, and with probe (tick_probe's path, or None) its
    rows too."""
    out = {name: functools.partial(run_recorded, fp, flags) for name, flags in MODES.items()}
    if probe:
        out.update({name: functools.partial(run_probed, probe, what) for name, what in PROBE_MODES.items()})
    return out


def pair(runner, rate, cmd, alone_first):
    """(timing alone, timing under runner, info) of one pair."""
    if alone_first:
        alone = run_alone(cmd)
        t, info = runner(rate, cmd)
    else:
        t, info = runner(rate, cmd)
        alone = run_alone(cmd)
    return alone, t, info


def waited_pct(timing):
    """The share of the work's time its threads waited for a CPU, or None."""
    w = timing.get("waited_s")
    return None if w is None or not timing["seconds"] else 100.0 * w / (timing["seconds"] * timing["threads"])


def median_or_none(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def quartiles(values):
    """(first quartile, third quartile) of values (inclusive method)."""
    if len(values) < 2:
        return values[0], values[0]
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], q[2]


def row(ident, mode, rate, threads, alone, under, infos):
    """The result row of one (mode, rate): alone, under and infos the
    pairs' timings and infos, in the same order."""
    slowdowns = [100.0 * (t["seconds"] / a["seconds"] - 1.0) for a, t in zip(alone, under)]
    cpu = [100.0 * (t["cpu_s"] / a["cpu_s"] - 1.0) for a, t in zip(alone, under) if t.get("cpu_s") and a.get("cpu_s")]
    sched = sum(i["scheduled"] for i in infos)
    kept = sum(i["kept"] for i in infos)
    return {"interpreter": ident, "mode": mode, "rate_hz": rate, "threads": threads,
            "alone_s": statistics.median(a["seconds"] for a in alone),
            "median_s": statistics.median(t["seconds"] for t in under),
            "slowdown_pct": statistics.median(slowdowns),
            "slowdown_quartiles_pct": list(quartiles(slowdowns)), "pair_slowdowns_pct": slowdowns,
            "held_pct": 100.0 * statistics.median(i["held"] for i in infos),
            "waited_alone_pct": median_or_none(waited_pct(a) for a in alone),
            "waited_pct": median_or_none(waited_pct(t) for t in under),
            "cpu_slowdown_pct": statistics.median(cpu) if cpu else None,
            "runs": under, "alone_runs": alone, "ticks_scheduled": sched,
            "ticks_missed": sum(i["missed"] for i in infos),
            "kept_per_tick": kept / (sched * threads) if sched else None}


def markdown(doc):
    """The table of an overhead.json document, with its date and command."""
    lines = [f"What record costs the target, {doc['date']} on {doc['commit']}: `{doc['command']}` "
             f"({doc['rounds']} pairs of runs per row, alone and under record side by side; fixed work timed "
             "from inside; slowdown: the median pair, and the middle half of the pairs)", "",
             "| interpreter | rate | mode | work alone | under record | slowdown | middle half | held | "
             "waited alone | waited under record | CPU time | ticks missed | thread samples per tick |",
             "|---|---:|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|"]

    def pct(v, fmt="%.1f %%"):
        return "—" if v is None else fmt % v
    for r in doc["rows"]:
        missed = 100.0 * r["ticks_missed"] / r["ticks_scheduled"] if r["ticks_scheduled"] else 0.0
        q1, q3 = r["slowdown_quartiles_pct"]
        sampled = bool(r["ticks_scheduled"])   # the probe's rows take no samples
        lines.append("| %s | %d Hz | %s | %.3f s | %.3f s | %+.1f %% | %+.1f to %+.1f %% | %s | %s | %s | %s | "
                     "%s | %s |" % (
                         r["interpreter"], r["rate_hz"], r["mode"], r["alone_s"], r["median_s"], r["slowdown_pct"],
                         q1, q3, pct(r["held_pct"] if sampled else None), pct(r.get("waited_alone_pct"), "%.2f %%"),
                         pct(r.get("waited_pct"), "%.2f %%"), pct(r.get("cpu_slowdown_pct"), "%+.1f %%"),
                         pct(missed if sampled else None, "%.2f %%"),
                         pct(r["kept_per_tick"] if sampled else None, "%.3f")))
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
    ap.add_argument("--probe", action="store_true",
                    help="add rows of tick_probe (targets/bench/tick_probe.c) doing parts of the default's tick "
                         "on the work's CPU, without frameproof: waking there, and the hold, and two reads")
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
    probe = None
    if args.probe:
        probe = os.path.join(os.path.dirname(os.path.abspath(args.frameproof)), "targets", "tick_probe")
        if not os.access(probe, os.X_OK):
            sys.exit("ci/overhead: --probe: no %s (it is built beside frameproof)" % probe)
    modes = runners(args.frameproof, probe)
    rows = []
    for ident in ids:
        work = Work(have[ident])
        try:
            cmd = work.command(args.work, args.threads)
            keys = [(m, r) for r in rates for m in modes]
            alone, under, infos = ({k: [] for k in keys} for _ in range(3))
            for k in range(args.rounds):
                say("overhead: %s round %d of %d" % (ident, k + 1, args.rounds))
                for mode, rate in keys:
                    a, t, info = pair(modes[mode], rate, cmd, alone_first=k % 2 == 0)
                    alone[(mode, rate)].append(a)
                    under[(mode, rate)].append(t)
                    infos[(mode, rate)].append(info)
            rows += [row(ident, mode, rate, args.threads, alone[(mode, rate)], under[(mode, rate)],
                         infos[(mode, rate)]) for mode, rate in keys]
        finally:
            work.close()
    commit, date = result_file.stamp()
    doc = {"date": date, "commit": commit, "command": "ci/overhead " + shlex.join(result_file.public_args(sys.argv[1:])),
           "rounds": args.rounds, "work": args.work, "rows": rows}
    os.makedirs(args.report_dir, exist_ok=True)
    result_file.write(os.path.join(args.report_dir, "overhead.json"), doc)
    print(markdown(doc), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
