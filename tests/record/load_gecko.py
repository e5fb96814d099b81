"""Opens a gecko profile of `frameproof record` in the Firefox Profiler's
own code and checks what it shows.

usage: load_gecko.py CLI_JS PROFILE KEPT HOT COLD LEAF

CLI_JS is the Firefox Profiler's command-line client (npm
@firefox-devtools/profiler-cli, dist/profiler-cli.js, fetched by
ci/profiler-cli), which bundles the profiler's profile loader and call-tree
code and runs under Node.js.  The client loads PROFILE in a private session;
then, over every thread, its top-down call trees must count KEPT samples in
all (every sample the summary of `record` kept), and functions HOT and COLD
must each call LEAF, with more samples in HOT than in COLD.

Exit status: 0 when the profile loads and every check holds; 1 when a check
fails (the reason on stderr); 2 when the client cannot run here (no Node.js,
or one older than MIN_NODE)."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

MIN_NODE = 20        # the oldest Node.js the client was seen to run on
TIMEOUT_S = 120      # one client command (the first one loads the profile)
LOAD_TRIES = 3       # a load whose daemon was not ready in the client's own 500 ms (a loaded machine)
NOT_READY = "did not become ready"


class CheckFailed(Exception):
    pass


def node_major():
    node = shutil.which("node")
    if not node:
        return None
    r = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=TIMEOUT_S)
    m = re.match(r"v(\d+)\.", r.stdout.strip())
    return int(m.group(1)) if m else None


def client(cli, home, *args):
    r = subprocess.run(["node", cli, *args], capture_output=True, text=True, timeout=TIMEOUT_S,
                       env=dict(os.environ, HOME=home))
    if r.returncode != 0:
        raise CheckFailed(f"profiler-cli {' '.join(args)}: exit {r.returncode}: {(r.stderr or r.stdout).strip()[-800:]}")
    return r.stdout


def nodes(tree):
    yield tree
    for c in tree.get("children", []):
        yield from nodes(c)


def load(cli, home, profile):
    """The client's `load`, tried again (its daemons stopped first) when its
    daemon was not ready within the client's own 500 ms: on a loaded machine
    it starts slower, and the client itself says that retrying often works."""
    for attempt in range(LOAD_TRIES):
        try:
            return client(cli, home, "load", profile)
        except CheckFailed as e:
            if NOT_READY not in str(e) or attempt == LOAD_TRIES - 1:
                raise
            subprocess.run(["node", cli, "stop", "--all"], capture_output=True, timeout=TIMEOUT_S,
                           env=dict(os.environ, HOME=home))
    raise AssertionError("unreachable")


def check(cli, home, profile, kept, hot, cold, leaf):
    out = load(cli, home, profile)
    if "Session started" not in out:
        raise CheckFailed(f"profiler-cli load: no session started: {out.strip()[-400:]}")
    threads = json.loads(client(cli, home, "thread", "list", "--json"))["threads"]
    if not threads:
        raise CheckFailed("the profile holds no thread")
    total = 0
    counts = {hot: 0, cold: 0}
    callers_of_leaf = set()
    for t in threads:
        doc = json.loads(client(cli, home, "thread", "samples-top-down", "--json", "--include-idle",
                                "--thread", t["threadHandle"]))
        root = doc["regularCallTree"]
        total += root["totalSamples"]
        for n in nodes(root):
            if n["name"] in counts:
                counts[n["name"]] += n["totalSamples"]
                if any(c["name"] == leaf for c in n.get("children", [])):
                    callers_of_leaf.add(n["name"])
    problems = []
    if total != kept:
        problems.append(f"the call trees count {total} samples, the profile's summary kept {kept}")
    if not counts[hot] > counts[cold] > 0:
        problems.append(f"{hot} has {counts[hot]} samples and {cold} {counts[cold]}")
    missing = {hot, cold} - callers_of_leaf
    if missing:
        problems.append(f"{', '.join(sorted(missing))} does not call {leaf} in the call tree")
    if problems:
        raise CheckFailed("; ".join(problems))
    return f"{len(threads)} threads, {total} samples, {hot} {counts[hot]}, {cold} {counts[cold]}"


def main():
    if len(sys.argv) != 7:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    cli, profile, kept, hot, cold, leaf = sys.argv[1:]
    major = node_major()
    if major is None or major < MIN_NODE:
        print(f"Node.js {major or 'not found'}: the Firefox Profiler client needs {MIN_NODE} or newer", file=sys.stderr)
        return 2
    home = tempfile.mkdtemp(prefix="fp-profiler-cli-")
    try:
        print(check(cli, home, os.path.abspath(profile), int(kept), hot, cold, leaf))
        return 0
    except CheckFailed as e:
        print(str(e), file=sys.stderr)
        return 1
    finally:
        subprocess.run(["node", cli, "stop", "--all"], capture_output=True, timeout=TIMEOUT_S,
                       env=dict(os.environ, HOME=home))
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
