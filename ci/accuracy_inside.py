"""ci/accuracy_inside.py — `ci/accuracy inside`: every profiler of the
real-workload verdict judged against a truth taken inside the target.

The asyncio workload runs under selftimed.py, which times two functions
with perf_counter from inside the same run: the event loop's wait for I/O
(selectors.EpollSelector.select, a system call: long-lived stacks) and
its call_soon (short-lived stacks of about two microseconds, over a fifth
of the run).  A function much shorter than a microsecond cannot be timed
so from inside: the part of its timer's frame outside the timed span
(its call and return) is then a large share of it.  Each one's share of the run's wall time is the
truth for the share of samples whose stack holds its timer's frame, and
no sampler's bias can move it.  The truth is taken from runs without a
profiler (TRUTH_RUNS of them, their mean): a profiler that slows the
target more in one function than in another (a stop that waits for a
system call to end) changes the program it profiles, and that is its
bias too.  The share each profiled run measured inside itself is kept
beside it.  A profiler passes a run when every share is within BOUND of
the truth (relative), or within three standard deviations of sampling
noise when that is wider.  frameproof's default and the reference of
`ci/accuracy real` must pass every run; the drop-torn mutant (the
default's teeth) and the reference stopping the target from another CPU
(the reference's teeth: its stops land on select's system call) must fail
(MUST_FAIL); the other mutant and every other profiler are reported.

usage: ci/accuracy inside [--python ID]... [--runs N] [--scale S]
       [--bound B] [--frameproof PATH] [--report-dir DIR]
Exit status 1 when frameproof's default or the reference fails a run, a
mutant of MUST_FAIL passes, or no run could be made."""
import argparse
import datetime
import json
import math
import os
import shlex
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "targets", "accuracy"))
sys.path.insert(0, os.path.join(ROOT, "facts"))
import real_profilers as rp  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import accuracy_real  # noqa: E402
import result_file  # noqa: E402

DEFAULT_IDS = ["3.11", "3.13", "3.14", "3.15"]
# (MODULE:QUALNAME timed inside, the key leaves.py gives its timer's frame)
FUNCTIONS = [("selectors:EpollSelector.select", ("selftimed.py", "timed_select")),
             ("asyncio.base_events:BaseEventLoop.call_soon", ("selftimed.py", "timed_call_soon"))]
WORKLOAD = "asyncio-inside"
RATE = 1000
BOUND = 0.25          # relative distance from the inside share a run may have
NOISE_SIGMAS = 3.0    # ... or this many standard deviations of a share of `kept` samples
TRUTH_RUNS = 3        # runs without a profiler whose mean inside shares are the truth
# The mutant this check must catch: drop-torn leaves out short-lived stacks
# (call_soon's) and so over-weights long ones (select's).  retry-quiet moves
# a torn sample to a later instant; whether that lands in these two
# functions more or less often is not fixed, so it is reported, and the
# verdict of ci/accuracy real is the one that must catch it.
# The reference of ci/accuracy real must pass as the default must: its
# stacks are exact, and this is the check of its instants; its stop asked
# from another CPU (rp.reference_from_afar) lands on select's system call
# too often and must fail.
MUST_FAIL = {"mutant drop-torn", "frameproof --blocking from afar"}
MUST_PASS_ROLES = ("judged", "reference")


def say(msg):
    print("accuracy inside: " + msg, file=sys.stderr, flush=True)


def parse(argv):
    ap = argparse.ArgumentParser(prog="ci/accuracy inside", description=__doc__.split("\n\n")[1])
    ap.add_argument("--python", action="append", metavar="ID",
                    help="interpreter id of the manifest (its JIT ids, e.g. 3.15+jit, run with the JIT on: "
                         "docs/jit.md); repeatable; "
                         "default: " + " ".join(DEFAULT_IDS))
    ap.add_argument("--runs", type=int, default=2, help="runs of each profiler (mutants: 1; default %(default)s)")
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies the asyncio work (default %(default)s)")
    ap.add_argument("--bound", type=float, default=BOUND, help="relative bound (default %(default)s)")
    ap.add_argument("--frameproof", default=os.path.join(ROOT, "build", "frameproof"))
    ap.add_argument("--report-dir", default="accuracy-report")
    args = ap.parse_args(argv)
    if args.runs < 1:
        ap.error("--runs must be >= 1")
    args.rate = RATE
    return args


def interpreters(ids):
    """[(id, Interp or None, why not)]: accuracy_real's, for these ids."""
    return accuracy_real.interpreters(argparse.Namespace(python=ids))


def forget_inside(place):
    """Removes the last run's inside shares, so that a run that writes none is seen."""
    try:
        os.unlink(place.host("inside.txt"))
    except FileNotFoundError:
        pass


def inside_shares(place):
    """{spec: share} the target wrote."""
    with open(place.host("inside.txt"), encoding="utf-8") as f:
        return {ln.split()[1]: float(ln.split(" share ")[1].split()[0]) for ln in f if ln.startswith("selftimed ")}


