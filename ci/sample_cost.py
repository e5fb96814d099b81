"""sample_cost.py — the body of ci/sample-cost: where a sample's time goes.
On the targets of ci/bench (parked.py of four shapes, running.py), on each
interpreter asked for, `frameproof bench --duration S` runs under
`perf record` (the CPU's time of the sampling process, user and kernel,
sampled by the kernel) in each mode, and `perf report` splits it by
symbol; each symbol goes to one part of a sample (the table in PARTS, in
order: the first pattern that matches), and a part's share of the
process's CPU samples times bench's mean time per sample is its
microseconds per sample.  A second, short run under `strace` counts the
remote ranges of each process_vm_readv (the kernel pins each range's pages
on its own).  With --rate, bench samples on a schedule, as record does.  One Markdown table, and docs/data/sample-cost.json (dated,
with the commit and command; ci/render-docs renders it into docs/speed.md).
Run it through ci/sample-cost (see there for usage)."""
import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "facts"))
sys.path.insert(0, HERE)
import bench  # noqa: E402  (targets, their interpreters, how a run is killed)
import fpfacts  # noqa: E402
import result_file  # noqa: E402

DEFAULT_PYTHONS = ("3.11", "3.13t", "3.15")
SHAPES = bench.PARKED_SHAPES + (bench.LIVE_SHAPE,)
MODES = {"default": [], "plain": ["--no-colocate", "--no-pause-torn"]}
DEFAULT_DURATION_S = 2.0
STRACE_SAMPLES = 200
PERF_FREQ_HZ = 10000
PERF_STACK_BYTES = 16384
PERF_TIMEOUT_S = 300

# The parts of a sample.  frameproof's own functions go by the source file
# that defines them (from `nm` of the build's static libraries and the CLI's
# objects): the walk of the chains; the read-back check; the frames handed
# out (code objects, names, lines); the reads planned, batched and issued;
# the session and sampling API around them; the sampler's policy (the hold,
# colocation) and bench's loop.  Then the C library, and the kernel's
# symbols by pattern (searched; the first part that matches takes a symbol):
# the copy itself, the pinning and lookup of the target's pages, the
# affinity calls of the hold and the scheduler, the system-call entry and
# exit.
FILE_PARTS = (
    ("walk", ("chain.c", "walk.c", "walk_batch.c", "thread.c", "thread_list.c", "stack_switch.c", "interp_read.c",
              "proc_state.c", "retry.c")),
    ("read-back check", ("verify.c",)),
    ("frames out", ("emit.c", "code_cache.c", "frame_cache.c", "linetable.c", "block_cache.c", "call_sites.c",
                    "pystr.c")),
    ("reads", ("read.c", "read_set.c", "batch.c", "reader.c", "reader_vm.c", "read_ahead.c", "readback_ahead.c",
               "tlbc_ahead.c", "retry_read.c")),
    ("session", ("session.c", "sample.c", "error.c", "grow.c", "pause.c")),
    ("policy and bench", ("colocate.c", "hold_guard.c", "sampler.c", "offload.c", "fault.c", "cmd_bench.c",
                          "sampling_policy.c", "frameproof.c")),
)
C_LIBRARY = "C library"
KERNEL_PARTS = (
    ("kernel: copy", r"copy_to_iter|copy_user|rep_movs|copy_page"),
    ("kernel: pin and find pages", r"gup|get_user_pages|follow_page|pin_user|unpin|put_page|folio|find_vma|mt_find|"
                                   r"vma_|pte|pmd|mmap_read|mm_access|page_fault"),
    ("kernel: affinity, futex, scheduler", r"affinity|cpus_allowed|sched|migrat|ttwu|wake_up|switch|futex"),
    ("kernel: rest of process_vm_readv", r"process_vm"),
    ("kernel: system-call entry and exit", r"entry_SYSCALL|do_syscall|syscall_exit|exit_to_user|irqentry"),
)
OTHER_USER, OTHER_KERNEL = "other (user)", "other (kernel)"
PART_NAMES = [p[0] for p in FILE_PARTS] + [C_LIBRARY, OTHER_USER] + [p[0] for p in KERNEL_PARTS] + [OTHER_KERNEL]
NM_LINE = re.compile(r"^(?:.*/)?(?:src_)?([\w.]+?\.c)\.o:[0-9a-f]*\s+[tT]\s+(\S+)$")
SCRIPT_FRAME = re.compile(r"^\s+[0-9a-f]+ (.+?)(?: \((?:inlined|(.*))\))?$")
RIOVCNT = re.compile(r"^\d+\s+process_vm_readv\(\d+, \[.*\], (\d+), \[.*\], (\d+), 0\)")


