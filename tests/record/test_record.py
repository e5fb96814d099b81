"""Tests of `frameproof record` on real interpreters (TAP).
usage: test_record.py FRAMEPROOF_BINARY

1. every interpreter of the provisioning matrix (facts/facts.env; an id not
   provisioned is skipped) launched by `record -- ...` running
   record_target.py until it exits: exit 0, the profile written to
   frameproof-PID.txt in the current directory (nothing on stdout), the
   collapsed profile holds the expected call chains of both threads, hot()
   (three times cold()'s work) has more samples than cold() in each thread,
   the counts add up to the summary's "thread samples kept", its lines to
   the distinct stacks the summary gives, the summary's top-functions
   table agrees with the profile for spin(), and the target's exit is
   neither called fatal nor an error;
2. on the first provisioned interpreter, every format: speedscope output
   valid against the JSON schema of the speedscope npm package
   (provisioned by ci/speedscope; skipped when absent) and consistent
   (samples, weights in milliseconds of the sampling period, endValue,
   frame indices, profiles named by thread); the gecko output opened by
   the Firefox Profiler's own loader (its command-line client, provisioned
   by ci/profiler-cli; skipped when absent), whose call trees must count
   every kept sample and show hot() outweighing cold() (and must not with
   the two names swapped); the JSON Lines records
   (header first, summary last, every id defined before use, one sample
   record per kept thread sample); these checks are record_outputs.py's;
3. --pid on a running target for a duration leaves it running; SIGINT
   during an open-ended run still writes the profile and exits 0 and the
   launched command is ended; --realtime --blocking gives the same chains,
   and a --realtime the kernel refuses is a one-line error; --colocate
   gives the same chains, says so in the JSON header and gives its moves;
4. usage and runtime errors are one-line messages with the documented
   exit status; a launched command's output never holds the profile, which
   goes to frameproof-PID.EXT unless -o says otherwise (-o - to stdout),
   and a default file is removed when no profile was written;
5. threads parked on a lock: all of their kept samples off a CPU, each
   thread named; --mode cpu keeps none."""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

from record_common import (  # noqa: E402
    fpfacts, FP, PARKED, PARKED_SHAPE, DEEP_THREAD, TIMEOUT, RUN_SECONDS, LONG_SECONDS, STREAM_SECONDS, STREAM_RATE, RATE,
    SHARE_SAMPLING, INTERRUPT_AFTER_S, STARTUP_S, UNHOLDABLE_RATE, UNHOLDABLE_SECONDS, STALE_BYTES, KEPT,
    WROTE, TOP_ROW, DEFAULT_NAME, SPIN_SHARE, schema_path, Interp, WORKDIR, record, default_profile,
    parse_collapsed, func, line_of, LINES
)
from record_outputs import check_speedscope, check_gecko, load_in_browser, check_json  # noqa: E402
from tap_results import check, one_line_error, report, skip  # noqa: E402


def check_collapsed(name, r, script, profile=None):
    """profile: what the run wrote, when not to stdout."""
    if r.returncode != 0:
        check(name, False, f"status {r.returncode}: {r.stderr.decode(errors='replace')}")
        return
    profile = r.stdout if profile is None else profile
    problems = collapsed_problems(profile, r.stderr, script) + summary_problems(profile, r.stderr)
    check(name, not problems, "\n".join(problems) + "\n" + r.stderr.decode(errors="replace"))
    if not problems and not MUTANTS_CHECKED:
        check_mutants(name, profile, r.stderr, script)


def summary_problems(profile, stderr):
    """The summary's distinct stacks are the collapsed profile's lines, and
    its top-functions row of spin() gives spin's self and total shares of
    the profile (spin is always innermost: both equal)."""
    problems = []
    m = WROTE.search(stderr)
    lines = profile.decode().splitlines()
    if not m or int(m.group(3)) != len(lines):
        problems.append(f"summary gives {m.group(3).decode() if m else '?'} distinct stacks, the profile has "
                        f"{len(lines)} lines")
    prof = parse_collapsed(profile)
    total = sum(prof.values())
    in_spin = sum(n for (_, frames), n in prof.items() if frames and func(frames[-1]) == "spin")
    rows = {fn.decode(): (float(s), float(t)) for s, t, fn in TOP_ROW.findall(stderr)}
    want = round(100.0 * in_spin / total, 1) if total else None
    if "spin" not in rows or abs(rows["spin"][0] - want) > 0.05 or abs(rows["spin"][1] - want) > 0.05:
        problems.append(f"top functions give spin {rows.get('spin')}, the profile {want} %")
    return problems