def truth(interp, place, scale):
    """{spec: mean inside share} of TRUTH_RUNS runs without a profiler, and
    the runs' shares; raises ProfileError."""
    runs = []
    for _ in range(TRUTH_RUNS):
        forget_inside(place)
        r = rp.run(interp.prefix() + list(interp.entry["argv"]) + rp.workload_args(interp, place, WORKLOAD, scale),
                   interp.env())
        if r.returncode != 0:
            raise rp.ProfileError("the workload failed: " + rp.last_line(r.stderr, f"exit {r.returncode}"))
        try:
            runs.append(inside_shares(place))
        except (OSError, IndexError, ValueError) as e:
            raise rp.ProfileError(f"the target wrote no inside share: {e}") from None
    return {spec: sum(r[spec] for r in runs) / len(runs) for spec, _ in FUNCTIONS}, runs


def judge(share, inside, kept, bound):
    """(passes, allowed distance) of one run."""
    noise = NOISE_SIGMAS * math.sqrt(max(inside * (1 - inside), 1e-9) / max(kept, 1))
    allowed = max(bound * inside, noise)
    return abs(share - inside) <= allowed, allowed


def one_run(ctx, interp, place, profiler):
    """[(inside share, profile share)] per function and kept, of one run;
    raises ProfileError."""
    forget_inside(place)
    got, _ = profiler.runner(ctx, interp, place, WORKLOAD, ctx.scale, profiler.flags)
    if got.kept == 0:
        raise rp.ProfileError("no sample with a Python frame")
    try:
        inside = inside_shares(place)
        return [(inside[spec], got.totals[key] / got.kept) for spec, key in FUNCTIONS], got.kept
    except (OSError, IndexError, ValueError, KeyError) as e:
        raise rp.ProfileError(f"the target wrote no inside share: {e}") from None


def verdict_of(name, role, runs, passed):
    if not runs:
        return "error"
    if role in MUST_PASS_ROLES:
        return "pass" if passed == len(runs) else "FAIL"
    if role == "mutant" and passed < len(runs):
        return "fails, as it must" if name in MUST_FAIL else "fails"
    if role == "mutant":
        return "PASSES (no teeth)" if name in MUST_FAIL else "passes (not seen by these two functions)"
    return "within bound" if passed == len(runs) else "beyond bound"


def main(argv):
    args = parse(argv)
    args.started = time.monotonic()
    commit = result_file.stamp()[0]   # the code the run starts on, not a commit made while it runs
    help_text = subprocess.run([args.frameproof, "record", "--help"], capture_output=True, text=True).stdout
    rows, bad = [], []
    for ident, interp, why in interpreters(args.python or DEFAULT_IDS):
        if interp is None:
            rows.append({"interpreter": ident, "profiler": "*", "verdict": "n/a", "reason": why})
            continue
        place = rp.Place(interp)
        try:
            why = rp.check_workload(interp, place, "asyncio")
            true_shares = None
            if not why:
                say(f"{ident} the truth: {TRUTH_RUNS} runs without a profiler")
                try:
                    true_shares, true_runs = truth(interp, place, args.scale)
                except rp.ProfileError as e:
                    why = str(e)
                else:
                    rows.append({"interpreter": ident, "profiler": "none (the truth)", "role": "truth",
                                 "truth": true_shares, "truth_runs": true_runs, "verdict": "truth"})
            for p in rp.profiler_table(help_text) + [rp.reference_from_afar(help_text)]:
                reason = why or p.applies(interp)
                if reason:
                    rows.append({"interpreter": ident, "profiler": p.name, "role": p.role, "verdict": "n/a",
                                 "reason": reason})
                    continue
                n = 1 if p.role == "mutant" else args.runs
                runs, errors = [], []
                for i in range(n):
                    say(f"{ident} {p.name} run {i + 1}/{n} ({time.monotonic() - args.started:.0f} s)")
                    try:
                        runs.append(one_run(args, interp, place, p))
                    except rp.ProfileError as e:
                        errors.append(str(e))
                out_runs = []
                for shares, kept in runs:
                    fs = []
                    for (spec, _), (inside, share) in zip(FUNCTIONS, shares):
                        ok, allowed = judge(share, true_shares[spec], kept, args.bound)
                        fs.append({"function": spec, "truth": true_shares[spec], "inside": inside, "share": share,
                                   "allowed": allowed, "pass": ok})
                    out_runs.append({"kept": kept, "functions": fs, "pass": all(f["pass"] for f in fs)})
                passed = sum(1 for r in out_runs if r["pass"])
                row = {"interpreter": ident, "profiler": p.name, "role": p.role, "flags": p.flags, "runs": out_runs,
                       "errors": errors, "verdict": verdict_of(p.name, p.role, out_runs, passed)}
                rows.append(row)
                say(f"{ident} {p.name}: " + "; ".join(", ".join(f"{f['share']:.3f} vs {f['truth']:.3f}"
                                                                 for f in r["functions"]) for r in out_runs) +
                    f": {row['verdict']}")
                if p.role in MUST_PASS_ROLES and (row["verdict"] != "pass" or errors) or \
                        row["verdict"] == "PASSES (no teeth)":
                    bad.append(f"{ident} {p.name}: {row['verdict']} {'; '.join(errors)}")
        finally:
            place.close()
    result = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "commit": commit,
              "command": shlex.join(["ci/accuracy", "inside"] + result_file.public_args(argv)),
              "functions": [spec for spec, _ in FUNCTIONS], "rate_hz": RATE, "bound": args.bound,
              "noise_sigmas": NOISE_SIGMAS, "scale": args.scale, "rows": rows}
    os.makedirs(args.report_dir, exist_ok=True)
    with open(os.path.join(args.report_dir, "accuracy-inside.json"), "w") as f:
        json.dump(result, f, indent=1)
    print(markdown(result))
    if bad:
        say("FAILED: " + "; ".join(bad))
        return 1
    return 0


