"""asyncgraph.py — what the checks of asyncio task graphs share
(tests/async/test_dump_async.py, ci/async_field.py): the interpreters that
run park_tasks.py, starting it (in its interpreter's root) and reading the
truth it prints, and comparing a graph in the shape of `frameproof dump
--async --json` against that truth.

A graph here is a list of nodes as the dump's "tasks" gives them: "addr",
"task", "name", "thread", "stack" (innermost first; each frame an object
with "function" and "line", or a [function, line] pair) and "awaited_by"
(addresses).  The truth (park_tasks.py's "ready" line) has the same keys,
its stacks as [function, line] pairs and its awaited_by sorted."""
import copy
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
sys.path.insert(0, os.path.join(HERE, "..", "..", "facts"))
import fpfacts  # noqa: E402  (the shared facts)

TARGET = os.path.join(HERE, "park_tasks.py")
TIMEOUT = 60          # default wait for the target's "ready"
ASYNC_MIN = (3, 14)   # the first CPython whose tasks carry a graph to read
LEGACY_MIN = (3, 11)  # the first CPython whose task graph frameproof reads (from asyncio's registries)
# The target's environment, as targets/capture_images gives it, plus the
# manifest entry's own "env" (PYTHON_JIT=1 for a "+jit" id): only the entry
# decides whether the JIT is on.
CLEAN_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1",
             "PYTHONHASHSEED": "0"}


# ---------------------------------------------------------------------------
# Interpreters and targets

def interpreters():
    """(manifest path, [(id, manifest entry or None)]): the matrix's ids,
    then the JIT ids."""
    facts = fpfacts.load()
    manifest, every = fpfacts.matrix(facts)
    _, have = fpfacts.provisioned(facts, manifest)
    every += [(ident, have.get(ident)) for ident in facts.get("JIT_IDS", "").split()]
    return manifest, every


def each_interpreter(with_graph, without_graph, check, skip, graph=None):
    """Calls with_graph(ident, entry) for every provisioned interpreter with
    a task graph (graph(entry), has_graph by default) and
    without_graph(ident, entry) for the others (a string instead: each is
    skipped with it as the reason), skips the ids not provisioned, and turns
    a failure to set a case up into a failed check."""
    graph = graph or has_graph
    manifest, every = interpreters()
    for ident, entry in every:
        if entry is None:
            skip(ident, "not provisioned (no entry in %s)" % manifest)
        elif not graph(entry) and isinstance(without_graph, str):
            skip(ident, without_graph)
        else:
            try:
                (with_graph if graph(entry) else without_graph)(ident, entry)
            except (RuntimeError, OSError, ValueError, KeyError, subprocess.TimeoutExpired) as e:
                check("%s: setup" % ident, False, "%s: %s" % (type(e).__name__, e))


def plan(only, say, graph=None):
    """(entries, skipped ids) of the reference runs (ci/async-field,
    ci/async-record, ci/async-live): every provisioned interpreter with a
    task graph (graph(entry), has_graph by default), or those of the ids in
    only (None: all); say(message) is told of each id not provisioned.
    LookupError for an id that is no matrix or JIT id, or when no
    interpreter is left."""
    graph = graph or has_graph
    manifest, every = interpreters()
    entries, skipped = [], []
    for ident, entry in every:
        if only and ident not in only:
            continue
        if entry is None:
            say("%s: not provisioned (no entry in %s): skipped" % (ident, manifest))
            skipped.append(ident)
        elif graph(entry):
            entries.append(entry)
    unknown = set(only or ()) - {i for i, _ in every}
    if unknown:
        raise LookupError("no interpreter id %s in the matrix or the JIT ids" % ", ".join(sorted(unknown)))
    if not entries:
        raise LookupError("no interpreter with a task graph to read provisioned (%s)" % manifest)
    return entries, skipped


def version(entry):
    return tuple(int(x) for x in entry["version"].split(".")[:2])


def has_graph(entry):
    """A task graph asyncio keeps itself (CPython 3.14+, GIL or free-threaded):
    what CPython's own views read, and what the live, churn and profile
    checks cover."""
    return version(entry) >= ASYNC_MIN


def reads_graph(entry):
    """A task graph `frameproof dump --async` reads: every supported CPython
    (before 3.14 from the asyncio.tasks module's registries)."""
    return version(entry) >= LEGACY_MIN


def chrooted(entry):
    return entry.get("root", "/").rstrip("/") != ""


def install(root, files=(TARGET,)):
    """Copies files (park_tasks.py by default) into a fresh directory under
    root's /tmp; returns (that directory on this host, the same directory as
    a process in root sees it)."""
    tmp = os.path.join(root, "tmp")
    dest = tempfile.mkdtemp(prefix="frameproof-async-", dir=tmp)
    os.chmod(dest, 0o755)
    for path in files:
        shutil.copyfile(path, os.path.join(dest, os.path.basename(path)))
    return dest, "/tmp/%s" % os.path.basename(dest)