def drop_leaf(line):
    stack, _, count = line.rpartition(" ")
    return stack.rsplit(";", 1)[0] + " " + count if stack.count(";") > 1 else line


def shift_line(line):
    return re.sub(r":(\d+)\)", lambda m: f":{int(m.group(1)) + 1})", line)


def check_mutants(name, profile, stderr, script):
    """The check must fail on this very profile with its innermost frames
    dropped, or every line shifted by one; the summary's check on it with
    one line missing or spin's samples halved."""
    MUTANTS_CHECKED.append(name)
    for what, mutate in (("innermost frames dropped", drop_leaf), ("lines shifted", shift_line)):
        bad = "\n".join(mutate(line) for line in profile.decode().splitlines()).encode() + b"\n"
        check(f"{name}: the check catches a profile with {what}", bool(collapsed_problems(bad, stderr, script)))
    lines = profile.decode().splitlines()
    halved = [f"{line.rpartition(' ')[0]} {int(line.rpartition(' ')[2]) // 2}"
              if func(line.rpartition(" ")[0].split(";")[-1]) == "spin" else line for line in lines]
    for what, bad in (("a line missing", lines[1:]), ("spin's samples halved", halved)):
        check(f"{name}: the summary check catches a profile with {what}",
              bool(summary_problems(("\n".join(bad) + "\n").encode(), stderr)))


def collapsed_problems(stdout, stderr, script):
    prof = parse_collapsed(stdout)
    kept = KEPT.search(stderr)
    total = sum(prof.values())
    problems = []
    if not kept or int(kept.group(1)) != total:
        problems.append(f"counts add up to {total}, summary says {kept.group(1) if kept else '?'}")
    threads = {}
    for (label, frames), n in prof.items():
        funcs = [func(f) for f in frames]
        if "run" not in funcs:
            continue  # interpreter start-up or shutdown
        i = funcs.index("run")
        tail = funcs[i:]
        if tail[:2] not in (["run", "hot"], ["run", "cold"], ["run"]) or (len(tail) > 2 and tail[2] != "spin"):
            problems.append(f"unexpected chain {';'.join(funcs)}")
        if funcs[0] == "<module>" and not any(f"{script}:" in fr for fr in frames[:1]):
            problems.append(f"<module> frame without the script's file: {frames[0]}")
        for f, fr in zip(funcs[i + 1:], frames[i + 1:]):
            if line_of(fr) not in LINES[f]:
                problems.append(f"{f} at line {line_of(fr)}: {';'.join(frames)}")
        t = threads.setdefault(label, {"hot": 0, "cold": 0, "in_spin": 0, "main": funcs[0] == "<module>"})
        if len(tail) > 1:
            t[tail[1]] += n
        if len(tail) > 2:
            t["in_spin"] += n
    if len(threads) != 2 or sorted(t["main"] for t in threads.values()) != [False, True]:
        problems.append(f"threads running run(): {threads}")
    for label, t in threads.items():
        if not t["hot"] > t["cold"] > 0:
            problems.append(f"{label}: hot {t['hot']} samples, cold {t['cold']}")
        # hot() and cold() spend all but a few microseconds per call in spin().
        if t["in_spin"] < SPIN_SHARE * (t["hot"] + t["cold"]):
            problems.append(f"{label}: {t['in_spin']} of {t['hot'] + t['cold']} samples in spin()")
    return problems


MUTANTS_CHECKED = []


def every_interpreter(facts, provisioned):
    for ident in facts["MATRIX_IDS"].split():
        name = f"record -- {ident}"
        entry = provisioned.get(ident)
        if entry is None:
            skip(name, "not provisioned")
            continue
        it = Interp(entry)
        try:
            r = record("--rate", RATE, *SHARE_SAMPLING, "--", *it.argv(RUN_SECONDS))
            profile = default_profile(r, WORKDIR)
            if profile is None or r.stdout:
                check(name, False, f"no profile in frameproof-PID.txt, or output on stdout {r.stdout[:200]!r}: "
                                   f"{r.stderr.decode(errors='replace')}")
            else:
                check_collapsed(name, r, it.script, profile)
            check(f"{name}: the target's exit is no error", b"until the target exited (exit status 0)" in r.stderr
                  and b"fatal" not in r.stderr and b"errors:" not in r.stderr, r.stderr.decode(errors="replace"))
            by_pid(ident, it)
        finally:
            it.close()


