"""test_protocol_schema -- the JSON Schema of the unwinder-command protocol
(docs/unwinder-protocol.schema.json): `frameproof dump --json` of a real
parked target must validate on every provisioned interpreter (interpreters
of the matrix that are not provisioned are skipped), so must the stored
documents of tests/data/protocol/, and documents that break the protocol
must be rejected.  TAP.

usage: test_protocol_schema.py FRAMEPROOF TARGETS_DIR SCHEMA DATA_DIR SCRATCH_DIR
(the manifest is $FRAMEPROOF_HOME's, read at run time)
"""

import copy
import glob
import json
import os
import shlex
import subprocess
import sys

import jsonschema

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
from tap_results import check, report, skip  # noqa: E402

sys.path.insert(0, os.path.join(HERE, "..", "..", "facts"))
import fpfacts  # noqa: E402  (the shared facts)

# The interpreter matrix (docs/interpreters.md).
MATRIX = ["3.11", "3.11-pyenv", "3.12-pyenv", "3.13.0-pyenv", "3.13", "3.13-dbg", "3.13t",
          "3.14", "3.14-dbg", "3.15", "3.15-dbg"]
SCENARIO = "generators"
RUN_TIMEOUT_S = 300


def validator(schema_path):
    with open(schema_path, encoding="utf-8") as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def errors_of(v, doc):
    return [f"{'/'.join(map(str, e.absolute_path)) or '$'}: {e.message}" for e in v.iter_errors(doc)]


def check_live(v, frameproof, manifest, targets, scratch):
    why = ""
    try:
        with open(manifest, encoding="utf-8") as f:
            provisioned = {e["id"] for e in json.load(f)["interpreters"]}
    except OSError as e:
        provisioned = set()
        why = f"no manifest ({e.strerror})"
    for ident in MATRIX:
        name = f"dump --json of a parked {SCENARIO} target validates on {ident}"
        if ident not in provisioned:
            skip(name, why if not provisioned else "not provisioned")
            continue
        out_dir = os.path.join(scratch, ident)
        os.makedirs(out_dir, exist_ok=True)
        for old in glob.glob(os.path.join(out_dir, "*.json")):
            os.unlink(old)
        # Each checkpoint's dump goes to its own file ({seq} is a number).
        at = "sh -c %s" % shlex.quote(
            "%s dump --json --pid {pid} > %s/{seq}.json" % (shlex.quote(frameproof), shlex.quote(out_dir)))
        r = subprocess.run([sys.executable, os.path.join(targets, "groundtruth", "run_scenario.py"),
                            "-i", ident, "--quiet", "--at-checkpoint", at, SCENARIO],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=RUN_TIMEOUT_S,
                           env=dict(os.environ, FRAMEPROOF_HOME=os.path.dirname(os.path.abspath(manifest))))
        files = sorted(glob.glob(os.path.join(out_dir, "*.json")))
        problems = []
        if r.returncode != 0:
            problems.append(f"run_scenario exited {r.returncode}: {r.stdout.decode(errors='replace')}")
        if not files:
            problems.append("no checkpoint was dumped")
        for path in files:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
            problems += [f"{os.path.basename(path)}: {e}" for e in errors_of(v, doc)]
            if not any(fr.get("kind") == "generator" for i in doc["interpreters"]
                       for t in i["threads"] for fr in t["frames"]):
                problems.append(f"{os.path.basename(path)}: no generator frame")
        check(f"{name} ({len(files)} checkpoints)", not problems, "\n".join(problems))


def check_stored(v, data_dir):
    paths = sorted(glob.glob(os.path.join(data_dir, "protocol", "*.json")))
    check("stored protocol documents exist", len(paths) >= 7, f"{len(paths)} found")
    for path in paths:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        errs = errors_of(v, doc)
        check(f"stored document {os.path.basename(path)} validates", not errs, "\n".join(errs))


def thread(**kw):
    t = {"native_id": 1, "frames": [{"function": "f", "line": 1, "kind": "python"}]}
    t.update(kw)
    return t


def doc_with(t):
    return {"interpreters": [{"id": 0, "threads": [t]}]}


def without(d, key):
    d = copy.deepcopy(d)
    del d[key]
    return d


def frame_doc(**kw):
    f = {"function": "f", "line": 1}
    f.update(kw)
    return doc_with(thread(frames=[f]))


REJECTED = [
    ("a list at the top", []),
    ("no interpreters", {"threads": []}),
    ("interpreters not an array", {"interpreters": {}}),
    ("an interpreter without threads", {"interpreters": [{"id": 0}]}),
    ("a string interpreter id", {"interpreters": [{"id": "0", "threads": []}]}),
    ("all_threads not a boolean", {"all_threads": 1, "interpreters": []}),
    ("a thread with neither id", doc_with(without(thread(main=True), "native_id"))),
    ("a negative native_id", doc_with(thread(native_id=-5))),
    ("a native_id of 2**64", doc_with(thread(native_id=2 ** 64))),
    ("a string thread_id", doc_with(thread(thread_id="0x7f"))),
    ("main as 1", doc_with(thread(main=1))),
    ("status not an object", doc_with(thread(status=[]))),
    ("exception as a string", doc_with(thread(status={"exception": "yes"}))),
    ("an error with frames", doc_with(thread(error="lost"))),
    ("an error that is null", doc_with(thread(error=None, frames=[]))),
    ("no frames and no error", doc_with(without(thread(), "frames"))),
    ("frames not an array", doc_with(thread(frames={}))),
    ("a frame that is a string", doc_with(thread(frames=["f"]))),
    ("a string line", frame_doc(line="12")),
    ("a line of -1", frame_doc(line=-1)),
    ("a line of 2**31", frame_doc(line=2 ** 31)),
    ("a boolean column", frame_doc(column=True)),
    ("kind native", frame_doc(kind="native")),
    ("a numeric function", frame_doc(function=5)),
    ("a NUL in a file name", frame_doc(file="a\0b")),
]


def check_rejected(v):
    for label, doc in REJECTED:
        check(f"the schema rejects {label}", bool(errors_of(v, doc)), json.dumps(doc))
    # And the smallest valid documents are accepted.
    for label, doc in [("no interpreters at all", {"interpreters": []}),
                       ("an error thread without frames", doc_with(thread(error="lost", frames=[]))),
                       ("an error thread with no frames key", doc_with(without(thread(error="lost"), "frames"))),
                       ("thread_id only, null positions", doc_with({"thread_id": 7, "frames": [
                           {"line": None, "end_line": None, "column": None, "end_column": None}]}))]:
        errs = errors_of(v, doc)
        check(f"the schema accepts {label}", not errs, "\n".join(errs))


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    frameproof, targets, schema, data_dir, scratch = sys.argv[1:]
    manifest = fpfacts.manifest_path(fpfacts.load())
    v = validator(schema)
    check_rejected(v)
    check_stored(v, data_dir)
    check_live(v, os.path.abspath(frameproof), manifest, targets, scratch)
    report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