def say(msg):
    print("sample-cost: " + msg, file=sys.stderr, flush=True)


def symbol_files(build):
    """{function name: source file} of frameproof's own code in a build
    directory, from `nm -A` of its static libraries and the CLI's objects
    (a static name defined in two files keeps the first)."""
    objs = []
    for sub in ("unwinder", os.path.join("harness", "sampler"), os.path.join("harness", "cli")):
        for dirpath, _, files in os.walk(os.path.join(build, sub)):
            objs += [os.path.join(dirpath, f) for f in files if f.endswith((".a", ".o")) and "test" not in f]
    r = subprocess.run(["nm", "-A", "--defined-only"] + objs, capture_output=True, text=True)
    if r.returncode != 0:
        raise bench.BenchError("nm failed: %s" % (r.stderr.strip().splitlines() or ["?"])[-1])
    out = {}
    for line in r.stdout.splitlines():
        m = NM_LINE.match(line.split(".a:", 1)[-1])
        if m:
            out.setdefault(m.group(2), m.group(1))
    return out


# The stages of the sampling thread's tick, by the first of these functions
# met on a perf sample's call chain from its leaf up: the sample itself
# (fp_session_sample, split into PART_NAMES by its leaf), the default's hold
# and colocation around it, the hand-over of the sample to the callback
# thread and that thread (the profile's bookkeeping), and the rest of bench's
# loop; samples before or after the loop are start-up.
STAGES = (
    ("sample", ("fp_session_sample",)),
    ("hold and colocation", ("fps_colocate_hold", "fps_colocate_release", "fps_colocate_release_stay",
                             "fps_colocate_follow", "fps_colocate_follow_tid", "fps_hold_guard_watch")),
    ("hand-over and callback thread", ("fps_offload_next", "fps_offload_post", "fps_offload_expect",
                                       "fps_offload_avoid", "deliver_loop", "fps_offload_start")),
    ("rest of the loop", ("fps_run",)),
)
STAGE_NAMES = [n for n, _ in STAGES] + ["start-up"]


def frame_part(frames, files):
    """The part of a sample whose call chain is frames (leaf first; each
    (symbol, dso, kernel)): a kernel leaf by the first kernel frame that
    matches a pattern of KERNEL_PARTS; a user leaf by the first frame of
    frameproof's own files (the C library's time goes to its caller)."""
    if frames and frames[0][2]:
        for sym, _, kernel in frames:
            if not kernel:
                break
            for name, pattern in KERNEL_PARTS:
                if re.search(pattern, sym):
                    return name
        return OTHER_KERNEL
    for sym, _, kernel in frames:
        src = files.get(sym.split(".")[0])   # gcc's clones: name.constprop.0, name.isra.0
        for name, srcs in FILE_PARTS:
            if src in srcs:
                return name
    if frames and frames[0][1].startswith("libc"):
        return C_LIBRARY
    return OTHER_USER


def stage_of(frames):
    syms = [f[0] for f in frames]
    for name, funcs in STAGES:
        if any(f in syms for f in funcs):
            return name
    return "start-up"


def parse_script(text, files):
    """(ns per stage, ns per part of the sample stage, ns per leaf symbol of
    the sample stage) from `perf script -F tid,period,ip,sym,dso` output."""
    stages = dict.fromkeys(STAGE_NAMES, 0)
    parts = dict.fromkeys(PART_NAMES, 0)
    leaves = {}
    for block in text.split("\n\n"):
        lines = block.strip("\n").split("\n")
        head = lines[0].split()
        if len(head) < 2 or not head[1].isdigit():
            continue
        period, frames = int(head[1]), []
        for line in lines[1:]:
            m = SCRIPT_FRAME.match(line)
            if m:
                sym, dso = m.group(1), m.group(2) or ""
                frames.append((sym, os.path.basename(dso), "kernel.kallsyms" in dso))
        stage = stage_of(frames)
        stages[stage] += period
        if stage == "sample":
            parts[frame_part(frames, files)] += period
            if frames:
                key = ("[k] " if frames[0][2] else "") + frames[0][0]
                leaves[key] = leaves.get(key, 0) + period
    return stages, parts, leaves


