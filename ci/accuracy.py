"""ci/accuracy.py — the statistical accuracy run (see ci/accuracy)."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "facts"))
sys.path.insert(0, os.path.join(ROOT, "targets", "accuracy"))
import compare  # noqa: E402
import fpfacts  # noqa: E402

WORKLOAD_SCRIPT = os.path.join(ROOT, "targets", "accuracy", "workloads.py")
WORKLOADS = {"alternating": 1, "nested": 1, "shared_leaf": 1, "generator": 1, "threads": 4,
             "syscalls": 1}  # name: threads
TARGET_TVD = 0.02
DEFAULT_SAMPLES = 100000
DEFAULT_RATE = 5000
DEFAULT_UNIT_US = 1000.0
QUICK_SAMPLES, QUICK_RATE = 2000, 1000
SLACK = 1.1            # run this much longer than samples / (rate x threads)
MIN_SECONDS = 1.0
RUN_TIMEOUT_PAD_S = 120
CPYTHON_MINOR = 15     # CPython's profiling.sampling exists from 3.15


class Target:
    """workloads.py placed in an interpreter's root, and where its truth goes."""

    def __init__(self, entry):
        self.entry = entry
        self.root = entry.get("root", "/")
        self.dir = tempfile.mkdtemp(prefix="fp-accuracy-", dir=os.path.join(self.root, "tmp"))
        shutil.copy(WORKLOAD_SCRIPT, self.dir)
        inner = "/tmp/" + os.path.basename(self.dir)
        self.script = inner + "/workloads.py"
        self.truth_inner = inner + "/truth.json"
        self.truth = os.path.join(self.dir, "truth.json")

    def prefix(self):
        return ["chroot", self.root] if self.root != "/" else []

    def argv(self, workload, seconds, seed, unit_us):
        return self.prefix() + list(self.entry["argv"]) + [self.script, workload, "%.3f" % seconds, self.truth_inner,
                                                          str(seed), str(unit_us)]

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def say(msg):
    print(msg, file=sys.stderr, flush=True)


def run(cmd, timeout):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def frameproof_case(args, t, workload, seconds, seed, schedule, flags, out):
    cmd = [args.frameproof, "record", "--no-progress", "--format", "json", "-o", out, "--rate", str(args.rate)]
    if schedule == "poisson":
        cmd += ["--poisson", "--seed", str(seed)]
    cmd += flags + ["--"] + t.argv(workload, seconds, seed, args.unit_us)
    r = run(cmd, seconds + RUN_TIMEOUT_PAD_S)
    if r.returncode != 0:
        return None, r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"
    return compare.record_samples(out), None


