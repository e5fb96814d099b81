#!/usr/bin/env python3
"""run_scenario.py -- reference driver for fpgt scenarios (a harness stand-in).

Runs one or more scenarios under one or more interpreters, speaking the fpgt
protocol (see fpgt.py): creates the two pipes, passes them to the target,
prints every checkpoint, optionally runs a command while the target is held
at a checkpoint, then sends ``continue``.  Kills the target on timeout.  Exits
non-zero if any run fails.  Needs only a Python >= 3.11 on the host.

Interpreters:
  -p/--python CMD   a command line, e.g. "/usr/bin/python3.11" or
                    "chroot ROOT /usr/bin/python3.15" (repeatable)
  -i/--interp ID    an id from $FRAMEPROOF_HOME/interpreters.json (default
                    home in facts/facts.env); "all" = every entry
                    (repeatable)
For an interpreter living in a root other than "/", targets/groundtruth and
targets/scenarios are copied to ROOT/tmp/frameproof-targets/ and the copy runs.

Scenarios: names (from targets/scenarios/) or paths; --all for every scenario
in index.json that the interpreter's version and build accept, --fast for the
"fast" ones.  Scenarios that do not apply to an interpreter are skipped.  A
scenario's versions, builds and timeout come from the index.json next to it
(a script no index lists runs on any interpreter with a 20 s timeout).

Other options:
  --at-checkpoint CMD  run CMD at each checkpoint; {pid}, {name}, {seq} and
                       {json} (a file holding the checkpoint) are substituted
  --twice              run each scenario twice and compare the checkpoints
                       (ignoring pids and thread ids)
  --quiet              print only one line per run
  --json               print checkpoints as indented JSON
  --timeout S          override the scenario's declared timeout
  --save DIR           write each run's messages to DIR/<interp>/<name>.json
"""

import argparse
import json
import os
import re
import select
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TARGETS = os.path.dirname(HERE)
SCENARIOS = os.path.join(TARGETS, "scenarios")