def perf_run(fp, pid, mode, pace, duration, files):
    """bench's JSON, and perf's CPU time of one run of `frameproof bench`
    by stage and by part of the sample (ns), with the ten leaf symbols that
    took most of the sample stage."""
    with tempfile.TemporaryDirectory(prefix="frameproof-sample-cost-") as tmp:
        data = os.path.join(tmp, "perf.data")
        cmd = ["perf", "record", "-q", "-F", str(PERF_FREQ_HZ), "--call-graph", "dwarf,%d" % PERF_STACK_BYTES,
               "-o", data, "--", fp, "bench", "--pid", str(pid), "--duration", str(duration), "--json"] + MODES[mode] + pace
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=PERF_TIMEOUT_S)
        if r.returncode != 0:
            raise bench.BenchError("perf record of frameproof bench failed: %s" %
                                   (r.stderr.strip().splitlines() or ["exit status %d" % r.returncode])[-1])
        try:
            d = json.loads(r.stdout)
        except ValueError:
            raise bench.BenchError("frameproof bench printed no JSON under perf: %r" % r.stdout[-200:])
        sc = subprocess.run(["perf", "script", "-i", data, "-F", "tid,period,ip,sym,dso"], capture_output=True,
                            text=True, errors="replace", timeout=PERF_TIMEOUT_S)
        if sc.returncode != 0:
            raise bench.BenchError("perf script failed: %s" % (sc.stderr.strip().splitlines() or ["?"])[-1])
        stages, parts, leaves = parse_script(sc.stdout, files)
        if not stages["sample"]:
            raise bench.BenchError("perf saw no time in fp_session_sample (no call chains?)")
        return d, stages, parts, dict(sorted(leaves.items(), key=lambda kv: -kv[1])[:10])


def strace_ranges(fp, pid, mode, pace):
    """(median remote ranges per process_vm_readv, median calls per sample)
    over a short run of bench, its attach left out (the calls of a run of
    one sample subtracted)."""
    def calls(samples):
        with tempfile.NamedTemporaryFile(prefix="frameproof-sample-cost-strace-", suffix=".log") as log:
            r = subprocess.run(["strace", "-f", "-qq", "-v", "-s", "0", "-o", log.name, "-e",
                                "trace=process_vm_readv", fp, "bench", "--pid", str(pid), "--samples", str(samples),
                                "--json"] + MODES[mode] + pace, capture_output=True, text=True, timeout=PERF_TIMEOUT_S)
            if r.returncode != 0:
                raise bench.BenchError("strace of frameproof bench failed: %s" %
                                       (r.stderr.strip().splitlines() or ["?"])[-1])
            with open(log.name, encoding="utf-8", errors="replace") as f:
                return [int(m.group(2)) for m in map(RIOVCNT.match, f) if m]
    many, one = calls(STRACE_SAMPLES), calls(1)
    steady = many[len(one):]
    if not steady:
        return None, None
    return statistics.median(steady), (len(many) - len(one)) / (STRACE_SAMPLES - 1)


def measure(interp, shape, fp, rate, duration, files):
    p, _ = bench.start_target(interp, shape)
    pace = ["--rate", "%g" % rate] if rate else []
    rows = []
    try:
        for mode in MODES:
            say("%s, %s: %s under perf (%g s)" % (interp.id, bench.shape_name(shape), mode, duration))
            d, stages, parts, leaves = perf_run(fp, p.pid, mode, pace, duration, files)
            ranges, calls = strace_ranges(fp, p.pid, mode, pace)
            n = max(d["samples"], 1)

            def per_sample_us(ns):
                return {k: v / n / 1000.0 for k, v in ns.items()}
            rows.append({"interpreter": interp.id, "shape": bench.shape_name(shape), "mode": mode,
                         "samples": d["samples"], "failed": d["failed"], "samples_per_s": d["samples_per_s"],
                         "mean_us": d["mean_us"], "p50_us": d["p50_us"], "ranges_per_read": ranges,
                         "reads_per_sample": calls, "bytes_p50": d["bytes_p50"],
                         "stages_us": per_sample_us(stages), "parts_us": per_sample_us(parts),
                         "top_leaves_us": per_sample_us(leaves)})
    finally:
        bench.kill_target(p)
    return rows


def _us(v):
    return "0" if v < 0.005 else "%.2f" % v