def by_pid(ident, it):
    """record --pid on a running target of this interpreter: the same chains."""
    target = subprocess.Popen(it.argv(LONG_SECONDS), stdout=subprocess.DEVNULL)
    try:
        time.sleep(STARTUP_S)
        r = record("--pid", target.pid, "--rate", RATE, *SHARE_SAMPLING, "--duration", RUN_SECONDS)
        check_collapsed(f"record --pid on {ident}", r, it.script)
        check(f"record --pid on {ident}: the target is left running", alive(target.pid))
    finally:
        target.kill()
        target.wait()


def formats(facts, entry, tmp):
    it = Interp(entry)
    name = f"formats on {entry['id']}"
    schema = schema_path(facts)
    try:
        ss = os.path.join(tmp, "p.speedscope.json")
        js = os.path.join(tmp, "p.jsonl")
        # Existing files longer than any profile: each must be replaced whole.
        for stale in (ss, js):
            with open(stale, "w") as f:
                f.write("x" * STALE_BYTES)
        r = record("--rate", RATE, "--format", "speedscope", "-o", ss, "--", *it.argv(RUN_SECONDS))
        if r.returncode != 0:
            check(f"{name}: speedscope", False, r.stderr.decode(errors="replace"))
        else:
            check_speedscope(name, ss, schema if os.path.exists(schema) else None)
            load_in_browser(name, ss, schema)
        gk = os.path.join(tmp, "p.gecko.json")
        r = record("--rate", RATE, "--format", "gecko", "-o", gk, "--", *it.argv(RUN_SECONDS))
        if r.returncode != 0:
            check(f"{name}: gecko", False, r.stderr.decode(errors="replace"))
        else:
            check_gecko(name, gk, r.stderr, facts)
        r = record("--rate", RATE, "--format", "json", "-o", js, "--poisson", "--seed", 7, "--", *it.argv(RUN_SECONDS))
        if r.returncode != 0:
            check(f"{name}: json", False, r.stderr.decode(errors="replace"))
        else:
            check_json(name, js)
    finally:
        it.close()


