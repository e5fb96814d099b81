"""compare.py — the statistical accuracy of a profile against the truth a
workload accounted from inside (workloads.py): both become distributions
over (thread role, stack) and are compared by total variation distance.

A sample counts when one of its frames is the workload's anchor function
(the outermost such frame); its stack is the functions below the anchor,
innermost last, when the truth has that stack for the thread, and "(run)"
otherwise (time in the anchor outside every accounted piece, as in the
truth).  Samples without the anchor (start-up, shutdown) and samples of
threads the truth does not list are left out and counted.

The expected distance from sampling noise alone (the floor) for n
independent samples of a distribution p is sum_k sqrt(p_k (1 - p_k) /
(2 pi n)): the mean of half the L1 distance of a multinomial's empirical
frequencies, per class, to first order."""
import json
import math

RUN = "(run)"


def load_truth(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def truth_distribution(truth):
    """{(role, stack): probability}, weighting each thread by its time."""
    total = sum(t["run_ns"] for t in truth["threads"])
    dist = {}
    for t in truth["threads"]:
        for stack, ns in t["stacks"].items():
            dist[(t["role"], stack)] = max(ns, 0) / total if total else 0.0
    return dist


def record_samples(path):
    """[(native_id, [function, ...] root first)] from `frameproof record --format json`."""
    threads, frames, stacks, out = {}, {}, {}, []
    with open(path, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            t = r["type"]
            if t == "thread":
                threads[r["id"]] = r["native_id"]
            elif t == "frame":
                frames[r["id"]] = r["function"]
            elif t == "stack":
                parent = stacks[r["parent"]] if r["parent"] is not None else ()
                stacks[r["id"]] = parent + (frames[r["frame"]],)
            elif t == "sample":
                out.append((threads[r["thread"]], stacks[r["stack"]]))
    return out


def cpython_collapsed_samples(path):
    """[(native_id, [function, ...] root first)] from CPython 3.15's
    `profiling.sampling --collapsed` ("tid:N;file:function:line;... COUNT")."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            parts = stack.split(";")
            tid = int(parts[0].split(":", 1)[1])
            names = tuple(p.rsplit(":", 2)[1] for p in parts[1:])
            out.extend([(tid, names)] * int(count))
    return out


def profile_distribution(samples, truth):
    """({(role, stack): probability}, kept, left_out)."""
    roles = {t["native_id"]: t for t in truth["threads"]}
    anchor = truth["anchor"]
    counts, kept, left_out = {}, 0, 0
    for native_id, names in samples:
        t = roles.get(native_id)
        if t is None or anchor not in names:
            left_out += 1
            continue
        below = ";".join(names[names.index(anchor) + 1:])
        key = (t["role"], below if below in t["stacks"] and below != RUN else RUN)
        counts[key] = counts.get(key, 0) + 1
        kept += 1
    return ({k: v / kept for k, v in counts.items()} if kept else {}), kept, left_out


def tvd(p, q):
    return 0.5 * sum(abs(p.get(k, 0.0) - q.get(k, 0.0)) for k in set(p) | set(q))


def noise_floor(p, n):
    if n <= 0:
        return float("nan")
    return sum(math.sqrt(v * (1 - v) / (2 * math.pi * n)) for v in p.values())


def compare(samples, truth):
    """The accuracy of samples against truth, as a dict."""
    t = truth_distribution(truth)
    p, kept, left_out = profile_distribution(samples, truth)
    d = tvd(p, t)
    floor = noise_floor(t, kept)
    return {"samples": kept, "left_out": left_out, "tvd": d, "floor": floor, "excess": d - floor,
            "worst": sorted(((abs(p.get(k, 0.0) - t.get(k, 0.0)), "/".join(k), p.get(k, 0.0), t.get(k, 0.0))
                             for k in set(p) | set(t)), reverse=True)[:3]}