def cpython_case(args, t, workload, seconds, seed, out_inner, out):
    cmd = t.prefix() + list(t.entry["argv"]) + ["-m", "profiling.sampling", "run", "-a", "-r", str(args.rate),
                                                "--collapsed", "-o", out_inner] + \
        t.argv(workload, seconds, seed, args.unit_us)[len(t.prefix()) + len(t.entry["argv"]):]
    r = run(cmd, seconds + RUN_TIMEOUT_PAD_S)
    if r.returncode != 0:
        return None, (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
    return compare.cpython_collapsed_samples(out), None


def samplers(args, entry):
    """(name, schedule, record's extra flags; None: CPython's sampler)."""
    out = []
    for schedule in args.schedule:
        modes = [[]] + [[flag] for flag in ("--blocking", "--pause-torn", "--colocate")
                        if getattr(args, flag[2:].replace("-", "_"))]
        for flags in modes + ([m + ["--realtime"] for m in modes] if args.realtime else []):
            out.append((" ".join(["frameproof"] + flags), schedule, flags))
    minor = int(entry.get("version", entry["id"]).split(".")[1].rstrip("t").split("-")[0]) \
        if "." in entry["id"] else 0
    if not args.no_cpython and minor >= CPYTHON_MINOR and not entry["id"].endswith("t"):
        out.append(("cpython profiling.sampling", "fixed", None))
    return out


def main():
    ap = argparse.ArgumentParser(prog="ci/accuracy", description="The statistical accuracy run of frameproof record.")
    ap.add_argument("--python", action="append", help="interpreter id (repeatable; default every provisioned one)")
    ap.add_argument("--workload", action="append", choices=sorted(WORKLOADS), help="(repeatable; default all)")
    ap.add_argument("--samples", type=int, default=DEFAULT_SAMPLES, help="thread samples per case (default %(default)s)")
    ap.add_argument("--rate", type=int, default=DEFAULT_RATE, help="sampling rate in Hz (default %(default)s)")
    ap.add_argument("--unit-us", type=float, default=DEFAULT_UNIT_US,
                    help="length of a unit of work in microseconds (default %(default)s; pieces are 0.5-1.5x "
                         "their weight in units)")
    ap.add_argument("--schedule", action="append", choices=["fixed", "poisson"],
                    help="sampling schedule of frameproof (repeatable; default both)")
    ap.add_argument("--blocking", action="store_true", help="also run frameproof record --blocking")
    ap.add_argument("--pause-torn", action="store_true", help="also run frameproof record --pause-torn")
    ap.add_argument("--colocate", action="store_true",
                    help="also run frameproof record --colocate (from the target thread's CPU)")
    ap.add_argument("--realtime", action="store_true",
                    help="also run each frameproof mode with record --realtime (SCHED_FIFO)")
    ap.add_argument("--no-cpython", action="store_true", help="do not run CPython's profiling.sampling on 3.15")
    ap.add_argument("--quick", action="store_true",
                    help=f"{QUICK_SAMPLES} samples at {QUICK_RATE} Hz (a smoke test, not the reference)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--frameproof", default=os.path.join(ROOT, "build", "frameproof"))
    ap.add_argument("--report-dir", default="accuracy-report")
    args = ap.parse_args()
    if args.quick:
        args.samples, args.rate = QUICK_SAMPLES, QUICK_RATE
    args.schedule = args.schedule or ["fixed", "poisson"]
    facts = fpfacts.load()
    manifest, provisioned = fpfacts.provisioned(facts)
    ids = args.python or [i for i in facts["MATRIX_IDS"].split() if i in provisioned]
    missing = [i for i in ids if i not in provisioned]
    if missing:
        sys.exit(f"ci/accuracy: not provisioned (no entry in {manifest}): {', '.join(missing)}")
    os.makedirs(args.report_dir, exist_ok=True)
    rows, failed = [], False
    started = time.monotonic()
    for ident in ids:
        entry = provisioned[ident]
        for workload in args.workload or list(WORKLOADS):
            seconds = max(MIN_SECONDS, SLACK * args.samples / (args.rate * WORKLOADS[workload]))
            for name, schedule, flags in samplers(args, entry):
                t = Target(entry)
                try:
                    say(f"accuracy: {ident} {workload} {name} {schedule} ({seconds:.0f} s)")
                    out = os.path.join(t.dir, "profile")
                    if flags is None:
                        samples, err = cpython_case(args, t, workload, seconds, args.seed, "/tmp/" +
                                                    os.path.basename(t.dir) + "/profile", out)
                    else:
                        samples, err = frameproof_case(args, t, workload, seconds, args.seed, schedule, flags, out)
                    row = {"interpreter": ident, "workload": workload, "sampler": name, "schedule": schedule,
                           "rate_hz": args.rate, "unit_us": args.unit_us}
                    if err is None:
                        row.update(compare.compare(samples, compare.load_truth(t.truth)))
                        row["within_target"] = row["tvd"] <= TARGET_TVD
                        if name.startswith("frameproof") and not row["within_target"]:
                            failed = True
                    else:
                        row["error"] = err
                        failed = True
                    rows.append(row)
                finally:
                    t.close()
    lines = [f"Total variation distance of each profile from the workload's own accounting "
             f"({args.rate} Hz, units of {args.unit_us:g} us; floor = expected distance from sampling noise alone "
             f"for that many independent samples; target <= {TARGET_TVD}).", "",
             "| interpreter | workload | sampler | schedule | samples | TVD | floor | excess | worst stack (profile / truth) |",
             "|---|---|---|---|---:|---:|---:|---:|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['interpreter']} | {r['workload']} | {r['sampler']} | {r['schedule']} | | | | | "
                         f"error: {r['error']} |")
            continue
        w = r["worst"][0] if r["worst"] else (0, "", 0, 0)
        lines.append(f"| {r['interpreter']} | {r['workload']} | {r['sampler']} | {r['schedule']} | {r['samples']} | "
                     f"{r['tvd']:.4f} | {r['floor']:.4f} | {r['excess']:+.4f} | {w[1]} {w[2]:.3f} / {w[3]:.3f} |")
    table = "\n".join(lines) + "\n"
    print(table)
    with open(os.path.join(args.report_dir, "accuracy.md"), "w", encoding="utf-8") as f:
        f.write(table)
    with open(os.path.join(args.report_dir, "accuracy.json"), "w", encoding="utf-8") as f:
        json.dump({"rate_hz": args.rate, "unit_us": args.unit_us, "samples": args.samples,
                   "seconds": time.monotonic() - started, "rows": rows}, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