def command(entry, args):
    """entry's interpreter with args, through `chroot ROOT` when its root is
    not "/"."""
    argv = list(entry["argv"]) + [str(a) for a in args]
    if chrooted(entry):
        argv = [shutil.which("chroot") or "/usr/sbin/chroot", entry["root"]] + argv
    return argv


def environment(entry):
    env = dict(CLEAN_ENV)
    env.update(entry.get("env") or {})
    return env


def start(entry, script, timeout=TIMEOUT, started=None, stderr=None, env=None):
    """Starts script under entry (through `chroot ROOT` when its root is not
    "/"), env added to its environment; returns (process, the rest of its
    "ready" line, stripped).  The
    process is appended to the list started (when given) as soon as it
    exists; RuntimeError (the process killed) when it does not print "ready"
    within timeout seconds."""
    proc = subprocess.Popen(command(entry, [script]), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=stderr, env=dict(environment(entry), **(env or {})), cwd="/")
    if started is not None:
        started.append(proc)
    deadline = time.monotonic() + timeout
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or proc.poll() is not None:
            proc.kill()
            status = proc.wait()
            raise RuntimeError("the target did not print ready within %d s (status %s, printed %r)"
                               % (timeout, status, line[:200]))
        r, _, _ = select.select([proc.stdout], [], [], left)
        if r:
            line += os.read(proc.stdout.fileno(), 1 << 16)
    word, _, rest = line.strip().partition(b" ")
    if word != b"ready":
        proc.kill()
        proc.wait()
        raise RuntimeError("the target printed %r instead of ready" % line[:200])
    return proc, rest


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


def resumed(proc, grace_s):
    """(ok, detail): proc runs on and, within grace_s (the kernel may take a
    moment to let a tracer's threads go), none of its threads is stopped or traced."""
    deadline = time.monotonic() + grace_s
    while True:
        held = held_threads(proc.pid)
        if not held or time.monotonic() >= deadline:
            break
        time.sleep(0.01)
    return (proc.poll() is None and not held,
            "exit status %s; held threads (tid, state, tracer): %s" % (proc.poll(), held[:5]))


def stop(proc, dest):
    """Kills a target start() started (None: none) and removes the directory
    install() made for it (None: none)."""
    if proc is not None:
        proc.kill()
        proc.wait()
    if dest is not None:
        shutil.rmtree(dest, ignore_errors=True)


def read_truth(rest, pid):
    """The truth of a "ready" line's rest: (tasks, non-task futures, names:
    {addr: how a difference names it}); RuntimeError when it is of another
    process than pid."""
    truth = json.loads(rest)
    if truth.get("pid") != pid:
        raise RuntimeError("the target reports pid %s, started as %d" % (truth.get("pid"), pid))
    tasks = [t for t in truth["tasks"] if t["task"]]
    futures = [t for t in truth["tasks"] if not t["task"]]
    names = {t["addr"]: repr(t["name"]) if t["task"] else "(a future)" for t in truth["tasks"]}
    return tasks, futures, names


# ---------------------------------------------------------------------------
# Differences, one string each (tests/async/test_dump_async.py)

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


def pairs(stack):
    """A stack as [function, line] pairs, from the dump's frame objects or
    from pairs; anything else is kept as it is."""
    if not isinstance(stack, list):
        return stack
    return [[f.get("function"), f.get("line")] if isinstance(f, dict) else list(f) if isinstance(f, (list, tuple))
            else f for f in stack]


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
                got = pairs(got)
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
        ("name", t["name"]), ("state", "pending"), ("thread", t["thread"]), ("running", t.get("running", False)),
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
    deep = [a for a, t in dumped.items() if len(t.get("stack") or []) >= 2]
    awaited = [a for a, t in dumped.items() if t.get("awaited_by")]
    others = [a for a in dumped if a not in awaited]
    faults = []

    def variant(what, change):
        tasks = copy.deepcopy(dumped)
        change(tasks)
        faults.append((what, tasks))
    cut = [a for a, t in dumped.items() if t.get("running") and len(t.get("stack") or []) >= 2]
    if cut:  # what a dump that follows only the running task's coroutine chain shows
        variant("a running task's stack cut to its coroutine", lambda ts: ts[cut[0]].update(stack=ts[cut[0]]["stack"][-1:]))
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


# ---------------------------------------------------------------------------
# Verdicts per task and field, failures classified (ci/async_field.py)

FIELDS = ("name", "stack", "awaiters", "thread")
EXAMPLE_CHARS = 240


def short(value, limit=100):
    s = json.dumps(value, separators=(",", ":"))
    return s if len(s) <= limit else s[:limit - 3] + "..."


