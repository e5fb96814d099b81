"""ci/accuracy_real.py — accuracy on real programs (`ci/accuracy real`):
every profiler of targets/accuracy/real_profilers.py on real workloads
(CPython's own regression tests, a gevent pool, an asyncio TaskGroup) on
each interpreter, judged against `frameproof record --blocking` beside a
measured noise floor (targets/accuracy/verdict.py) after one normalisation
(targets/accuracy/leaves.py).  The asyncio program is judged twice: as
thread stacks ("asyncio") and as task stacks ("asyncio-tasks": the
async-aware profilers, against the reference's samples of a task running).  docs/accuracy-real.md explains the verdict."""
import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "targets", "accuracy"))
sys.path.insert(0, HERE)
import real_profilers as rp  # noqa: E402
import verdict  # noqa: E402
import result_file  # noqa: E402

fpfacts = rp.fpfacts
DEFAULT_IDS = ["3.11", "3.13", "3.14", "3.14+jit", "3.15", "3.15+jit"]
DEFAULT_RUNS, DEFAULT_MUTANT_RUNS, DEFAULT_REFERENCES = 3, 1, 3
QUICK_SCALE = 0.25
RATE = 1000
JSON_NAME, MD_NAME = "accuracy-real.json", "accuracy-real.md"
WORKLOAD_NA = "the workload cannot run here: "
# Leaving out a share s of the samples moves a distribution by at most about
# s (TVD); the reference counts as exact while s is at most this part of the
# floor, so that what it left out cannot make up a verdict.
REFERENCE_TORN_PER_FLOOR = 0.25


def say(msg):
    print("accuracy real: " + msg, file=sys.stderr, flush=True)


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="ci/accuracy real",
        description="Accuracy on real programs: each profiler's distribution of leaf functions (self time) on "
                    "real workloads, against `frameproof record --blocking --realtime` (exact by construction), "
                    "in units of the noise floor measured between such reference runs.  frameproof's default "
                    f"must be within {verdict.BOUND} x floor on every row; each mutant must be farther.  Exit "
                    "status 1 when the default fails or errs, a mutant passes, or a reference could not be "
                    "taken or was not exact.  docs/accuracy-real.md explains it.")
    ap.add_argument("--python", action="append", metavar="ID",
                    help="interpreter id of the manifest (its JIT ids, e.g. 3.15+jit, run with the JIT on: "
                         "docs/jit.md); repeatable; "
                         f"default: {' '.join(DEFAULT_IDS)}")
    ap.add_argument("--workload", action="append", choices=rp.REAL_WORKLOADS,
                    help="repeatable; default all of them")
    ap.add_argument("--profiler", action="append", metavar="NAME",
                    help="only these profilers (the table's names; the reference always runs); repeatable")
    ap.add_argument("--runs", type=int,
                    help=f"runs of each profiler per row, the mean is judged (default {DEFAULT_RUNS}; "
                         f"{', '.join(f'{w}: {n}' for w, n in rp.MIN_RUNS.items())})")
    ap.add_argument("--mutant-runs", type=int, default=DEFAULT_MUTANT_RUNS,
                    help="runs of each mutant per row (default %(default)s)")
    ap.add_argument("--references", type=int,
                    help=f"reference runs per row, >= 2; the floor is their mean pairwise TVD (default "
                         f"{DEFAULT_REFERENCES}; {', '.join(f'{w}: {n}' for w, n in rp.MIN_RUNS.items())})")
    ap.add_argument("--scale", type=float, default=1.0,
                    help="multiplies the gevent and asyncio work; the test suite runs its list round(SCALE) "
                         "times, below 1 its short list once (default %(default)s)")
    ap.add_argument("--bound", type=float, default=verdict.BOUND, help="x floor bound (default %(default)s)")
    ap.add_argument("--top", type=int, default=verdict.TOP,
                    help="leaves kept apart, the rest merged into one (default %(default)s; 0: all)")
    ap.add_argument("--rate", type=int, default=RATE,
                    help="sampling rate of every profiler and of the reference, Hz (default %(default)s); "
                         "a lower rate stops the target less often in the reference's runs")
    ap.add_argument("--quick", action="store_true",
                    help=f"a smoke test: --scale {QUICK_SCALE}, one run of each profiler (not a verdict to quote)")
    ap.add_argument("--merge", nargs="+", metavar="RESULT",
                    help="run nothing: merge result files (accuracy-real.json) into one in --report-dir; "
                         "a later file's rows replace the earlier ones of the same workload and interpreter, "
                         "and the header names where each row came from (for rows re-run alone)")
    ap.add_argument("--frameproof", default=os.path.join(ROOT, "build", "frameproof"))
    ap.add_argument("--report-dir", default="accuracy-report")
    args = ap.parse_args(argv)
    if args.quick:
        args.scale, args.runs, args.mutant_runs = QUICK_SCALE, 1, 1
    if (args.references is not None and args.references < 2) or (args.runs is not None and args.runs < 1) or \
            args.mutant_runs < 1:
        ap.error("--references must be >= 2, --runs and --mutant-runs >= 1")
    if args.rate < 1:
        ap.error("--rate must be >= 1")
    return args


