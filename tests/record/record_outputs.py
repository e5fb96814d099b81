"""record_outputs.py — the checks of `frameproof record`'s output formats
(test_record.py part 2): speedscope against the speedscope package's schema
and loaded in a browser, gecko against the shape CPython's own sampler
writes and loaded by the Firefox Profiler's loader, JSON Lines records
consistent and their summary complete."""
import json
import os
import re
import shutil
import subprocess
import sys

from record_common import (  # noqa: E402
    fpfacts, LOAD_SPEEDSCOPE, LOAD_GECKO, CPYTHON_GECKO_ID, TIMEOUT, RUN_SECONDS, RATE, KEPT, Interp
)
from tap_results import check, skip  # noqa: E402


def check_speedscope(name, path, schema):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    problems = []
    nframes = len(doc["shared"]["frames"])
    period_ms = 1000.0 / RATE
    for p in doc["profiles"]:
        if not (len(p["samples"]) == len(p["weights"]) > 0
                and abs(p["endValue"] - period_ms * len(p["samples"])) < 1e-6 * p["endValue"]):
            problems.append(f"{p['name']}: {len(p['samples'])} samples, {len(p['weights'])} weights, "
                            f"endValue {p['endValue']}")
        if p["unit"] != "milliseconds" or any(w != period_ms for w in p["weights"]):
            problems.append(f"{p['name']}: unit {p['unit']}, weights {set(p['weights'])}, not {period_ms} ms each")
        if not re.fullmatch(r".+ \(\d+\)", p["name"]) or "pid" in p["name"]:
            problems.append(f"profile named {p['name']!r}, not by its thread's name and native id")
        if any(i >= nframes for s in p["samples"] for i in s):
            problems.append(f"{p['name']}: frame index out of range")
    if not any(f["name"] == "hot" for f in doc["shared"]["frames"]):
        problems.append("no frame named hot")
    check(f"{name}: speedscope consistent", not problems and len(doc["profiles"]) >= 2, "\n".join(problems))
    if schema is None:
        skip(f"{name}: speedscope valid against its schema", "speedscope not provisioned (ci/speedscope)")
        return
    import jsonschema
    with open(schema, encoding="utf-8") as f:
        sch = json.load(f)
    try:
        jsonschema.validate(doc, sch)
        check(f"{name}: speedscope valid against its schema", True)
    except jsonschema.ValidationError as e:
        check(f"{name}: speedscope valid against its schema", False, str(e)[:2000])


def gecko_problems(doc, kept):
    problems = []
    strings = doc["shared"]["stringArray"]
    total = 0
    for t in doc["threads"]:
        st, fr, fn, rs, sm = t["stackTable"], t["frameTable"], t["funcTable"], t["resourceTable"], t["samples"]
        for table in (st, fr, fn, rs, sm):
            lengths = {k: len(v) for k, v in table.items() if isinstance(v, list)}
            if any(n != table["length"] for n in lengths.values()):
                problems.append(f"{t['name']}: columns of unequal length {lengths} (length {table['length']})")
        if any(p is not None and p >= i for i, p in enumerate(st["prefix"])):
            problems.append(f"{t['name']}: a stack's prefix is not an earlier stack")
        if any(f >= fr["length"] for f in st["frame"]) or any(f >= fn["length"] for f in fr["func"]):
            problems.append(f"{t['name']}: frame or function index out of range")
        if any(n >= len(strings) for n in fn["name"] + fn["fileName"]) or any(s >= st["length"] for s in sm["stack"]):
            problems.append(f"{t['name']}: string or stack index out of range")
        if sm["time"] != sorted(sm["time"]):
            problems.append(f"{t['name']}: sample times out of order")
        total += sm["length"]
    if kept is None or total != kept:
        problems.append(f"{total} samples, the summary kept {kept}")
    if not {"hot", "cold", "spin"} <= set(strings):
        problems.append("hot, cold or spin missing from the string array")
    return problems


def gecko_shape(doc):
    """Top-level keys, meta keys and versions, and every thread table's columns."""
    t = doc["threads"][0]
    return (sorted(doc), sorted(doc["meta"]), doc["meta"]["version"], doc["meta"]["preprocessedProfileVersion"],
            sorted(t), {k: sorted(v) for k, v in t.items() if isinstance(v, dict)}, sorted(doc["shared"]))


