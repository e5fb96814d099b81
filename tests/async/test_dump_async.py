"""Live tests of `frameproof dump --async` (TAP): the asyncio task graph
read from outside equals the one the target computes of itself.
usage: test_dump_async.py FRAMEPROOF_BINARY

For every interpreter of the provisioning matrix (facts/facts.env's
MATRIX_IDS, then its JIT_IDS; the manifest is read at run time, an id not
provisioned is skipped) targets/async/park_tasks.py is started:
1. CPython 3.14+ with the GIL: it parks its tasks on two threads' loops and
   prints "ready <truth>", the graph asyncio.capture_call_graph() gives
   inside the process; `dump --async --json` must exit 0 with the
   document's header, the same tasks, each with its name, state, thread,
   stack ([function, line], innermost first) and awaited_by, and the same
   non-task futures; the comparison must report each of five faults
   injected into a copy of the dump (a stack reversed, a line off by one, a
   task renamed, a task dropped, an awaiter edge moved to another task);
   the text form must name every task; afterwards the target runs on and
   none of its threads is left stopped or traced;
2. 3.11–3.13 and free-threaded builds (no task graph to read): it prints
   "ready" and sleeps; `dump --async` must exit 1 with one line on stderr
   and nothing on stdout, and leave the target running."""
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "facts"))
from tap_results import check, report, skip  # noqa: E402
import fpfacts  # noqa: E402  (the shared facts)

FP = os.path.abspath(sys.argv[1])
TARGET = os.path.join(HERE, "..", "..", "targets", "async", "park_tasks.py")
TIMEOUT = 60          # for the target's "ready" and for each frameproof run
DETACH_GRACE_S = 2.0  # how long the kernel may take to let the target's threads go
ASYNC_MIN = (3, 14)   # the first CPython whose tasks carry a graph to read
# The target's environment, as targets/capture_images gives it, plus the
# manifest entry's own "env" (PYTHON_JIT=1 for a "+jit" id): only the entry
# decides whether the JIT is on.
CLEAN_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1",
             "PYTHONHASHSEED": "0"}


def interpreters():
    """[(id, manifest entry or None)]: the matrix's ids, then the JIT ids."""
    facts = fpfacts.load()
    manifest, every = fpfacts.matrix(facts)
    _, have = fpfacts.provisioned(facts, manifest)
    every += [(ident, have.get(ident)) for ident in facts.get("JIT_IDS", "").split()]
    return manifest, every


def version(entry):
    return tuple(int(x) for x in entry["version"].split(".")[:2])


def install(root):
    """Copies the target into a fresh directory under root's /tmp; returns
    (that directory on this host, the script's path as the target sees it)."""
    tmp = os.path.join(root, "tmp")
    dest = tempfile.mkdtemp(prefix="frameproof-async-", dir=tmp)
    os.chmod(dest, 0o755)
    shutil.copyfile(TARGET, os.path.join(dest, "park_tasks.py"))
    return dest, "/tmp/%s/park_tasks.py" % os.path.basename(dest)


def start(entry, script):
    """Starts script under entry (through `chroot ROOT` when its root is not
    "/"); returns (process, the rest of its "ready" line, stripped)."""
    argv = list(entry["argv"]) + [script]
    if entry.get("root", "/") != "/":
        argv = [shutil.which("chroot") or "/usr/sbin/chroot", entry["root"]] + argv
    env = dict(CLEAN_ENV)
    env.update(entry.get("env") or {})
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, env=env, cwd="/")
    deadline = time.monotonic() + TIMEOUT
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or proc.poll() is not None:
            proc.kill()
            status = proc.wait()
            raise RuntimeError("the target did not print ready within %d s (status %s, printed %r)"
                               % (TIMEOUT, status, line[:200]))
        r, _, _ = select.select([proc.stdout], [], [], left)
        if r:
            line += os.read(proc.stdout.fileno(), 1 << 16)
    word, _, rest = line.strip().partition(b" ")
    if word != b"ready":
        proc.kill()
        proc.wait()
        raise RuntimeError("the target printed %r instead of ready" % line[:200])
    return proc, rest


def fp(*args):
    """frameproof ARGS: (status, stdout, stderr), status None when it ran
    longer than TIMEOUT (then it is killed)."""
    try:
        r = subprocess.run([FP, *map(str, args)], capture_output=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as e:
        return None, e.stdout or b"", (e.stderr or b"") + b"[killed after %d s]" % TIMEOUT
    return r.returncode, r.stdout, r.stderr


def held_threads(pid):
    """Threads of pid that are stopped or traced: [(tid, state, tracer)]."""
    held = []
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except FileNotFoundError:
        return [("process", "gone", 0)]
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid), "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0].decode()
            with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
                tracer = int(re.search(r"^TracerPid:\s+(\d+)", f.read(), re.M).group(1))
        except (FileNotFoundError, ProcessLookupError):
            continue
        if state in "tT" or tracer != 0:
            held.append((tid, state, tracer))
    return held


