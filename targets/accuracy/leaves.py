"""leaves.py — the normalisation of the real-workload accuracy verdict
(ci/accuracy real): every profiler's output becomes the same thing, a
distribution of leaf functions (self time), so that different unwinders
can be compared.

A sample's leaf is its innermost Python frame, keyed by (file basename,
plain function name): the last dot-separated component of the qualified
name, so "Pool.spawn" (co_qualname, frameproof and CPython's unwinders)
and "spawn" (co_name) are one function, and "f.<locals>.<lambda>" is
"<lambda>".  Pseudo-frames, which are not Python frames (CPython's sampler
writes "<GC>" and "<native>"; a frame with no file), are dropped first; a
sample austin marks as not read whole (an "INVALID" frame) is dropped.  A
sample with no Python frame left (a thread outside Python) is left out and
counted; every other thread's sample counts (wall mode).

Task stacks (`record --async`, CPython's --async-aware) hold frames of
file "<task>": a task's marker (named after the task) is no Python frame
and is dropped as the pseudo-frames are; a sample whose innermost frame is
frameproof's "<task step>" (a task being stepped by asyncio's C code, its
coroutine not entered) is left out whole and counted as stepped — the
reference's samples of that instant hold no frame of the task's coroutines
and are left out too (tasks_of below), as are CPython's, whose own frames
are then the event loop's.

Each reader returns a Leaves: counts {(file, function): samples}, kept
(samples with a leaf), dropped (samples without one or broken), torn (thread
samples the profiler itself left out as torn; frameproof's summary says)
and totals {(file, function): samples whose kept stack holds it anywhere},
a function's total share for the inside truth (ci/accuracy inside)."""
import collections
import json
import os
import re

PSEUDO_FUNCTIONS = {"<GC>", "<native>"}   # CPython's sampler's artificial frames
NO_FILE = {"", "~", None}
TASK_FILE = "<task>"                    # a task stack's marker frames
STEP = (TASK_FILE, "<task step>")       # frameproof's frame of a task being stepped
BROKEN = ("", "INVALID")   # austin's mark of a stack it could not read whole: the sample is dropped


class Leaves:
    def __init__(self, keep=None):
        """keep: None, or a predicate on a sample's own keys (innermost
        last) and whether it is a task stack (own_keys) that says whether
        the sample is one of those read (the others are counted in
        left_out)."""
        self.counts = collections.Counter()
        self.totals = collections.Counter()
        self.kept = 0
        self.dropped = 0
        self.stepped = 0   # task stacks of a task being stepped, left out
        self.left_out = 0  # samples keep refused
        self.keep = keep
        self.torn = None   # thread samples the profiler left out as torn, when it says

    def add(self, frames, n=1):
        """frames: [(file, qualified function), ...] innermost LAST."""
        if BROKEN in frames:
            self.dropped += n
            return
        if frames and tuple(frames[-1]) == STEP:
            self.stepped += n
            return
        keys = [(os.path.basename(file), function.rsplit(".", 1)[-1]) for file, function in frames
                if function not in PSEUDO_FUNCTIONS and file not in NO_FILE and file != TASK_FILE]
        if self.keep is not None and not self.keep(*own_keys(frames)):
            self.left_out += n
            return
        if not keys:
            self.dropped += n
            return
        self.counts[keys[-1]] += n
        for key in set(keys):
            self.totals[key] += n
        self.kept += n

    def distribution(self):
        return {k: v / self.kept for k, v in self.counts.items()} if self.kept else {}


def own_keys(frames):
    """The keys of a sample's own frames and whether it is a task stack: in
    a task stack, the frames innermost of its innermost task marker (the
    running task's), else all of them."""
    marks = [i for i, (file, _) in enumerate(frames) if file == TASK_FILE]
    own = frames[marks[-1] + 1:] if marks else frames
    return [(os.path.basename(file), function.rsplit(".", 1)[-1]) for file, function in own
            if function not in PSEUDO_FUNCTIONS and file not in NO_FILE], bool(marks)


def tasks_of(file, coroutines, functions):
    """A keep predicate for a workload whose tasks run coroutines (plain
    names) and, under them, functions of file (a basename): the samples of
    one of its tasks running.  A thread stack is one when it holds a frame
    of the coroutines (under a plain function there is always one); a task
    stack when its own frames hold a frame of either — not CPython's task
    being stepped, whose own frames are then the event loop's."""
    coro = {(file, f) for f in coroutines}
    code = coro | {(file, f) for f in functions}

    def keep(own, task_stack):
        return any(k in (code if task_stack else coro) for k in own)
    return keep


def frameproof_json(path, keep=None):
    """(Leaves, summary record) of `frameproof record --format json`."""
    frames, stacks, leaves, summary = {}, {}, Leaves(keep), {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            t = r["type"]
            if t == "frame":
                frames[r["id"]] = (r["file"], r["function"])
            elif t == "stack":
                parent = stacks[r["parent"]] if r["parent"] is not None else ()
                stacks[r["id"]] = parent + (frames[r["frame"]],)
            elif t == "sample":
                leaves.add(stacks[r["stack"]])
            elif t == "summary":
                summary = r
    leaves.torn = summary.get("torn_threads")
    return leaves, summary


def split_frame(text):
    """"file:function:line" -> (file, function); the file may hold colons."""
    parts = text.rsplit(":", 2)
    return (parts[0], parts[1]) if len(parts) == 3 else ("", text)


def read_collapsed(path, is_thread_field, weighted, keep=None):
    """Leaves of collapsed stacks ("THREAD;file:function:line;... N",
    outermost first, "#" lines skipped): leading fields for which
    is_thread_field is true name the process or thread and are skipped; a
    line counts N samples when weighted, else one; keep as Leaves'."""
    leaves = Leaves(keep)
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            stack, _, n = line.rpartition(" ")
            if weighted and not n.isdigit():
                leaves.dropped += 1   # not a "STACK COUNT" line: a name that held a newline
                continue
            parts = stack.split(";")
            while parts and is_thread_field(parts[0]):
                parts.pop(0)
            leaves.add([split_frame(p) for p in parts if p], int(n) if weighted else 1)
    return leaves


def collapsed(path, keep=None):
    """CPython's `profiling.sampling --collapsed` and
    remote_unwinder_record.py: "tid:N;..." then COUNT samples."""
    return read_collapsed(path, lambda field: field.startswith("tid:"), True, keep)


AUSTIN_THREAD_FIELD = re.compile(r"^[PT][0-9a-fx:]+$")


def austin(path):
    """austin 3.7's collapsed output ("P<pid>;T<iid>:<tid>;file:function:line;
    ... METRIC"; "# " lines are metadata): one sample per line, whatever
    its metric (the time since the thread's previous sample), as every
    other profiler here counts samples."""
    return read_collapsed(path, AUSTIN_THREAD_FIELD.match, False)