def interpreters(args):
    """[(id, Interp or None, why not)] in the order asked."""
    facts = fpfacts.load()
    manifest, provisioned = fpfacts.provisioned(facts)
    out = []
    for ident in args.python or DEFAULT_IDS:
        # A "+jit" id is the manifest's own entry: provisioning wrote it only
        # after the JIT turned on with the entry's env (targets/provision).
        entry = provisioned.get(ident)
        if entry is None:
            out.append((ident, None, f"not provisioned (no entry in {manifest})"))
        else:
            out.append((ident, rp.Interp(entry), None))
    return out


class Row(dict):
    def __init__(self, workload, interp, profiler, **kw):
        super().__init__(workload=workload, interpreter=interp, profiler=profiler.name, role=profiler.role,
                         flags=profiler.flags, **kw)


class Runs:
    """What the runs of one profiler in one row gave: distributions, kept,
    ticks, dropped, torn (one entry per run that gave a profile) and the
    errors of the others."""

    def __init__(self):
        self.dists, self.kept, self.ticks, self.dropped, self.torn, self.errors = [], [], [], [], [], []
        self.left_out, self.stepped = [], []   # task-stack workloads: samples of no task running, of a task's step

    def counts(self):
        """The per-run figures a Row carries."""
        out = {"kept": self.kept, "ticks": self.ticks, "dropped": self.dropped, "torn": self.torn,
               "errors": self.errors}
        if any(self.left_out) or any(self.stepped):
            out.update(left_out=self.left_out, stepped=self.stepped)
        return out


def take_run(ctx, interp, place, workload, profiler, i, n, runs, label):
    """Run i of n of profiler, into runs (a Runs)."""
    say(f"{label} {profiler.name} run {i + 1}/{n} ({time.monotonic() - ctx.started:.0f} s)")
    try:
        got, tick = profiler.runner(ctx, interp, place, workload, ctx.scale, profiler.flags)
    except rp.ProfileError as e:
        runs.errors.append(str(e))
        return
    except (OSError, ValueError, KeyError, IndexError) as e:   # an output it could not read: that run's error
        runs.errors.append(f"{type(e).__name__} reading its output: {e}")
        return
    if got.kept == 0:
        runs.errors.append("no sample with a Python frame")
        return
    runs.dists.append(got.distribution())
    runs.kept.append(got.kept)
    runs.ticks.append(tick)
    runs.dropped.append(got.dropped)
    runs.torn.append(got.torn)
    runs.left_out.append(got.left_out)
    runs.stepped.append(got.stepped)


def interleaved_runs(ctx, interp, place, workload, plan, label):
    """{profiler name: Runs} of plan, [(profiler, n)], taken in rounds:
    round i runs each profiler's run i in plan's order (the reference
    first).  The machine's speed drifts over minutes (±25 % between runs of
    the same fixed work was seen), and a workload whose shares depend on
    it (timers, a JIT warming up) would otherwise give the reference runs
    one distribution and a profiler's runs, taken after them, another."""
    out = {p.name: Runs() for p, _ in plan}
    for i in range(max((n for _, n in plan), default=0)):
        for p, n in plan:
            if i < n:
                take_run(ctx, interp, place, workload, p, i, n, out[p.name], label)
    return out


def counts(ctx, workload):
    """(references, runs) of a row: --references and --runs, else the
    workload's (rp.MIN_RUNS) or the defaults."""
    n = rp.MIN_RUNS.get(workload)
    return (ctx.references if ctx.references is not None else n or DEFAULT_REFERENCES,
            ctx.runs if ctx.runs is not None else n or DEFAULT_RUNS)


def torn_share(kept, torn):
    """The share of thread samples a frameproof profile left out as torn."""
    torn = sum(t or 0 for t in torn)
    return torn / (sum(kept) + torn) if kept else 0.0