def check_resumed(name, proc):
    """(f): the target runs on and none of its threads is stopped or traced."""
    deadline = time.monotonic() + DETACH_GRACE_S
    while True:
        held = held_threads(proc.pid)
        if not held or time.monotonic() >= deadline:
            break
        time.sleep(0.01)
    check("%s: the target runs on, no thread left stopped or traced" % name,
          proc.poll() is None and not held,
          "exit status %s; held threads (tid, state, tracer): %s" % (proc.poll(), held[:5]))


def text(b, limit=None):
    """b decoded and stripped; cut after limit characters."""
    s = b.decode(errors="replace").strip()
    return s if limit is None or len(s) <= limit else s[:limit] + "..."


def said(err):
    """What a failed run said: its stderr's first line (a usage error prints
    the whole help after it), with the number of lines."""
    lines = text(err).splitlines()
    return "%r (%d lines)" % (lines[0][:300], len(lines)) if lines else "nothing"


def label(entry):
    """How a difference names an entry of the truth: its name and address."""
    if entry.get("task", True):
        return "task %r (%#x)" % (entry.get("name"), entry["addr"])
    return "future %#x" % entry["addr"]


def ordered(addrs):
    """A dumped awaited_by sorted as the truth's is (by address); anything
    but a list of ints is kept as it is, to be shown as it came."""
    if isinstance(addrs, list) and all(type(a) is int for a in addrs):
        return sorted(addrs)
    return addrs


def addrs_shown(addrs, names):
    """Addresses as a difference shows them: hex, with the truth's name."""
    if not isinstance(addrs, list):
        return json.dumps(addrs)
    return "[%s]" % ", ".join("%#x %s" % (a, names.get(a, "(not in the truth)")) if isinstance(a, int)
                              else json.dumps(a) for a in addrs)


def differences(truth, dumped, names, fields):
    """The differences between the truth's nodes and the dump's, one string
    each: fields gives (field, wanted value of a truth node) pairs, besides
    the awaiters every node has."""
    diffs = []
    for t in truth:
        d = dumped.get(t["addr"])
        if d is None:
            diffs.append("%s: not in the dump" % label(t))
            continue
        for field, want in fields(t):
            got = d.get(field)
            if field == "stack" and isinstance(got, list):
                got = [[f.get("function"), f.get("line")] for f in got]
            if want != got:
                what = "stack [function, line] innermost first" if field == "stack" else field
                diffs.append("%s: %s %s, truth %s" % (label(t), what, json.dumps(got), json.dumps(want)))
        got = ordered(d.get("awaited_by"))
        if got != t["awaited_by"]:
            diffs.append("%s: awaited_by %s, truth %s"
                         % (label(t), addrs_shown(got, names), addrs_shown(t["awaited_by"], names)))
    return diffs


def task_differences(truth, dumped, names):
    """Tasks: name, state, thread, running and stack, and the awaiters."""
    return differences(truth, dumped, names, lambda t: (
        ("name", t["name"]), ("state", "pending"), ("thread", t["thread"]), ("running", False),
        ("stack", t["stack"])))


def future_differences(truth, dumped, names):
    """The non-task futures, which have no name, thread or stack; and no
    future the truth does not have."""
    diffs = differences(truth, dumped, names, lambda t: (("name", None), ("thread", None), ("stack", [])))
    extra = sorted(set(dumped) - {t["addr"] for t in truth})
    if extra:
        diffs.append("futures not in the truth: %s" % ", ".join("%#x" % a for a in extra))
    return diffs


def injected_faults(dumped):
    """Copies of the dump's tasks, each with one fault the comparison must
    report: (what, tasks)."""
    import copy
    deep = [a for a, t in dumped.items() if len(t.get("stack") or []) >= 2]
    awaited = [a for a, t in dumped.items() if t.get("awaited_by")]
    others = [a for a in dumped if a not in awaited]
    faults = []
    def variant(what, change):
        tasks = copy.deepcopy(dumped)
        change(tasks)
        faults.append((what, tasks))
    if deep:
        variant("a stack reversed", lambda ts: ts[deep[0]]["stack"].reverse())
        variant("a line off by one", lambda ts: ts[deep[0]]["stack"][0].update(line=(ts[deep[0]]["stack"][0]["line"] or 0) + 1))
    variant("a task renamed", lambda ts: ts[next(iter(ts))].update(name="renamed"))
    variant("a task dropped", lambda ts: ts.pop(next(iter(ts))))
    if awaited and others:  # an awaiter edge given to a task that has none
        def move(ts):
            ts[others[0]]["awaited_by"] = ts[awaited[0]]["awaited_by"]
            ts[awaited[0]]["awaited_by"] = []
        variant("an awaiter edge moved to another task", move)
    return faults


def first(diffs, shown=3):
    """The first few differences, one a line, and how many more there are."""
    more = ["(and %d more)" % (len(diffs) - shown)] if len(diffs) > shown else []
    return "\n".join(diffs[:shown] + more)


