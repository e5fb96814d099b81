"""ci/record_rate.py — the achieved rate of `frameproof record` (see
ci/record-rate): on the provisioned CPython 3.15, parked targets of 1 thread
x 8 frames and 16 threads x 32 frames (targets/bench/parked.py) and running
targets of 1 and 16 threads (targets/bench/running.py: every thread keeps
changing its stack, and 16 threads contend for the GIL), started as ci/bench
starts them, each recorded by pid for DURATION seconds at every rate of
RATES and at MAX_PROBE_HZ (a rate no sample keeps up with: what it achieves
is the maximum), with every thread's stack resolved; the achieved rate and
the missed ticks come from record's own summary.  --realtime measures each
mode again with `record --realtime` (SCHED_FIFO; at RATES only)."""
import argparse
import importlib.util
import os
import re
import signal
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("bench", os.path.join(HERE, "bench.py"))
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)
sys.path.insert(0, os.path.join(bench.REPO, "facts"))
import fpfacts  # noqa: E402

SHAPES = ((1, 8), (16, 32), (bench.LIVE, 1), (bench.LIVE, 16))
RATES = (100, 1000)
MAX_PROBE_HZ = 100000
DEFAULT_DURATION_S = 10.0
RECORD_TIMEOUT_PAD_S = 60
ACHIEVED = re.compile(r"([\d.]+) Hz achieved of ([\d.]+) requested, (\d+) missed \(([\d.]+) %\)")
KEPT = re.compile(r"thread samples kept: (\d+)")
TORN = re.compile(r"threads walked again after the target changed under them: (\d+)")


def record(fp, pid, rate, duration, blocking, realtime):
    cmd = [fp, "record", "--no-progress", "--pid", str(pid), "--rate", str(rate), "--duration", str(duration),
           "-o", os.devnull]
    if blocking:
        cmd.append("--blocking")
    if realtime:
        cmd.append("--realtime")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + RECORD_TIMEOUT_PAD_S)
    m, k, t = ACHIEVED.search(r.stderr), KEPT.search(r.stderr), TORN.search(r.stderr)
    if r.returncode != 0 or not m:
        raise bench.BenchError("record at %s Hz failed: %s" % (rate, r.stderr.strip()[-300:]))
    return {"requested_hz": float(m.group(2)), "achieved_hz": float(m.group(1)), "missed": int(m.group(3)),
            "missed_pct": float(m.group(4)), "thread_samples": int(k.group(1)) if k else 0,
            "torn_walks": int(t.group(1)) if t else 0}


def modes(args):
    """(blocking, realtime) pairs to measure, default mode first."""
    return [(b, rt) for rt in ((False, True) if args.realtime else (False,))
            for b in ((False, True) if args.blocking else (False,))]


def main():
    ap = argparse.ArgumentParser(prog="ci/record-rate", description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=DEFAULT_DURATION_S)
    ap.add_argument("--blocking", action="store_true", help="also measure record --blocking")
    ap.add_argument("--realtime", action="store_true",
                    help="also measure each mode with record --realtime (at RATES only: as fast as it goes at "
                         "real-time priority would hold a CPU for the whole duration)")
    ap.add_argument("--frameproof", default=os.path.join(bench.REPO, "build", "frameproof"))
    args = ap.parse_args()
    facts = fpfacts.load()
    manifest, provisioned = fpfacts.provisioned(facts)
    if bench.REFERENCE_ID not in provisioned:
        sys.exit(f"ci/record-rate: interpreter {bench.REFERENCE_ID} is not provisioned ({manifest})")
    interp = bench.Interp(provisioned[bench.REFERENCE_ID])
    interp.prepare()
    rows = []
    try:
        for shape in SHAPES:
            p, name = bench.start_target(interp, shape)
            try:
                for blocking, realtime in modes(args):
                    for rate in RATES + (() if realtime else (MAX_PROBE_HZ,)):
                        bench.say(f"record {name} at {rate} Hz{' --blocking' if blocking else ''}"
                                  f"{' --realtime' if realtime else ''}")
                        row = record(args.frameproof, p.pid, rate, args.duration, blocking, realtime)
                        row.update(shape=bench.shape_name(shape), blocking=blocking, realtime=realtime)
                        rows.append(row)
            finally:
                bench.kill_target(p)
    finally:
        bench.kill_all_targets()
        interp.cleanup()
    print(f"`frameproof record --pid PID --rate HZ --duration {args.duration:g}` on CPython {interp.version} "
          f"targets: parked (threads x frames) and running (threads); {MAX_PROBE_HZ} Hz = as fast as it goes\n")
    print("| shape | mode | requested Hz | achieved Hz | achieved % | missed ticks | thread samples |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        req = "max" if r["requested_hz"] == MAX_PROBE_HZ else "%g" % r["requested_hz"]
        pct = "" if req == "max" else "%.2f" % (100.0 * r["achieved_hz"] / r["requested_hz"])
        mode = ("blocking" if r["blocking"] else "default") + (", realtime" if r["realtime"] else "")
        print(f"| {r['shape']} | {mode} | {req} | {r['achieved_hz']:.1f} | "
              f"{pct} | {r['missed'] if req != 'max' else ''} | {r['thread_samples']} |")
    return 0


if __name__ == "__main__":
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda s, f: (bench.kill_all_targets(), sys.exit(128 + s)))
    try:
        sys.exit(main())
    except bench.BenchError as e:
        sys.exit(f"ci/record-rate: {e}")