def chroot_targets(targets_dir):
    """The copy's directory inside a chroot, as the harness names it
    (harness/conform/target_sync.h, cf_chroot_targets): the prefix, a dash
    and 16 hex digits of FNV-1a (64 bits) of the targets directory's
    canonical path, so that two checkouts never share a copy.  Both
    spellings are pinned to one known name by unit/chroot_name and
    conform_unit/target_sync."""
    h = 0xcbf29ce484222325
    for byte in os.path.realpath(targets_dir).encode():
        h = ((h ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return "/tmp/frameproof-targets-%016x" % h


CHROOT_TARGETS = chroot_targets(TARGETS)
sys.path.insert(0, os.path.join(os.path.dirname(TARGETS), "facts"))
import fpfacts  # noqa: E402  (the shared facts)

# Metadata of a script that no index.json lists (an ad-hoc scenario).
UNLISTED_META = {"min_version": None, "max_version": None, "builds": "any",
                 "timeout": 20.0}


# ---------------------------------------------------------------------------
# Scenario metadata: index.json is its one source

def load_index(directory=SCENARIOS):
    with open(os.path.join(directory, "index.json"), encoding="utf-8") as f:
        return json.load(f)["scenarios"]


def scenario_meta(path):
    """The index.json entry of a scenario (min_version, max_version, builds,
    timeout, ...), from the index next to the script; UNLISTED_META for a
    script that no index lists."""
    directory, name = os.path.split(os.path.abspath(path))
    try:
        entries = load_index(directory)
    except FileNotFoundError:
        entries = []
    for entry in entries:
        if entry["file"] == name:
            meta = dict(entry)
            meta["timeout"] = float(meta["timeout"])
            return meta
    return dict(UNLISTED_META)


def version_tuple(text):
    return tuple(int(x) for x in str(text).split(".")[:2])


def applies(meta, info):
    """None if the scenario applies to the interpreter, else a reason."""
    ver = (info["hexversion"] >> 24, (info["hexversion"] >> 16) & 0xff)
    if meta.get("min_version") and ver < version_tuple(meta["min_version"]):
        return "needs >= %s" % meta["min_version"]
    if meta.get("max_version") and ver > version_tuple(meta["max_version"]):
        return "needs <= %s" % meta["max_version"]
    builds = meta.get("builds", "any")
    if builds == "gil" and info["free_threaded"]:
        return "GIL builds only"
    if builds == "ft" and not info["free_threaded"]:
        return "free-threaded builds only"
    return None


def resolve_scenario(arg):
    if os.sep in arg or arg.endswith(".py"):
        path = os.path.abspath(arg)
    else:
        path = os.path.join(SCENARIOS, arg + ".py")
    if not os.path.exists(path):
        raise SystemExit("no such scenario: %s" % arg)
    return path


# ---------------------------------------------------------------------------
# Interpreters

class Interpreter:
    def __init__(self, ident, argv, root="/", env=None):
        self.id = ident
        self.argv = list(argv)
        self.root = root or "/"
        # The entry's "env" (PYTHON_JIT=1 for a "+jit" id), as the harness
        # gives it: on top of this process's environment without its own
        # PYTHON_JIT, so only the entry decides whether the JIT is on.
        self.env = dict(env or {})
        self.info = None

    def environ(self, base):
        env = dict(base)
        env.pop("PYTHON_JIT", None)
        env.update(self.env)
        return env

    def command(self, script_args):
        if self.root != "/":
            return ["chroot", self.root] + self.argv + script_args
        return self.argv + script_args

    def script_path(self, host_path):
        """Path of a scenario as the interpreter sees it."""
        if self.root == "/":
            return host_path
        sync_targets(self.root)
        rel = os.path.relpath(host_path, TARGETS)
        if rel.startswith(".."):
            # A scenario outside targets/: copy it next to the others.
            dest_dir = os.path.join(self.root + CHROOT_TARGETS, "scenarios")
            shutil.copy2(host_path, dest_dir)
            rel = os.path.join("scenarios", os.path.basename(host_path))
        return CHROOT_TARGETS + "/" + rel

    def probe(self):
        if self.info is None:
            code = ("import sys, json, sysconfig, platform; print(json.dumps("
                    "{'version': platform.python_version(), 'hexversion': "
                    "sys.hexversion, 'free_threaded': bool(sysconfig."
                    "get_config_var('Py_GIL_DISABLED')), 'debug': hasattr("
                    "sys, 'gettotalrefcount')}))")
            out = subprocess.run(self.command(["-c", code]), check=True,
                                 stdout=subprocess.PIPE, timeout=60,
                                 env=self.environ(os.environ))
            self.info = json.loads(out.stdout)
        return self.info


def manifest_path():
    return fpfacts.manifest_path(fpfacts.load())


def load_manifest():
    try:
        with open(manifest_path(), encoding="utf-8") as f:
            return json.load(f)["interpreters"]
    except FileNotFoundError:
        return []


def interpreters_from_args(args):
    result = []
    for cmd in args.python or []:
        argv = shlex.split(cmd)
        root = "/"
        if argv and os.path.basename(argv[0]) == "chroot" and len(argv) >= 3:
            root = argv[1]
            argv = argv[2:]
        result.append(Interpreter(cmd, argv, root))
    if args.interp:
        entries = load_manifest()
        for ident in args.interp:
            chosen = [e for e in entries if ident in ("all", e["id"])]
            if not chosen:
                raise SystemExit("interpreter %r not in %s" % (
                    ident, manifest_path()))
            for e in chosen:
                result.append(Interpreter(e["id"], e["argv"],
                                          e.get("root", "/"), e.get("env")))
    if not result:
        result.append(Interpreter(sys.executable, [sys.executable]))
    return result


def _same_file(a, b):
    try:
        with open(a, "rb") as fa, open(b, "rb") as fb:
            return fa.read() == fb.read()
    except OSError:
        return False


def sync_targets(root):
    """Copy groundtruth/ and scenarios/ into ROOT + CHROOT_TARGETS."""
    dest_top = root.rstrip("/") + CHROOT_TARGETS
    for sub in ("groundtruth", "scenarios"):
        src_dir = os.path.join(TARGETS, sub)
        for dirpath, dirnames, filenames in os.walk(src_dir):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            rel = os.path.relpath(dirpath, TARGETS)
            out_dir = os.path.join(dest_top, rel)
            os.makedirs(out_dir, exist_ok=True)
            os.chmod(out_dir, 0o755)
            for name in filenames:
                src = os.path.join(dirpath, name)
                dst = os.path.join(out_dir, name)
                if _same_file(src, dst):
                    continue
                tmp = "%s.%d.tmp" % (dst, os.getpid())
                shutil.copy2(src, tmp)
                os.replace(tmp, dst)


# ---------------------------------------------------------------------------
# Running one scenario

class RunError(Exception):
    pass


def check_checkpoint(msg, hello):
    """Structural checks of one checkpoint message; returns problems."""
    problems = []
    park = hello.get("park", {})
    ids = {t["thread_id"] for t in msg.get("all_threads", [])}
    if not msg.get("threads"):
        problems.append("no threads")
    for t in msg.get("threads", []):
        for key in ("native_id", "thread_id", "main", "exception", "frames"):
            if key not in t:
                problems.append("thread lacks %r" % key)
        if t.get("thread_id") not in ids:
            problems.append("thread %s not in all_threads" % t.get("thread_id"))
        frames = t.get("frames") or []
        if not frames:
            problems.append("thread %s has no frames" % t.get("thread_id"))
            continue
        top = frames[0]
        if top.get("function") != park.get("function") or top.get(
                "lasti") != park.get("lasti"):
            problems.append("innermost frame is not the park call: %r" % (top,))
        for fr in frames:
            for key in ("function", "name", "file", "line", "end_line",
                        "column", "end_column", "kind", "lasti"):
                if key not in fr:
                    problems.append("frame lacks %r" % key)
            if fr.get("kind") not in ("python", "generator"):
                problems.append("bad kind %r" % fr.get("kind"))
    return problems


def run_once(interp, scenario_path, *, timeout=None, at_checkpoint=None,
             quiet=False, raw=False, out=sys.stdout):
    """Run a scenario; returns {"hello", "checkpoints", "returncode", ...}."""
    meta = scenario_meta(scenario_path)
    limit = timeout if timeout is not None else meta["timeout"]
    script = interp.script_path(scenario_path)
    to_target_r, to_target_w = os.pipe()
    from_target_r, from_target_w = os.pipe()
    env = interp.environ(os.environ)
    env["FP_GT_WFD"] = str(from_target_w)
    env["FP_GT_RFD"] = str(to_target_r)
    env.pop("FP_GT_AUTO_CONTINUE", None)
    env.pop("PYTHONPATH", None)
    stdout_f = tempfile.TemporaryFile()
    stderr_f = tempfile.TemporaryFile()
    started = time.monotonic()
    deadline = started + limit
    proc = subprocess.Popen(interp.command([script]),
                            pass_fds=(to_target_r, from_target_w), env=env,
                            stdin=subprocess.DEVNULL, stdout=stdout_f,
                            stderr=stderr_f, start_new_session=True)
    os.close(to_target_r)
    os.close(from_target_w)
    result = {"scenario": os.path.splitext(os.path.basename(scenario_path))[0],
              "interpreter": interp.id, "hello": None, "checkpoints": [],
              "returncode": None, "error": None, "stderr": ""}
    buf = b""
    finished = False
    try:
        while True:
            nl = buf.find(b"\n")
            if nl < 0:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise RunError("timeout after %.0f s" % limit)
                r, _, _ = select.select([from_target_r], [], [], remaining)
                if not r:
                    continue
                chunk = os.read(from_target_r, 1 << 20)
                if not chunk:
                    if not finished:
                        try:
                            status = proc.wait(2)
                        except subprocess.TimeoutExpired:
                            status = None
                        raise RunError("target closed the channel without"
                                       " 'done' (%s)" % describe_status(status))
                    break
                buf += chunk
                continue
            line, buf = buf[:nl], buf[nl + 1:]
            try:
                msg = json.loads(line.decode("utf-8"))
            except ValueError:
                raise RunError("bad JSON line from target: %r" % line[:200])
            event = msg.get("event")
            if finished:
                raise RunError("message after 'done': %r" % (event,))
            if event == "hello":
                if result["hello"] is not None:
                    raise RunError("second hello")
                result["hello"] = msg
                if msg.get("pid") != proc.pid:
                    raise RunError("hello pid %r != %r" % (msg.get("pid"),
                                                           proc.pid))
                if not quiet:
                    print("[%s] hello: python %s%s%s, park lasti %s (%s)" % (
                        result["scenario"], msg["python"]["version"],
                        " free-threaded" if msg["python"]["free_threaded"]
                        else "", " debug" if msg["python"]["debug"] else "",
                        msg["park"]["lasti"], msg["park"]["calibration"]),
                        file=out)
            elif event == "checkpoint":
                if result["hello"] is None:
                    raise RunError("checkpoint before hello")
                problems = check_checkpoint(msg, result["hello"])
                if problems:
                    raise RunError("checkpoint %r: %s" % (
                        msg.get("name"), "; ".join(problems[:5])))
                result["checkpoints"].append(msg)
                if not quiet:
                    print(format_checkpoint(result["scenario"], msg, raw),
                          file=out)
                if at_checkpoint:
                    run_hook(at_checkpoint, proc.pid, msg, out, quiet)
                os.write(to_target_w, b"continue\n")
            elif event == "done":
                finished = True
            elif event == "error":
                raise RunError("target error: %s" % msg.get("message"))
            else:
                raise RunError("unknown event %r" % (event,))
        remaining = max(0.1, deadline - time.monotonic())
        try:
            result["returncode"] = proc.wait(remaining)
        except subprocess.TimeoutExpired:
            raise RunError("target did not exit after 'done'")
        if result["returncode"] != 0:
            raise RunError("exit status %d after 'done'" % result["returncode"])
    except RunError as e:
        result["error"] = str(e)
    finally:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
        proc.wait()
        if result["returncode"] is None:
            result["returncode"] = proc.returncode
        os.close(to_target_w)
        os.close(from_target_r)
        stderr_f.seek(0)
        result["stderr"] = stderr_f.read().decode("utf-8", "replace")
        stdout_f.seek(0)
        result["stdout"] = stdout_f.read().decode("utf-8", "replace")
        stderr_f.close()
        stdout_f.close()
    result["seconds"] = round(time.monotonic() - started, 3)
    return result


def _short(text, limit=120):
    text = str(text)
    if len(text) <= limit:
        return text
    return "%s...(%d chars)...%s" % (text[:limit // 2], len(text),
                                     text[-limit // 2:])


def format_checkpoint(scenario, msg, raw=False):
    """Human-readable rendering (or indented JSON with raw=True)."""
    if raw:
        return "[%s] checkpoint %s" % (scenario, json.dumps(
            msg, indent=1, ensure_ascii=False))
    lines = ["[%s] checkpoint #%s %r: %d parked, %d threads alive" % (
        scenario, msg.get("seq"), msg["name"], len(msg["threads"]),
        len(msg["all_threads"]))]
    for t in msg["threads"]:
        lines.append("  thread %s (native %s)%s%s, %d frames" % (
            _short(t.get("name")), t["native_id"],
            " main" if t["main"] else "",
            " in-exception" if t["exception"] else "", len(t["frames"])))
        frames = t["frames"]
        shown = frames if len(frames) <= 40 else frames[:20] + [None] + \
            frames[-20:]
        for fr in shown:
            if fr is None:
                lines.append("      ... %d more frames ..." % (
                    len(frames) - 40))
                continue
            lines.append("    %-9s %s  %s:%s:%s-%s:%s lasti=%s" % (
                fr["kind"], _short(fr["function"], 80),
                _short(fr["file"], 80), fr["line"], fr["column"],
                fr["end_line"], fr["end_column"], fr["lasti"]))
    return "\n".join(lines)


def describe_status(status):
    if status is None:
        return "still running"
    if status < 0:
        try:
            return "killed by %s" % signal.Signals(-status).name
        except ValueError:
            return "killed by signal %d" % -status
    return "exit status %d" % status


def run_hook(template, pid, msg, out, quiet):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False,
                                     encoding="utf-8") as f:
        json.dump(msg, f, ensure_ascii=False)
        path = f.name
    try:
        cmd = [part.format(pid=pid, name=msg["name"], seq=msg.get("seq", ""),
                           json=path) for part in shlex.split(template)]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT)
        if not quiet or proc.returncode:
            print(proc.stdout.decode("utf-8", "replace"), end="", file=out)
        if proc.returncode:
            raise RunError("--at-checkpoint command exited %d"
                           % proc.returncode)
    finally:
        os.unlink(path)


# ---------------------------------------------------------------------------
# Determinism

def normalized(result):
    """Checkpoints with run-specific values (pids, thread ids) removed."""
    cps = []
    for cp in result["checkpoints"]:
        cps.append({
            "name": cp["name"],
            "seq": cp.get("seq"),
            "threads": [{k: v for k, v in t.items()
                         if k not in ("native_id", "thread_id")}
                        for t in cp["threads"]],
            "all_threads": sorted((t.get("name") or "", t.get("main", False))
                                  for t in cp["all_threads"]),
        })
    return cps


def first_difference(a, b, path="$"):
    if type(a) is not type(b):
        return "%s: %r vs %r" % (path, a, b)
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return "%s.%s missing on one side" % (path, k)
            d = first_difference(a[k], b[k], "%s.%s" % (path, k))
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return "%s: length %d vs %d" % (path, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, "%s[%d]" % (path, i))
            if d:
                return d
        return None
    if a != b:
        ra, rb = repr(a), repr(b)
        return "%s: %s vs %s" % (path, ra[:200], rb[:200])
    return None


# ---------------------------------------------------------------------------
# Main

def main(argv=None):
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet under `| head`
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenarios", nargs="*")
    ap.add_argument("-p", "--python", action="append")
    ap.add_argument("-i", "--interp", action="append")
    ap.add_argument("--all", action="store_true")
    ap.add_argument("--fast", action="store_true")
    ap.add_argument("--at-checkpoint")
    ap.add_argument("--twice", action="store_true")
    ap.add_argument("--quiet", "-q", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--timeout", type=float)
    ap.add_argument("--save")
    args = ap.parse_args(argv)

    interps = interpreters_from_args(args)
    paths = [resolve_scenario(s) for s in args.scenarios]
    if args.all or args.fast:
        for entry in load_index():
            if args.fast and not entry.get("fast"):
                continue
            paths.append(os.path.join(SCENARIOS, entry["file"]))
    if not paths:
        ap.error("no scenarios given (names, --all or --fast)")

    passed = failed = skipped = 0
    for interp in interps:
        try:
            info = interp.probe()
        except Exception as e:
            print("FAIL %s: cannot start interpreter: %s" % (interp.id, e))
            failed += len(paths)
            continue
        for path in paths:
            name = os.path.splitext(os.path.basename(path))[0]
            meta = scenario_meta(path)
            why = applies(meta, info)
            if why:
                skipped += 1
                if not args.quiet:
                    print("SKIP %s on %s: %s" % (name, interp.id, why))
                continue
            runs = 2 if args.twice else 1
            results = []
            for _ in range(runs):
                res = run_once(interp, path, timeout=args.timeout,
                               at_checkpoint=args.at_checkpoint,
                               quiet=args.quiet, raw=args.json)
                results.append(res)
                if res["error"]:
                    break
            res = results[-1]
            problem = res["error"]
            if not problem and runs == 2:
                d = first_difference(normalized(results[0]),
                                     normalized(results[1]))
                if d:
                    problem = "not deterministic: " + d
            if args.save:
                d = os.path.join(args.save, re.sub(r"[^\w.-]", "_", interp.id))
                os.makedirs(d, exist_ok=True)
                with open(os.path.join(d, name + ".json"), "w",
                          encoding="utf-8") as f:
                    json.dump(res, f, ensure_ascii=False, indent=1)
            if problem:
                failed += 1
                print("FAIL %s on %s (%.2fs): %s" % (name, interp.id,
                                                     res["seconds"], problem))
                if res["stderr"].strip():
                    print("  stderr:\n    " + res["stderr"].strip()[-4000:]
                          .replace("\n", "\n    "))
            else:
                passed += 1
                print("ok   %s on %s (%.2fs, %d checkpoints, python %s)" % (
                    name, interp.id, res["seconds"], len(res["checkpoints"]),
                    res["hello"]["python"]["version"]))
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
