"""Where the scenarios are and which apply (part of run_scenario.py).

The targets directory and its copy's name inside a chroot (the harness's
name for it), and each scenario's metadata: its entry in the index.json
next to the script (versions, builds, timeout), or defaults for a script no
index lists.

Contract: index.json is the one source of scenario metadata; nothing here
starts a process.
"""

import json
import os

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
    for name in meta.get("modules") or []:
        if name not in info.get("modules", []):
            return "needs module %s, not installed for this interpreter" % name
    return None


def resolve_scenario(arg):
    if os.sep in arg or arg.endswith(".py"):
        path = os.path.abspath(arg)
    else:
        path = os.path.join(SCENARIOS, arg + ".py")
    if not os.path.exists(path):
        raise SystemExit("no such scenario: %s" % arg)
    return path
