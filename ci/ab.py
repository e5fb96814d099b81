"""Two frameproof builds alternating on one running target (ci/ab)."""
import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (targets and runs: shared with ci/bench)

DEFAULT_IDS = ("3.11", "3.13", "3.15")
DEFAULT_ROUNDS = 5
DEFAULT_SAMPLES = 10000
def say(msg):
    print("ab: " + msg, file=sys.stderr, flush=True)


FIGURES = (("failed", "failed samples"), ("p50_us", "p50 us"), ("reads", "reads"), ("bytes", "bytes"))


def one_run(fp, pid, samples):
    d = bench.run_json([fp, "bench", "--pid", str(pid), "--samples", str(samples), "--json"],
                       "%s bench" % fp)
    return {"failed": d["failed"], "samples": d["samples"], "p50_us": d["p50_us"],
            "reads": d["reads_p50"], "bytes": d["bytes_p50"]}


def measure(interp, builds, rounds, samples):
    p, name = bench.start_target(interp, bench.LIVE_SHAPE)
    runs = {label: [] for label, _ in builds}
    try:
        for r in range(rounds):
            order = builds if r % 2 == 0 else builds[::-1]
            for label, fp in order:
                if p.poll() is not None:
                    raise bench.BenchError("target %s exited (status %s)" % (name, p.returncode))
                runs[label].append(one_run(fp, p.pid, samples))
                say("%s round %d/%d, %s: %d failed of %d" % (interp.id, r + 1, rounds, label,
                                                                  runs[label][-1]["failed"], samples))
    finally:
        bench.kill_target(p)
    return runs


def table(results, builds):
    head = "| interpreter | " + " | ".join("%s: %s" % (label, what) for label, _ in builds for _, what in FIGURES)
    lines = [head + " |", "|---|" + "---:|" * (len(builds) * len(FIGURES))]
    for iid, runs in results:
        cells = []
        for label, _ in builds:
            for key, _ in FIGURES:
                cells.append("%g" % statistics.median(x[key] for x in runs[label]))
        lines.append("| %s | %s |" % (iid, " | ".join(cells)))
    return "\n".join(lines)


def main(argv):
    ap = argparse.ArgumentParser(prog="ci/ab", description=__doc__)
    ap.add_argument("--a", required=True, metavar="PATH", help="build A's frameproof binary")
    ap.add_argument("--b", required=True, metavar="PATH", help="build B's frameproof binary")
    ap.add_argument("--python", action="append", metavar="ID",
                    help="interpreter id (repeatable; default: %s where provisioned)" % ", ".join(DEFAULT_IDS))
    ap.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS)
    ap.add_argument("--samples", type=int, default=DEFAULT_SAMPLES)
    ap.add_argument("--json", metavar="FILE", help="write every run here")
    args = ap.parse_args(argv)
    if args.rounds < 1 or args.samples < 1:
        ap.error("--rounds and --samples must be at least 1")
    for path in (args.a, args.b):
        if not os.access(path, os.X_OK):
            ap.error("no frameproof binary at %s" % path)
    manifest, interps = bench.fpfacts.provisioned(bench.fpfacts.load())
    ids = args.python or [i for i in DEFAULT_IDS if i in interps]
    unknown = [i for i in ids if i not in interps]
    if unknown:
        ap.error("not provisioned (%s): %s" % (manifest, ", ".join(unknown)))
    if not ids:
        ap.error("none of %s is provisioned (%s)" % (", ".join(DEFAULT_IDS), manifest))
    builds = (("A", args.a), ("B", args.b))
    command = "ci/ab" + "".join(" " + a for a in argv)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    results, failed = [], False
    for iid in ids:
        interp = bench.Interp(interps[iid])
        interp.prepare()
        try:
            results.append((iid, measure(interp, builds, args.rounds, args.samples)))
        except bench.BenchError as e:
            say("error: %s" % e)
            failed = True
        finally:
            interp.cleanup()
    print("%s — `%s` — %d cores; A = %s, B = %s; median of %d rounds of %d samples\n\n%s" % (
        started, command, os.cpu_count(), args.a, args.b, args.rounds, args.samples, table(results, builds)))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"date": started, "command": command, "a": args.a, "b": args.b,
                       "results": {iid: runs for iid, runs in results}}, f, indent=1)
    return 1 if failed or not results else 0


if __name__ == "__main__":
    bench.run_main(main, "ab")