def graph(ident, entry, proc, rest):
    """Part 1: the dump of a parked 3.14+ target against its own truth."""
    name = ident
    truth = json.loads(rest)
    want_tasks = [t for t in truth["tasks"] if t["task"]]
    want_futures = [t for t in truth["tasks"] if not t["task"]]
    names = {t["addr"]: repr(t["name"]) if t["task"] else "(a future)" for t in truth["tasks"]}
    if truth.get("pid") != proc.pid:
        raise RuntimeError("the target reports pid %s, started as %d" % (truth.get("pid"), proc.pid))

    status, out, err = fp("dump", "--async", "--json", "--pid", proc.pid)
    try:
        doc = json.loads(out) if status == 0 else None
    except ValueError as e:
        doc, err = None, err + (" [%s]" % e).encode()
    ok = isinstance(doc, dict) and isinstance(doc.get("tasks"), list) \
        and all(isinstance(t, dict) and isinstance(t.get("addr"), int) for t in doc["tasks"])
    check("%s: dump --async --json exits 0 with a JSON document" % name, ok,
          "status %s, stderr %s, stdout %r" % (status, said(err), text(out, 300)))
    points = ("the header", "the same tasks", "each task's name, state, thread, stack and awaited_by as the truth",
              "the same non-task futures")
    if not ok:
        for what in points:
            check("%s: %s" % (name, what), False, "no document to compare")
    else:
        py = doc.get("python") or {}
        header = {"pid": doc.get("pid"), "version": py.get("version"), "free_threaded": py.get("free_threaded"),
                  "debug": py.get("debug"), "asyncio_loaded": doc.get("asyncio_loaded")}
        want = {"pid": proc.pid, "version": entry["version"], "free_threaded": False,
                "debug": bool(entry.get("debug")), "asyncio_loaded": True}
        check("%s: %s" % (name, points[0]), header == want, "%s, expected %s" % (header, want))

        nodes = doc["tasks"]
        addrs = [t["addr"] for t in nodes]
        twice = sorted({a for a in addrs if addrs.count(a) > 1})
        dumped_tasks = {t["addr"]: t for t in nodes if t.get("task") is True}
        dumped_futures = {t["addr"]: t for t in nodes if t.get("task") is False}
        odd = [a for a in addrs if a not in dumped_tasks and a not in dumped_futures]
        missing = [t for t in want_tasks if t["addr"] not in dumped_tasks]
        extra = sorted(set(dumped_tasks) - {t["addr"] for t in want_tasks})
        diffs = ["missing %s" % label(t) for t in missing]
        diffs += ["a task not in the truth: %#x %r" % (a, dumped_tasks[a].get("name")) for a in extra]
        diffs += ["listed more than once: %#x" % a for a in twice]
        diffs += ["\"task\" neither true nor false: %#x" % a for a in odd]
        check("%s: %s" % (name, points[1]), not diffs,
              "the truth has %d tasks, the dump %d\n%s" % (len(want_tasks), len(dumped_tasks), first(diffs)))
        diffs = task_differences(want_tasks, dumped_tasks, names)
        check("%s: %s" % (name, points[2]), not diffs, first(diffs))
        faults = injected_faults(dumped_tasks)
        missed = [what for what, tasks in faults if not task_differences(want_tasks, tasks, names)]
        check("%s: the comparison reports each injected fault" % name, len(faults) == 5 and not missed,
              "%d faults injected, not reported: %s" % (len(faults), ", ".join(missed)))
        diffs = future_differences(want_futures, dumped_futures, names)
        check("%s: %s" % (name, points[3]), not diffs, first(diffs))

    status, out, err = fp("dump", "--async", "--pid", proc.pid)
    shown = text(out)
    unnamed = [t["name"] for t in want_tasks
               if not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(t["name"]), shown)]
    check("%s: the text form exits 0 and names every task" % name, status == 0 and not unnamed,
          "status %s, stderr %s, names missing: %s" % (status, said(err), ", ".join(unnamed)))
    check_resumed(name, proc)


def refusal(ident, proc):
    """Part 2: no task graph to read; a one-line refusal."""
    status, out, err = fp("dump", "--async", "--pid", proc.pid)
    lines = text(err).splitlines()
    check("%s: dump --async refused: exit 1, one line on stderr, nothing on stdout" % ident,
          status == 1 and len(lines) == 1 and out == b"",
          "status %s, stderr %s, stdout %r" % (status, said(err), text(out, 300)))
    check_resumed(ident, proc)


def main():
    manifest, every = interpreters()
    for ident, entry in every:
        if entry is None:
            skip(ident, "not provisioned (no entry in %s)" % manifest)
            continue
        supported = version(entry) >= ASYNC_MIN and not entry.get("free_threaded")
        dest = proc = None
        try:
            dest, script = install(entry.get("root", "/"))
            proc, rest = start(entry, script)
            if supported:
                graph(ident, entry, proc, rest)
            else:
                refusal(ident, proc)
        except (RuntimeError, OSError, ValueError, KeyError) as e:
            check("%s: setup" % ident, False, "%s: %s" % (type(e).__name__, e))
        finally:
            if proc is not None:
                proc.kill()
                proc.wait()
            if dest is not None:
                shutil.rmtree(dest, ignore_errors=True)
    report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
