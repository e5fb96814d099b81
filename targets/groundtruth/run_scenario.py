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

# This file is the command line; the work is in modules next to it, each
# importing only the ones listed before it:
#   _runner_scenarios.py     scenario paths, index.json metadata, chroot name
#   _runner_interpreters.py  interpreters (-p, -i), the copy into a chroot
#   _runner_results.py       rendering checkpoints, comparing two runs
#   _runner_run_once.py      running one scenario under one interpreter
# Their public names are run_scenario's too (selftest.py and tests use them).

import argparse
import json
import os
import re
import signal
import sys

from _runner_scenarios import (CHROOT_TARGETS, HERE, SCENARIOS, TARGETS,
                               UNLISTED_META, applies, chroot_targets,
                               load_index, resolve_scenario, scenario_meta,
                               version_tuple)
from _runner_interpreters import (Interpreter, interpreters_from_args,
                                  load_manifest, manifest_path, sync_targets)
from _runner_results import first_difference, format_checkpoint, normalized
from _runner_run_once import (RunError, check_checkpoint, describe_status,
                              run_hook, run_once)

__all__ = ["HERE", "TARGETS", "SCENARIOS", "chroot_targets", "CHROOT_TARGETS",
           "UNLISTED_META", "load_index", "scenario_meta", "version_tuple",
           "applies", "resolve_scenario", "Interpreter", "manifest_path",
           "load_manifest", "interpreters_from_args", "sync_targets",
           "RunError", "check_checkpoint", "run_once", "format_checkpoint",
           "describe_status", "run_hook", "normalized", "first_difference",
           "main"]


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