def stored(dists):
    """Coarsened distributions as a result file keeps them, one per run:
    [[file, function, share], ...] largest first (a later test of the same
    runs, e.g. verdict.exchangeable_p, needs them, not only their TVDs)."""
    return [[[f, fn, round(v, 6)] for (f, fn), v in sorted(d.items(), key=lambda kv: (-kv[1], kv[0]))]
            for d in dists]


def case(ctx, table, ident, interp, workload):
    """The rows of one (interpreter, workload)."""
    label = f"{ident} {workload}:"
    place = rp.Place(interp)
    try:
        why = rp.check_workload(interp, place, workload)
        if why:
            # Not a failure of the verdict (e.g. sid's gevent has no extension for
            # this interpreter), but a row of its own in the table.
            return [Row(workload, ident, p, verdict="n/a", reason=WORKLOAD_NA + why)
                    for p in table]
        ref = table[0]
        if all(p.applies(interp) for p in table[1:]):
            # nothing to judge (the async-aware profilers before 3.14): no reference run either
            return [Row(workload, ident, p, verdict="n/a", reason=p.applies(interp) if p is not ref else
                        "no profiler of this workload applies") for p in table]
        refs, runs = counts(ctx, workload)
        plan = [(ref, refs)] + [(p, ctx.mutant_runs if p.role == "mutant" else runs)
                                          for p in table[1:] if not p.applies(interp)]
        got = interleaved_runs(ctx, interp, place, workload, plan, label)
        r = got[ref.name]
        if len(r.dists) < 2:
            return [Row(workload, ident, p, verdict="error",
                        reason="no reference: " + "; ".join(r.errors or ["fewer than 2 reference runs"]))
                    for p in table]
        top = verdict.top_leaves(r.dists, ctx.top)
        refs = [verdict.coarsen(d, top) for d in r.dists]
        floor = verdict.floor(refs)
        # A stopped target cannot change while it is read: a walk torn under
        # --blocking was stopped inside a change of the target's own (a
        # greenlet switch) or misreads it, and is left out.
        share = torn_share(r.kept, r.torn)
        exact = share <= REFERENCE_TORN_PER_FLOOR * floor
        rows = [Row(workload, ident, ref, runs=len(refs), **r.counts(), floor=floor, tvd_mean=floor, x_floor=1.0,
                    dists=stored(refs),
                    verdict="reference" if exact else f"reference NOT EXACT: {share:.1%} of its thread samples torn")]
        if not exact:
            say(f"{label} the reference left {share:.1%} of its thread samples out as torn (more than "
                f"{REFERENCE_TORN_PER_FLOOR:g} x floor): its verdicts are void")
        for p in table[1:]:
            why = p.applies(interp)
            if why:
                rows.append(Row(workload, ident, p, verdict="n/a", reason=why))
                continue
            r = got[p.name]
            if not r.dists:
                rows.append(Row(workload, ident, p, verdict="error", reason="; ".join(r.errors)))
                continue
            dists = [verdict.coarsen(d, top) for d in r.dists]
            j = verdict.judge(dists, refs, floor)
            j["p_exchangeable"] = verdict.exchangeable_p(dists, refs)
            ok = verdict.passes(j["x_floor"], ctx.bound)
            v = {"judged": "pass" if ok else "FAIL", "mutant": "PASSES (no teeth)" if ok else "fails, as it must",
                 "field": "within bound" if ok else "beyond bound"}[p.role]
            if not exact:
                v += " (void: reference not exact)"
            worst = [["%s:%s" % k, a, b] for k, a, b in verdict.worst(dists[0], refs)]
            rows.append(Row(workload, ident, p, runs=len(dists), **r.counts(), floor=floor, verdict=v, worst=worst,
                            dists=stored(dists), **j))
            say(f"{label} {p.name}: TVD {j['tvd_mean']:.4f}, floor {floor:.4f}, x floor {j['x_floor']:.2f}: {v}")
        return rows
    finally:
        place.close()


def failed(row):
    """The default failed or could not be judged, the reference was not
    taken or not exact, or a mutant passed."""
    return (row["role"] in ("judged", "reference") and row["verdict"] not in ("pass", "reference", "n/a")) or \
        row["verdict"].startswith("PASSES")


def mean_or_blank(values, fmt="%.0f"):
    values = [v for v in values or [] if v is not None]
    return fmt % statistics.fmean(values) if values else ""