def load_in_firefox_profiler(name, path, doc, kept, facts):
    """The Firefox Profiler's own loader and call tree (its command-line
    client under Node.js) open the file and count its samples."""
    what = f"{name}: the Firefox Profiler's loader opens the gecko profile"
    home = os.environ.get("FRAMEPROOF_HOME") or facts["FRAMEPROOF_HOME_DEFAULT"]
    cli = os.path.join(home, "profiler-cli-" + facts["PROFILER_CLI_VERSION"], "package", "dist", "profiler-cli.js")
    if not os.path.exists(cli):
        skip(what, "profiler-cli not provisioned (ci/profiler-cli)")
        return
    if kept is None:
        check(what, False, "the summary gave no count of kept samples")
        return
    r = subprocess.run([sys.executable, LOAD_GECKO, cli, path, str(kept), "hot", "cold", "spin"],
                       capture_output=True, text=True, timeout=TIMEOUT)
    if r.returncode == 2:
        skip(what, r.stderr.strip())
        return
    check(what, r.returncode == 0, r.stderr.strip())
    # The check has teeth: the same profile with hot and cold renamed
    # into each other must fail it.
    strings = doc["shared"]["stringArray"]
    swapped = json.loads(json.dumps(doc))
    swapped["shared"]["stringArray"] = [{"hot": "cold", "cold": "hot"}.get(x, x) for x in strings]
    bad = path + ".swapped.json"
    with open(bad, "w", encoding="utf-8") as f:
        json.dump(swapped, f)
    r = subprocess.run([sys.executable, LOAD_GECKO, cli, bad, str(kept), "hot", "cold", "spin"],
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(f"{name}: the Firefox Profiler check fails for hot and cold swapped",
          r.returncode == 1 and "samples" in r.stderr, r.stderr.strip())


def check_gecko(name, path, stderr, facts):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    kept = KEPT.search(stderr)
    problems = gecko_problems(doc, int(kept.group(1)) if kept else None)
    check(f"{name}: gecko tables consistent", not problems, "\n".join(problems))
    load_in_firefox_profiler(name, path, doc, int(kept.group(1)) if kept else None, facts)
    _, provisioned = fpfacts.provisioned(fpfacts.load())
    ref = provisioned.get(CPYTHON_GECKO_ID)
    what = f"{name}: gecko has the shape CPython {CPYTHON_GECKO_ID}'s own sampler writes"
    if ref is None:
        skip(what, f"{CPYTHON_GECKO_ID} not provisioned")
        return
    it = Interp(ref)
    try:
        out = os.path.join(it.tmp, "cpython.gecko.json")
        inner = it.script.rsplit("/", 1)[0] + "/cpython.gecko.json"
        pre = ["chroot", it.root] if it.root != "/" else []
        r = subprocess.run(pre + list(ref["argv"]) + ["-m", "profiling.sampling", "run", "-a", "-r", str(RATE), "--gecko",
                                                      "-o", inner, it.script, str(RUN_SECONDS)],
                           capture_output=True, text=True, timeout=TIMEOUT)
        if r.returncode != 0:
            check(what, False, r.stderr[-500:])
            return
        with open(out, encoding="utf-8") as f:
            theirs = json.load(f)
        check(what, gecko_shape(doc) == gecko_shape(theirs), f"ours {gecko_shape(doc)}\ntheirs {gecko_shape(theirs)}")
        # Both checks have teeth: a column dropped, a prefix pointing ahead.
        bad = json.loads(json.dumps(doc))
        del bad["threads"][0]["frameTable"]["inlineDepth"]
        bad["threads"][-1]["stackTable"]["prefix"][0] = 0
        check(f"{name}: the gecko checks catch a dropped column and a bad prefix",
              gecko_shape(bad) != gecko_shape(theirs) and gecko_problems(bad, int(kept.group(1)) if kept else None))
    finally:
        it.close()


def load_in_browser(name, path, schema):
    """The speedscope app itself opens the file in headless Chromium."""
    what = f"{name}: the speedscope app opens the profile in headless Chromium"
    release = os.path.dirname(schema)
    if not os.path.exists(os.path.join(release, "index.html")):
        skip(what, "speedscope not provisioned (ci/speedscope)")
        return
    if not any(shutil.which(c) for c in ("chromium", "chromium-browser")):
        skip(what, "chromium not installed")
        return
    png = path + ".png"
    r = subprocess.run([sys.executable, LOAD_SPEEDSCOPE, release, path, png, "hot", "cold", "spin"],
                       capture_output=True, text=True, timeout=TIMEOUT)
    if r.returncode == 2:
        skip(what, r.stderr.strip())
        return
    check(what, r.returncode == 0 and os.path.getsize(png) > 0, r.stderr.strip())
    # The check has teeth: a function the profile does not hold is not found.
    r = subprocess.run([sys.executable, LOAD_SPEEDSCOPE, release, path, png, "hot", "no_such_function"],
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(f"{name}: the app check fails for a function the profile does not hold",
          r.returncode == 1 and "no_such_function" in r.stderr, r.stderr.strip())


def check_json(name, path):
    with open(path, encoding="utf-8") as f:
        recs = [json.loads(line) for line in f]
    problems = []
    if not recs or recs[0]["type"] != "header" or recs[-1]["type"] != "summary":
        problems.append("not header ... summary")
    seen = {"thread": 0, "frame": 0, "stack": 0}
    samples = 0
    last_t = -1
    for r in recs[1:-1]:
        t = r["type"]
        if t in seen:
            if r["id"] != seen[t]:
                problems.append(f"{t} id {r['id']}, expected {seen[t]}")
            seen[t] += 1
            if t == "stack" and (r["frame"] >= seen["frame"] or (r["parent"] is not None and r["parent"] >= r["id"])):
                problems.append(f"stack {r} refers ahead")
        elif t == "sample":
            samples += 1
            if r["thread"] >= seen["thread"] or r["stack"] >= seen["stack"] or r["t_ns"] < last_t:
                problems.append(f"sample {r} out of range or out of time order")
            last_t = r["t_ns"]
        else:
            problems.append(f"unknown record type {t}")
    if recs and recs[-1].get("thread_samples") != samples:
        problems.append(f"{samples} sample records, summary says {recs[-1].get('thread_samples')}")
    # The default spaces ticks in the target's own time: its samples held the target, for less than the run.
    held, elapsed = (recs[-1].get("held_s"), recs[-1].get("elapsed_s")) if recs else (None, None)
    if not (isinstance(held, (int, float)) and isinstance(elapsed, (int, float)) and 0 < held < elapsed):
        problems.append(f"summary's held_s {held!r} not in (0, elapsed_s {elapsed!r})")
    check(f"{name}: JSON Lines records consistent", not problems and samples > 0, "\n".join(problems[:20]))