def json_streamed(entry):
    """--format json to a pipe: sample lines arrive while the target runs,
    long before the summary that ends the stream (a stream left in stdio's
    pipe buffer would deliver its few KiB at the end)."""
    it = Interp(entry)
    name = f"json streamed on {entry['id']}"
    try:
        p = subprocess.Popen([FP, "record", "--no-progress", "--rate", str(STREAM_RATE), "--format", "json", "-o", "-",
                              "--", *it.argv(STREAM_SECONDS)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             cwd=WORKDIR)
        start = time.monotonic()
        first_sample = summary = None
        for line in p.stdout:
            kind = json.loads(line)["type"]
            if kind == "sample" and first_sample is None:
                first_sample = time.monotonic() - start
            elif kind == "summary":
                summary = time.monotonic() - start
        p.wait(timeout=TIMEOUT)
        check(name, first_sample is not None and summary is not None and summary - first_sample >= STREAM_SECONDS / 2,
              f"first sample line after {first_sample} s, summary after {summary} s")
    finally:
        it.close()


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


def by_pid_and_interrupt(entry, tmp):
    it = Interp(entry)
    try:
        target = subprocess.Popen(it.argv(LONG_SECONDS), stdout=subprocess.DEVNULL)
        try:
            time.sleep(STARTUP_S)
            out = os.path.join(tmp, "pid.txt")
            r = record("--pid", target.pid, "--duration", 1, "-o", out)
            with open(out, encoding="utf-8") as f:
                lines = f.read().count("\n")
            check("--pid for a duration: profile written, target left running",
                  r.returncode == 0 and lines > 0 and alive(target.pid),
                  f"status {r.returncode}, {lines} lines, {r.stderr.decode(errors='replace')}")
        finally:
            target.kill()
            target.wait()
        out = os.path.join(tmp, "int.txt")
        rec = subprocess.Popen([FP, "record", "--no-progress", "-o", out, "--", *it.argv(LONG_SECONDS)],
                               stderr=subprocess.PIPE)
        time.sleep(INTERRUPT_AFTER_S)
        rec.send_signal(signal.SIGINT)
        _, err = rec.communicate(timeout=TIMEOUT)
        with open(out, encoding="utf-8") as f:
            lines = f.read().count("\n")
        children = subprocess.run(["pgrep", "-f", it.script], capture_output=True, text=True).stdout.split()
        check("SIGINT: profile written, exit 0, the launched command ended",
              rec.returncode == 0 and lines > 0 and not children and b"wrote collapsed profile" in err,
              f"status {rec.returncode}, {lines} lines, left running {children}, {err.decode(errors='replace')}")
    finally:
        it.close()


def json_header(path):
    with open(path, encoding="utf-8") as f:
        return json.loads(f.readline())


def header_with_and_without(pid, tmp, option, without=()):
    """The JSON header's field `option` of a short record of pid with
    --OPTION and with the flags `without` instead (or the error of a run
    that failed)."""
    heads = []
    for flags in ((f"--{option}",), tuple(without)):
        js = os.path.join(tmp, f"{option}.jsonl")
        r = record("--pid", pid, "--duration", STARTUP_S, "--format", "json", "-o", js, *flags)
        heads.append(json_header(js).get(option) if r.returncode == 0 else r.stderr)
    return heads


def realtime(entry, tmp):
    """--realtime --blocking --pid: the same chains, the target left running,
    the JSON header saying realtime (and not with --no-realtime; and by
    default, which holds on a schedule); refused (no CAP_SYS_NICE,
    RLIMIT_RTPRIO 0): one line, status 1, nothing sampled — but the default
    samples without it and notes the refusal."""
    it = Interp(entry)
    target = subprocess.Popen(it.argv(LONG_SECONDS), stdout=subprocess.DEVNULL)
    try:
        time.sleep(STARTUP_S)
        r = record("--pid", target.pid, "--rate", RATE, *SHARE_SAMPLING, "--duration", RUN_SECONDS,
                   "--blocking", "--realtime")
        check_collapsed("record --realtime --blocking --pid", r, it.script)
        check("record --realtime: the target is left running", alive(target.pid))
        heads = header_with_and_without(target.pid, tmp, "realtime", ["--no-realtime"])
        check("record --realtime: the JSON header says so (and not with --no-realtime)", heads == [True, False], heads)
        js = os.path.join(tmp, "default-realtime.jsonl")
        r = record("--pid", target.pid, "--duration", STARTUP_S, "--format", "json", "-o", js)
        check("record: the default (a held thread, on a schedule) samples at real-time priority when granted",
              r.returncode == 0 and json_header(js).get("realtime") is True, r.stderr)
        r = record("--pid", target.pid, "--rate", UNHOLDABLE_RATE, "--duration", UNHOLDABLE_SECONDS, "--realtime")
        check("record --realtime: a rate it cannot hold is noted",
              r.returncode == 0 and b"note: --realtime could not hold" in r.stderr, r.stderr)
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            skip("error: --realtime refused", "no setpriv (util-linux)")
            return
        r = subprocess.run(["sh", "-c", 'ulimit -r 0 && exec "$@"', "sh", setpriv, "--inh-caps=-sys_nice",
                            "--bounding-set=-sys_nice", FP, "record", "--no-progress", "--pid", str(target.pid),
                            "--duration", str(RUN_SECONDS), "--realtime"], capture_output=True, timeout=TIMEOUT)
        ok, detail = one_line_error(r, 1, "--realtime: cannot sample at real-time priority")
        check("error: --realtime refused", ok and r.stdout == b"", detail)
        r = subprocess.run(["sh", "-c", 'ulimit -r 0 && exec "$@"', "sh", setpriv, "--inh-caps=-sys_nice",
                            "--bounding-set=-sys_nice", FP, "record", "--no-progress", "--pid", str(target.pid),
                            "--duration", str(STARTUP_S)], capture_output=True, timeout=TIMEOUT)
        check("record: the default, real-time priority refused, samples without and says so",
              r.returncode == 0 and b"note: real-time priority was refused" in r.stderr and r.stdout, r.stderr)
    finally:
        target.kill()
        target.wait()
        it.close()


def colocate(entry, tmp):
    """--colocate --pid: the same chains, the target left running, the JSON
    header saying colocate (and not without it), the summary giving the
    moves made."""
    it = Interp(entry)
    target = subprocess.Popen(it.argv(LONG_SECONDS), stdout=subprocess.DEVNULL)
    try:
        time.sleep(STARTUP_S)
        r = record("--pid", target.pid, "--rate", RATE, *SHARE_SAMPLING, "--duration", RUN_SECONDS, "--colocate")
        check_collapsed("record --colocate --pid", r, it.script)
        check("record --colocate: the summary gives its moves", b"sampler moved to the CPU of the target's running thread: " in r.stderr, r.stderr)
        check("record --colocate: the summary gives its holds", b"that thread held there while read on " in r.stderr, r.stderr)
        check("record --colocate: the target is left running", alive(target.pid))
        heads = header_with_and_without(target.pid, tmp, "colocate", ["--no-colocate"])
        check("record --colocate: the JSON header says so (and not with --no-colocate)", heads == [True, False], heads)
    finally:
        target.kill()
        target.wait()
        it.close()


def out_errors():
    """-o is opened before the target is launched or attached: an unwritable
    path fails at once, an existing file keeps its contents and a file the
    run created is removed when no profile was written."""
    with tempfile.TemporaryDirectory(prefix="fp-record-o-") as tmp:
        mark = os.path.join(tmp, "launched")
        r = record("-o", os.path.join(tmp, "no-such-dir", "p.txt"), "--", "sh", "-c", f"touch {mark}")
        ok, detail = one_line_error(r, 1, "cannot write")
        check("error: unwritable -o fails before launching", ok and not os.path.exists(mark), detail)
        r = record("-o", tmp, "--pid", 1)
        check("error: -o a directory", *one_line_error(r, 1, "Is a directory"))
        kept = os.path.join(tmp, "kept.txt")
        with open(kept, "w") as f:
            f.write("earlier profile\n")
        r = record("-o", kept, "--pid", 999999999)
        with open(kept) as f:
            body = f.read()
        check("error: an existing -o is kept when attaching fails",
              r.returncode == 1 and body == "earlier profile\n", f"status {r.returncode}, file {body!r}")
        new = os.path.join(tmp, "new.txt")
        r = record("-o", new, "--format", "json", "--pid", 999999999)
        check("error: a new -o is removed when attaching fails",
              r.returncode == 1 and not os.path.exists(new), f"status {r.returncode}, {r.stderr!r}")
        r = record("--format", "speedscope", "--", "/nonexistent/python", cwd=tmp)
        left = [f for f in os.listdir(tmp) if f.startswith("frameproof-")]
        check("error: a default output file is removed when the command cannot run",
              r.returncode == 1 and not left, f"status {r.returncode}, left {left}, {r.stderr!r}")


def wait_blocked(pid, timeout_s=10.0):
    """Returns once every thread of pid is off a CPU (its /proc state not
    R): parked.py prints "ready" just before its main thread blocks, so a
    sample taken at once may still find that thread running."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        states = []
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    states.append(f.read().rsplit(")", 1)[1].split()[0])
            except OSError:
                pass
        if states and "R" not in states:
            return
        time.sleep(0.01)
    raise RuntimeError(f"the threads of {pid} did not all block within {timeout_s} s")


def off_cpu(entry):
    """Threads blocked for good: wall mode keeps their samples and the
    summary says all of them were off a CPU, naming each thread; --mode cpu
    keeps none of them."""
    it = Interp(entry)
    shutil.copy(PARKED, it.tmp)
    parked = it.script.rsplit("/", 1)[0] + "/parked.py"
    pre = ["chroot", it.root] if it.root != "/" else []
    target = subprocess.Popen(pre + list(entry["argv"]) + [parked, *PARKED_SHAPE], stdout=subprocess.PIPE)
    try:
        target.stdout.readline()  # "ready": every other thread parked, the main one about to block
        wait_blocked(target.pid)
        r = record("--pid", target.pid, "--duration", 1)
        waiting = re.search(rb"mostly waiting: (.*)\n", r.stderr)
        check("off CPU: parked threads are all off a CPU and named", r.returncode == 0
              and b"off CPU: 100.0 % of the kept thread samples" in r.stderr and waiting
              and waiting.group(1).count(b"100 %") == int(PARKED_SHAPE[0]), r.stderr.decode(errors="replace"))
        r = record("--pid", target.pid, "--duration", 1, "--mode", "cpu")
        kept = KEPT.search(r.stderr)
        check("off CPU: --mode cpu leaves parked threads out", r.returncode == 0 and kept and kept.group(1) == b"0"
              and b"off CPU:" not in r.stderr, r.stderr.decode(errors="replace"))
    finally:
        target.kill()
        target.wait()
        it.close()


def deep_thread(entry):
    """A thread deeper than --max-depth loses its own samples, counted
    apart and warned of; the other thread's samples are kept (the tick is
    not lost for it)."""
    it = Interp(entry)
    shutil.copy(DEEP_THREAD, it.tmp)
    script = it.script.rsplit("/", 1)[0] + "/deep_thread.py"
    pre = ["chroot", it.root] if it.root != "/" else []
    target = subprocess.Popen(pre + list(entry["argv"]) + [script, "50"], stdout=subprocess.PIPE)
    try:
        target.stdout.readline()
        r = record("--pid", target.pid, "--duration", 1, "--max-depth", 20, "-o", "-")
        deep = re.search(rb"(\d+) threads deeper than --max-depth 20", r.stderr)
        stacks = r.stdout.decode(errors="replace")
        check("a thread deeper than --max-depth: counted and warned of, the other thread's samples kept",
              r.returncode == 0 and deep and int(deep.group(1)) > 0 and b"warning:" in r.stderr
              and b"raise --max-depth" in r.stderr and ";other (" in stacks and ";rec (" not in stacks,
              f"status {r.returncode}, stdout {stacks[:300]!r}, {r.stderr.decode(errors='replace')}")
    finally:
        target.kill()
        target.wait()
        it.close()


def default_output(entry):
    """A launched command's own output stays its own: without -o the
    profile goes to frameproof-PID.txt (PID the command's), named in the
    summary; with -o - to stdout after the command's output."""
    it = Interp(entry)
    name = "a launched command's output is not mixed with the profile"
    try:
        argv = ["sh", "-c", 'echo "the command speaks"; exec "$@"', "sh", *it.argv(RUN_SECONDS)]
        r = record("--", *argv)
        m = WROTE.search(r.stderr)
        fname = m.group(2).decode() if m else ""
        pid = DEFAULT_NAME.match(fname)
        profile = default_profile(r, WORKDIR)
        check(name, r.returncode == 0 and r.stdout == b"the command speaks\n" and pid and fname.endswith(".txt")
              and profile and b"spin (" in profile, f"status {r.returncode}, stdout {r.stdout[:300]!r}, file {fname!r}, "
              f"{r.stderr.decode(errors='replace')}")
        r = record("--format", "json", "-o", "-", "--", *argv)
        lines = r.stdout.decode().splitlines()
        check("-o - writes the profile to stdout, after the command's own output",
              r.returncode == 0 and len(lines) > 1 and lines[0] == "the command speaks"
              and json.loads(lines[-1])["type"] == "summary", f"status {r.returncode}, stdout {r.stdout[:300]!r}")
        r = record("--format", "gecko", "--", *it.argv(RUN_SECONDS))
        m = WROTE.search(r.stderr)
        check("the default file's extension follows the format",
              r.returncode == 0 and m and m.group(2).decode().endswith(".gecko.json")
              and default_profile(r, WORKDIR) is not None, r.stderr.decode(errors="replace"))
    finally:
        it.close()


def errors(provisioned):
    r = record("--pid", "12x")
    check("error: invalid pid", *one_line_error(r, 2, "invalid pid"))
    r = record("--pid", 999999999)
    check("error: no such process", *one_line_error(r, 1, "frameproof record:"))
    dead = subprocess.Popen(["true"])
    dead.wait()
    r = record("--pid", dead.pid)
    check("error: exited pid", r.returncode == 1 and b"frameproof record:" in r.stderr, r.stderr)
    r = record("--", "/nonexistent/python")
    check("error: command not found", r.returncode == 1 and b"cannot run '/nonexistent/python'" in r.stderr, r.stderr)
    r = record("--", "sh", "-c", "kill -TERM $$")
    check("error: a command killed by a signal is named so",
          r.returncode == 1 and b"the command ended: killed by signal 15 (Terminated)\n" in r.stderr, r.stderr)
    out_errors()
    r = record("--pid", 1, "--", "python3")
    check("error: --pid and a command", r.returncode == 2 and b"either --pid PID or -- COMMAND" in r.stderr, r.stderr)
    r = record("--pid", 1, "--rate", 0)
    check("error: --rate 0", *one_line_error(r, 2, "--rate must be in"))
    r = record("--pid", 1, "--format", "svg")
    check("error: unknown format", *one_line_error(r, 2, "--format must be"))
    r = record("--pid", 1, "--seed", 3)
    check("error: --seed without --poisson", *one_line_error(r, 2, "--seed needs --poisson"))
    for flags, needle in ((("--blocking", "--pause-torn"), "--blocking and --pause-torn exclude each other"),
                          (("--inject-fault", "bogus"), "--inject-fault must be drop-torn, retry-quiet, or with --async"),
                          (("--inject-fault", "drop-torn", "--blocking"), "--inject-fault and --blocking exclude"),
                          (("--inject-fault", "retry-quiet", "--colocate"), "--inject-fault takes plain reads"),
                          (("--inject-fault", "drop-torn", "--hold"), "--inject-fault takes plain reads"),
                          (("--hold", "--no-colocate"), "--hold holds the thread on the sampler's CPU"),
                          (("--hold", "--blocking", "--no-colocate"), "--hold holds the thread on the sampler's CPU"),
                          (("--async-mode", "all"), "--async-mode needs --async"),
                          (("--async", "--async-mode", "some"), "--async-mode must be running or all"),
                          (("--inject-fault", "stale-awaiter"), "--inject-fault stale-awaiter needs --async"),
                          (("--inject-fault", "no-task-step"), "--inject-fault no-task-step needs --async"),
                          (("--async", "--blocking"), "--async stops every thread for each read"),
                          (("--async", "--hold", "--no-colocate"), "--hold holds the thread on the sampler's CPU"),
                          (("--async", "--inject-fault", "drop-torn"), "its faults are stale-awaiter and no-task-step"),
                          (("--async", "--mode", "cpu"), "--async samples tasks, not threads")):
        r = record("--pid", 1, *flags)
        check(f"error: {' '.join(flags)}", *one_line_error(r, 2, needle))
    ft = provisioned.get("3.13t")
    if ft is None:
        skip("error: --mode gil on a free-threaded build", "3.13t not provisioned")
        return
    it = Interp(ft)
    try:
        r = record("--mode", "gil", "--", *it.argv(RUN_SECONDS))
        check("error: --mode gil on a free-threaded build",
              r.returncode == 1 and b"is free-threaded and has no GIL" in r.stderr, r.stderr)
    finally:
        it.close()


def main():
    facts = fpfacts.load()
    _, provisioned = fpfacts.provisioned(facts)
    every_interpreter(facts, provisioned)
    first = next((provisioned[i] for i in facts["MATRIX_IDS"].split() if i in provisioned), None)
    tmp = tempfile.mkdtemp(prefix="fp-record-out-")
    try:
        if first is None:
            skip("formats", "no interpreter provisioned")
            skip("--pid and SIGINT", "no interpreter provisioned")
            skip("json streamed", "no interpreter provisioned")
            skip("default output", "no interpreter provisioned")
            skip("off CPU", "no interpreter provisioned")
            skip("record --realtime", "no interpreter provisioned")
            skip("record --colocate", "no interpreter provisioned")
            skip("a thread deeper than --max-depth", "no interpreter provisioned")
        else:
            formats(facts, first, tmp)
            default_output(first)
            off_cpu(first)
            json_streamed(first)
            by_pid_and_interrupt(first, tmp)
            realtime(first, tmp)
            colocate(first, tmp)
            deep_thread(first)
        errors(provisioned)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(WORKDIR, ignore_errors=True)
    report()


if __name__ == "__main__":
    main()