def stack_class(got, want):
    """The failure class of a stack unlike the truth's (both innermost
    first, as lists of [function, line] pairs or of functions)."""
    if not isinstance(got, list):
        return "stack not a list"
    if not got:
        return "stack empty"
    if len(got) < len(want) and want[:len(got)] == got:
        return "stack cut"            # the outer frames missing
    if len(got) < len(want) and want[-len(got):] == got:
        return "stack cut inside"     # the innermost frames missing
    if len(got) > len(want) and got[:len(want)] == want:
        return "stack too long"
    if got == want[::-1]:
        return "stack reversed"
    fn = lambda s: [f[0] if isinstance(f, list) else f for f in s]  # noqa: E731
    if len(got) == len(want) and fn(got) == fn(want):
        return "wrong line"
    return "wrong stack"


def judge(want_tasks, nodes, fields=FIELDS, functions_only=False, want_futures=None):
    """Judges the task nodes of a view (nodes: a graph as above; a node
    with "task" false is a future) against the truth on fields, the fields
    the view reports; functions_only: its stacks have no lines.  Futures
    are judged when want_futures is given (the view lists futures as
    nodes).  Returns {"truth", "found", "exact", "right": {field: tasks
    right}, "missing": [names of the truth's tasks not found], "futures":
    {"truth", "exact"} or None, "failures": [(class, example)], one per
    task and class, or per node the truth lacks}."""
    names = {t["addr"]: t["name"] for t in want_tasks}
    failures = []
    seen, got_tasks, got_futures = set(), {}, {}
    for n in nodes:
        addr = n.get("addr")
        if addr in seen and addr is not None:
            failures.append(("node listed twice", "%s listed twice" % short(addr)))
            continue
        seen.add(addr)
        (got_tasks if n.get("task", True) else got_futures)[addr] = n
    right = {f: 0 for f in fields}
    exact = 0
    for t in want_tasks:
        who = "task %r (%#x)" % (t["name"], t["addr"])
        g = got_tasks.get(t["addr"])
        if g is None:
            awaiters = ", ".join(repr(names[a]) if a in names else "a future %#x" % a for a in t["awaited_by"])
            failures.append(("missing task", "%s on thread %s%s" % (
                who, t["thread"], ", awaited by " + awaiters if awaiters else "")))
            continue
        wrong = []
        for f in fields:
            if f == "name":
                ok, why = g.get("name") == t["name"], ("wrong name", "name %s" % short(g.get("name")))
            elif f == "thread":
                ok, why = g.get("thread") == t["thread"], ("wrong thread", "thread %s, truth %s" % (
                    short(g.get("thread")), t["thread"]))
            elif f == "stack":
                got, want = pairs(g.get("stack")), t["stack"]
                if functions_only:
                    want = [fn for fn, _ in want]
                ok = got == want
                why = None if ok else (stack_class(got, want), "stack %s, truth %s" % (short(got), short(want)))
            elif f == "awaiters":
                got, want = g.get("awaited_by"), t["awaited_by"]
                ok = isinstance(got, list) and sorted(map(str, got)) == sorted(map(str, want))
                if not ok:
                    got = got if isinstance(got, list) else []
                    lost = [a for a in want if a not in got]
                    more = [a for a in got if a not in want]
                    show = lambda a: "%#x %s" % (a, repr(names[a]) if a in names else "(a future)") \
                        if isinstance(a, int) else short(a)  # noqa: E731
                    detail = "awaited_by [%s], truth [%s]" % (", ".join(map(show, got)), ", ".join(map(show, want)))
                    if lost:
                        wrong.append(("awaiter missing", detail))
                    if more:
                        wrong.append(("awaiter extra", detail))
                    if not lost and not more:
                        wrong.append(("awaiters repeated", detail))
                    continue
            else:
                raise ValueError("no such field %r" % f)
            if ok:
                right[f] += 1
            else:
                wrong.append(why)
        if not wrong:
            exact += 1
        failures += [(c, "%s: %s" % (who, d)) for c, d in wrong]
    for addr, g in got_tasks.items():
        if addr not in names:
            failures.append(("extra task", "task %r%s not in the truth" % (
                g.get("name"), " (%#x)" % addr if isinstance(addr, int) else "")))
    futures = None
    if want_futures is not None:
        futures = {"truth": len(want_futures), "exact": 0}
        for t in want_futures:
            g = got_futures.get(t["addr"])
            if g is None:
                failures.append(("missing future", "future %#x" % t["addr"]))
            elif sorted(map(str, g.get("awaited_by") or [])) != sorted(map(str, t["awaited_by"])):
                failures.append(("future's awaiters wrong", "future %#x: awaited_by %s, truth %s" % (
                    t["addr"], short(g.get("awaited_by")), short(t["awaited_by"]))))
            else:
                futures["exact"] += 1
        want = {t["addr"] for t in want_futures}
        failures += [("extra future", "future %s not in the truth" % short(a)) for a in got_futures if a not in want]
    missing = [t["name"] for t in want_tasks if t["addr"] not in got_tasks]
    return {"truth": len(want_tasks), "found": len(want_tasks) - len(missing), "exact": exact, "right": right,
            "missing": missing, "futures": futures,
            "failures": [(c, e if len(e) <= EXAMPLE_CHARS else e[:EXAMPLE_CHARS - 3] + "...") for c, e in failures]}