def runs_said(doc, roles, default):
    """How many runs rows of roles took: default, and the workloads whose
    rows (merged from another run) took another number ("3; asyncio-tasks 6")."""
    other = {}
    for r in doc["rows"]:
        if r["role"] in roles and r.get("runs") not in (None, default):
            other.setdefault(r["workload"], set()).add(r["runs"])
    return "; ".join([str(default)] + ["%s %s" % (w, "/".join(map(str, sorted(n)))) for w, n in other.items()])


def markdown(doc):
    lines = [f"Accuracy on real programs, {doc['date']} on {doc['commit']}: `{doc['command']}`", "",
             f"Leaf functions (self time; the {doc.get('top') or 'all'} largest apart, the rest as one), "
             f"TVD against `{doc['reference']}` (mean over its runs: "
             f"{runs_said(doc, ('reference',), doc['references'])}); floor = mean TVD between those runs; x floor = "
             f"TVD / floor; bound {doc['bound']} x floor; {doc['rate_hz']} Hz; runs per profiler "
             f"{runs_said(doc, ('judged', 'field'), doc['runs'])} (mutants "
             f"{runs_said(doc, ('mutant',), doc['mutant_runs'])}).", "",
             "p: the share of relabellings of the row's runs and the reference's that are at least as far "
             "apart (verdict.exchangeable_p; small: a bias, not the spread of a few runs; blank: too few runs, "
             "or not stored).", "",
             "| workload | interpreter | profiler | runs | kept samples | ticks | TVD mean (min–max) | floor | "
             "x floor | p | verdict |", "|---|---|---|---:|---:|---:|---|---:|---:|---:|---|"]
    skipped = []
    for r in doc["rows"]:
        if "tvd_mean" not in r:
            if r["verdict"] == "n/a" and r["role"] != "judged":
                skipped.append(r)
                continue
            lines.append(f"| {r['workload']} | {r['interpreter']} | {r['profiler']} | | | | | | | | "
                         f"{r['verdict']}: {r.get('reason', '')} |")
            continue
        spread = "" if r["role"] == "reference" else f" ({r['tvd_min']:.3f}–{r['tvd_max']:.3f})"
        lines.append(f"| {r['workload']} | {r['interpreter']} | {r['profiler']} | {r['runs']} | "
                     f"{mean_or_blank(r.get('kept'))} | {mean_or_blank(r.get('ticks'))} | "
                     f"{r['tvd_mean']:.3f}{spread} | {r['floor']:.3f} | {r['x_floor']:.3f} | "
                     f"{'' if r.get('p_exchangeable') is None else '%.3f' % r['p_exchangeable']} | {r['verdict']} |")
    seen = {}
    for r in skipped:
        if not r.get("reason", "").startswith(WORKLOAD_NA):   # the judged row of that workload says it
            seen.setdefault((r["interpreter"], r["profiler"]), r.get("reason", ""))
    if seen:
        lines += ["", "Not run:", ""] + [f"- {p} on {i}: {why}" for (i, p), why in seen.items()]
    return "\n".join(lines) + "\n"


def x_floor_table(rows, bound):
    """The lines of a table of rows in brief: one row per (workload,
    interpreter), one column per profiler, its x floor (bold beyond bound);
    rows where no profiler applies are left out."""
    profilers, cases = [], {}
    for r in rows:
        cells = cases.setdefault((r["workload"], r["interpreter"]), {})
        if r["role"] == "reference":
            cells["floor"] = r.get("floor")
            continue
        if r["profiler"] not in profilers:
            profilers.append(r["profiler"])
        cell = "n/a" if r["verdict"] == "n/a" else "error" if "x_floor" not in r else \
            ("%.2f" % r["x_floor"] if r["x_floor"] <= bound else "**%.2f**" % r["x_floor"])
        cells[r["profiler"]] = cell + (" (void)" if "void" in r["verdict"] else "")
    lines = ["| workload | interpreter | floor | " + " | ".join(profilers) + " |",
             "|---|---|---:|" + "---:|" * len(profilers)]
    for (workload, interp), cells in cases.items():
        if all(cells.get(p, "n/a") == "n/a" for p in profilers):
            continue
        floor = "%.3f" % cells["floor"] if isinstance(cells.get("floor"), float) else "—"
        lines.append(f"| {workload} | {interp} | {floor} | " + " | ".join(cells.get(p, "") for p in profilers) + " |")
    return lines