def markdown(doc):
    """The rendered region accuracy-inside (ci/render-docs): the table with
    its date, commit and command."""
    return "\n".join([f"Accuracy against the truth from inside, {doc['date']} on {doc['commit']}: `{doc['command']}`", "",
                      f"The asyncio workload, {doc['rate_hz']} Hz; the truth is the mean share of {TRUTH_RUNS} "
                      f"runs without a profiler; bound {doc['bound']:g} × truth (or {doc['noise_sigmas']:g} sigma of "
                      "sampling noise); each cell: the profile's share / the share the profiled runs measured "
                      "inside themselves (the profile's share as a multiple of the truth).", "",
                      table(doc), ""])


def summary_markdown(doc):
    """The rendered region accuracy-inside-summary: per profiler and
    interpreter, each function's share as a multiple of the truth (mean
    over runs; bold: a run beyond the bound), n/a where it does not run."""
    names = [spec.split(":")[1].rsplit(".", 1)[-1] for spec in doc["functions"]]
    ids = list(dict.fromkeys(r["interpreter"] for r in doc["rows"]))
    profilers = list(dict.fromkeys(r["profiler"] for r in doc["rows"] if r.get("role") not in ("truth", None)))
    cells = {(r["interpreter"], r["profiler"]): r for r in doc["rows"]}
    out = [f"{doc['date']} on {doc['commit']}: `{doc['command']}`; each cell: " + " / ".join(names) +
           f" as a multiple of the truth timed inside the program (bound {doc['bound']:g}; bold: a run beyond it).",
           "", "| profiler | " + " | ".join(ids) + " |", "|---|" + "---:|" * len(ids)]
    for p in profilers:
        row = []
        for i in ids:
            r = cells.get((i, p))
            if not r or not r.get("runs"):
                row.append("n/a")
                continue
            ratios = []
            for k in range(len(names)):
                got = sum(x["functions"][k]["share"] for x in r["runs"]) / len(r["runs"])
                true = r["runs"][0]["functions"][k]["truth"]
                ratios.append(f"{got / max(true, 1e-9):.2f}")
            text = " / ".join(ratios)
            row.append(text if all(x["pass"] for x in r["runs"]) else f"**{text}**")
        out.append(f"| {p} | " + " | ".join(row) + " |")
    return "\n".join(out + [""])


def table(result):
    """Markdown: per profiler and function, the profile's share (mean over
    runs), the share its runs measured inside themselves, and the profile's
    share as a multiple of the truth; then the verdict."""
    names = [spec.split(":")[1] for spec in result["functions"]]
    out = ["| interpreter | profiler | role | " + " | ".join(f"{n}: profile / inside (× truth)" for n in names) +
           " | verdict |", "|---|---|---|" + "---:|" * len(names) + "---|"]
    for r in result["rows"]:
        if r.get("role") == "truth":
            out.append(f"| {r['interpreter']} | {r['profiler']} | truth | " +
                       " | ".join(f"{r['truth'][spec] * 100:.1f} %" for spec in result["functions"]) + " | |")
            continue
        if not r.get("runs"):
            out.append(f"| {r['interpreter']} | {r['profiler']} | {r.get('role', '')} | " + " | " * len(names) +
                       f"{r['verdict']}: {r.get('reason') or '; '.join(r.get('errors', []))} |")
            continue
        cells = []
        for k in range(len(names)):
            ins = sum(x["functions"][k]["inside"] for x in r["runs"]) / len(r["runs"])
            got = sum(x["functions"][k]["share"] for x in r["runs"]) / len(r["runs"])
            true = r["runs"][0]["functions"][k]["truth"]
            cells.append(f"{got * 100:.1f} % / {ins * 100:.1f} % ({got / max(true, 1e-9):.2f})")
        out.append(f"| {r['interpreter']} | {r['profiler']} | {r['role']} | " + " | ".join(cells) +
                   f" | {r['verdict']} |")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