def markdown(doc):
    """The two tables of a sample-cost.json document, with its date and
    command: the sampling process's CPU time per sample by stage, and the
    sample stage by part."""
    pace = " --rate %g`" % doc["rate_hz"] if doc.get("rate_hz") else "` back to back"
    head = (f"Where a sample's time goes, {doc['date']} on {doc['commit']}: `{doc['command']}` ({doc['cores']} cores; "
            f"`frameproof bench --duration {doc['duration_s']:g}{pace} under `perf record -F {doc['perf_hz']} "
            "--call-graph dwarf`; every figure is CPU µs per sample of the sampling process, its threads together: "
            "perf's time in that stage or part over bench's samples; \"latency\" is bench's mean time of one "
            "`fp_session_sample`, \"loop\" one turn of its loop (1 / samples per second); ranges: the median "
            "remote ranges of one `process_vm_readv`, under `strace`)")
    shown_stages = [n for n in STAGE_NAMES if n != "start-up"]
    lines = [head, "", "| interpreter | shape | mode | latency | loop | ranges | " + " | ".join(shown_stages) + " |",
             "|---|---|---|---:|---:|---:|" + "---:|" * len(shown_stages)]
    for r in doc["rows"]:
        lines.append("| %s | %s | %s | %.1f | %.1f | %s | %s |" % (
            r["interpreter"], r["shape"], r["mode"], r["mean_us"], 1e6 / r["samples_per_s"] if r["samples_per_s"] else 0,
            "—" if r["ranges_per_read"] is None else "%g" % r["ranges_per_read"],
            " | ".join(_us(r["stages_us"][k]) for k in shown_stages)))
    lines += ["", "The sample stage by part (frameproof's functions by the file that defines them, the C library's "
              "time with its caller, the kernel's by what it was doing):", "",
              "| interpreter | shape | mode | sample | " + " | ".join(PART_NAMES) + " |",
              "|---|---|---|---:|" + "---:|" * len(PART_NAMES)]
    for r in doc["rows"]:
        lines.append("| %s | %s | %s | %s | %s |" % (r["interpreter"], r["shape"], r["mode"],
                                                     _us(r["stages_us"]["sample"]),
                                                     " | ".join(_us(r["parts_us"][k]) for k in PART_NAMES)))
    return "\n".join(lines) + "\n"


def main(argv):
    ap = argparse.ArgumentParser(prog="ci/sample-cost", description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", action="append", help="interpreter id (repeatable; default %s)" %
                    " ".join(DEFAULT_PYTHONS))
    ap.add_argument("--duration", type=float, default=DEFAULT_DURATION_S,
                    help="seconds of bench per mode and shape (default %(default)s)")
    ap.add_argument("--rate", type=float, help="sample at HZ per second (bench --rate) instead of back to back; "
                    "the result goes to sample-cost-rate.json")
    ap.add_argument("--frameproof", default=os.path.join(bench.REPO, "build", "frameproof"))
    ap.add_argument("--report-dir", help="write sample-cost.json there, not into docs/data (a trial)")
    args = ap.parse_args(argv)
    if args.duration <= 0:
        ap.error("--duration must be positive")
    if args.rate is not None and not 0 < args.rate <= 100000:
        ap.error("--rate must be in (0, 100000]")
    if not os.access(args.frameproof, os.X_OK):
        ap.error("no frameproof binary at %s (build it first)" % args.frameproof)
    for tool in ("perf", "strace"):
        if not shutil.which(tool):
            raise bench.BenchError("%s is not installed (ci/setup installs it)" % tool)
    facts = fpfacts.load()
    manifest, interps = fpfacts.provisioned(facts)
    wanted = args.python or list(DEFAULT_PYTHONS)
    missing = [i for i in wanted if i not in interps]
    if missing:
        raise bench.BenchError("not provisioned: %s (%s)" % (", ".join(missing), manifest))
    files = symbol_files(os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(args.frameproof)))))
    if not files:
        raise bench.BenchError("no symbols of frameproof's sources found beside %s" % args.frameproof)
    commit, date = result_file.stamp()
    started, rows, prepared = time.monotonic(), [], []
    try:
        for iid in wanted:
            interp = bench.Interp(interps[iid])
            prepared.append(interp)
            interp.prepare()
            for shape in SHAPES:
                rows += measure(interp, shape, args.frameproof, args.rate, args.duration, files)
    finally:
        bench.kill_all_targets()
        for interp in prepared:
            interp.cleanup()
    doc = {"date": date, "commit": commit, "command": shlex.join(["ci/sample-cost"] + result_file.public_args(argv)),
           "cores": os.cpu_count(), "duration_s": args.duration, "perf_hz": PERF_FREQ_HZ, "rate_hz": args.rate, "stages": dict(STAGES),
           "seconds": time.monotonic() - started, "file_parts": dict(FILE_PARTS), "kernel_parts": dict(KERNEL_PARTS),
           "rows": rows}
    print(markdown(doc), end="")
    result_file.publish(doc, "sample-cost-rate.json" if args.rate else "sample-cost.json", args.report_dir, say)
    return 0


if __name__ == "__main__":
    bench.run_main(main, "sample-cost")