def summary_markdown(doc):
    """The thread-stack workloads' rows in brief (x_floor_table), with the
    run's date and command; the cells of docs/accuracy-real.md's full table."""
    rows = [r for r in doc["rows"] if r["workload"] not in rp.TASK_COROUTINES]   # async_summary_markdown's
    lines = [f"{doc['date']} on {doc['commit']}: `{doc['command']}`; x floor (bound {doc['bound']}; bold: "
             f"beyond it; void: the reference left more of its samples out as torn than the verdict allows); "
             f"the floor is the distance between the exact reference's own runs; rows where no profiler "
             f"applies are left out.", ""] + x_floor_table(rows, doc["bound"])
    return "\n".join(lines) + "\n"


def async_summary_markdown(doc):
    """The task-stack workloads' rows (rp.TASK_COROUTINES) in brief
    (x_floor_table), with the date, commit and command of the run they
    came from."""
    rows = [r for r in doc["rows"] if r["workload"] in rp.TASK_COROUTINES]
    runs = list(dict.fromkeys((r["source"]["date"], r["source"]["commit"], r["source"]["command"]) if "source" in r
                              else (doc["date"], doc["commit"], doc["command"]) for r in rows))
    lines = ["; ".join(f"{date} on {commit}: `{command}`" for date, commit, command in runs) +
             f": the asyncio program as task stacks, x floor (bound {doc['bound']}; bold: beyond it) against the "
             f"reference's samples of a task running; every row in [docs/accuracy-real.md](docs/accuracy-real.md).",
             ""] + x_floor_table(rows, doc["bound"])
    return "\n".join(lines) + "\n"


# Header fields that must agree for rows to be merged into one table.
MERGE_SAME = ("rate_hz", "reference", "bound", "scale", "top")


def merge(docs):
    """One result from several (each a parsed accuracy-real.json, oldest
    first): a later document's rows replace every row of the same (workload,
    interpreter) before it, new cases go last.  "date" is the newest, "commit"
    and "command" say which cases each document gave, "seconds" is the sum.
    ValueError when the documents differ in a field of MERGE_SAME."""
    base = docs[0]
    for d in docs[1:]:
        for key in MERGE_SAME:
            if d.get(key) != base.get(key):
                raise ValueError(f"cannot merge: {key} is {base.get(key)!r} in the first result, "
                                 f"{d.get(key)!r} in one from {d.get('date')}")
    cases, source = {}, {}
    for i, d in enumerate(docs):
        mine = {}
        for r in d["rows"]:
            if i and "source" not in r:   # a later run's row names its run
                r = dict(r, source={"commit": d["commit"], "date": d["date"], "command": d["command"]})
            mine.setdefault((r["workload"], r["interpreter"]), []).append(r)
        for key, rows in mine.items():
            cases[key] = rows
            source[key] = i
    doc = {k: v for k, v in base.items() if k != "rows"}
    later = []
    for i, d in enumerate(docs[1:], 1):
        mine = [f"{w} {ip}" for (w, ip), j in source.items() if j == i]
        if mine:
            later.append((d, mine))
    doc["date"] = max(d["date"] for d in docs)
    base_commit, base_command = _without_replaced(base, [r for rows in cases.values() for r in rows])
    # a merged base's commit already dates each of its parts, its "date" is only the newest of them
    merged_base = any("source" in r for r in base["rows"])
    doc["commit"] = (base_commit if merged_base else f"{base_commit} ({base['date']})") + "".join(
        f"; the rows of {', '.join(mine)} from {d['commit']} ({d['date']})" for d, mine in later)
    doc["command"] = base_command + "".join(f"; {d['command']}" for d, _ in later)
    doc["seconds"] = sum(d.get("seconds", 0) for d in docs)
    order = _case_order(docs)
    doc["rows"] = [r for key in sorted(cases, key=order.__getitem__) for r in cases[key]]
    return doc


MERGED_PART = re.compile(r"; the rows of (?P<cases>.*?) from (?P<commit>[0-9a-f]+) \((?P<date>[^)]*)\)")


def _without_replaced(base, rows):
    """base's commit and command without the parts naming an earlier merge
    ("; the rows of ... from COMMIT (DATE)") none of whose rows is left
    in rows, and each other part naming only the cases left from it, so
    that a header names only the runs its rows came from."""
    commit, command = base["commit"], base["command"]
    kept = {(r["source"]["commit"], r["source"]["date"]) for r in rows if "source" in r}
    left = {}
    for r in rows:
        if "source" in r:
            left.setdefault((r["source"]["commit"], r["source"]["date"]), set()).add(
                f"{r['workload']} {r['interpreter']}")
    gone = {}
    for r in base["rows"]:
        src = r.get("source")
        if src and (src["commit"], src["date"]) not in kept:
            gone[(src["commit"], src["date"])] = src["command"]
    for m in list(MERGED_PART.finditer(base["commit"])):
        key = (m["commit"], m["date"])
        if key in gone:
            commit = commit.replace(m[0], "", 1)
            i = command.rfind("; " + gone[key])
            if i >= 0:
                command = command[:i] + command[i + 2 + len(gone[key]):]
        elif key in left:
            cases = [c for c in m["cases"].split(", ") if c in left[key]]
            if cases and len(cases) < len(m["cases"].split(", ")):
                commit = commit.replace(m[0], m[0].replace(m["cases"], ", ".join(cases), 1), 1)
    return commit, command


def _case_order(docs):
    """{case: its place in the merged table}: its place in the first
    document that has it, cases new to a later document after the earlier
    ones."""
    order = {}
    for i, d in enumerate(docs):
        for j, key in enumerate(dict.fromkeys((r["workload"], r["interpreter"]) for r in d["rows"])):
            order.setdefault(key, (i, j))
    return order


def report(args, doc):
    """Writes doc and its table to --report-dir, prints the table and each
    failed row; the exit status (1 when a row failed)."""
    os.makedirs(args.report_dir, exist_ok=True)
    result_file.write(os.path.join(args.report_dir, JSON_NAME), doc)
    table_md = markdown(doc)
    with open(os.path.join(args.report_dir, MD_NAME), "w", encoding="utf-8") as f:
        f.write(table_md)
    print(table_md)
    bad = [r for r in doc["rows"] if failed(r)]
    for r in bad:
        say(f"FAILED: {r['workload']} {r['interpreter']} {r['profiler']}: {r['verdict']} {r.get('reason', '')}")
    return 1 if bad else 0


def main_merge(args):
    docs = []
    for path in args.merge:
        try:
            with open(path, encoding="utf-8") as f:
                docs.append(json.load(f))
        except (OSError, ValueError) as e:
            sys.exit(f"ci/accuracy real: --merge: {path}: {e}")
    try:
        doc = merge(docs)
    except ValueError as e:
        sys.exit(f"ci/accuracy real: --merge: {e}")
    return report(args, doc)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.merge:
        return main_merge(args)
    if not os.access(args.frameproof, os.X_OK):
        sys.exit(f"ci/accuracy real: no frameproof binary at {args.frameproof} (build it first)")
    help_text = subprocess.run([args.frameproof, "record", "--help"], capture_output=True, text=True).stdout
    workloads = args.workload or list(rp.REAL_WORKLOADS)
    tables = {w: rp.table_of(w, help_text) for w in workloads}
    if args.profiler:
        names = {p.name for t in tables.values() for p in t}
        unknown = [n for n in args.profiler if n not in names]
        if unknown:
            sys.exit(f"ci/accuracy real: unknown profiler {unknown[0]!r} (one of the workloads' "
                     f"{', '.join(sorted(names))})")
        tables = {w: [t[0]] + [p for p in t[1:] if p.name in args.profiler] for w, t in tables.items()}
    args.started = time.monotonic()
    # The commit of the checkout when the run starts: a commit made while
    # it runs is not the code it ran.
    commit = result_file.stamp()[0]
    rows = []
    for ident, interp, why in interpreters(args):
        for workload in workloads:
            table = tables[workload]
            if interp is None:
                rows += [Row(workload, ident, p, verdict="error" if p.role in ("judged", "reference") else "n/a",
                             reason=why) for p in table]
                continue
            rows += case(args, table, ident, interp, workload)
    date = result_file.stamp(commit)[1]
    doc = {"date": date, "commit": commit, "command": "ci/accuracy real " + shlex.join(result_file.public_args(sys.argv[1:] if argv is None else argv)),
           "rate_hz": args.rate, "runs": counts(args, workloads[0])[1], "mutant_runs": args.mutant_runs,
           "references": counts(args, workloads[0])[0],
           "reference": " ".join(["frameproof record"] + tables[workloads[0]][0].flags),
           "bound": args.bound, "scale": args.scale, "top": args.top,
           "seconds": round(time.monotonic() - args.started), "rows": rows}
    return report(args, doc)


if __name__ == "__main__":
    sys.exit(main())
