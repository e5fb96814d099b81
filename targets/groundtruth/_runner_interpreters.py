"""The interpreters a run uses (part of run_scenario.py).

An Interpreter is a command line and the root it lives in, with the
environment of its manifest entry; they come from -p command lines and from
the ids of -i in the interpreters manifest (facts/fpfacts.py says where it
is).  For an interpreter in a root other than "/", groundtruth/ and
scenarios/ are copied into the chroot, where the harness puts its copy.

Contract: probe() starts the interpreter once to learn its version and
build; the copy into a chroot rewrites only files that changed.
"""

import json
import os
import shlex
import shutil
import subprocess
import sys

from _runner_scenarios import CHROOT_TARGETS, TARGETS, load_index

sys.path.insert(0, os.path.join(os.path.dirname(TARGETS), "facts"))
import fpfacts  # noqa: E402  (the shared facts)


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
        """version, hexversion, free_threaded, debug, and modules: which
        of the modules the scenarios' index entries need it imports."""
        if self.info is None:
            needed = sorted({m for e in load_index() for m in e.get("modules", [])})
            code = ("import importlib, sys, json, sysconfig, platform\n"
                    "def importable(name):\n"
                    "    try:\n"
                    "        importlib.import_module(name)\n"
                    "    except Exception:\n"
                    "        return False\n"
                    "    return True\n"
                    "print(json.dumps("
                    "{'version': platform.python_version(), 'hexversion': "
                    "sys.hexversion, 'free_threaded': bool(sysconfig."
                    "get_config_var('Py_GIL_DISABLED')), 'debug': hasattr("
                    "sys, 'gettotalrefcount'), 'modules': [m for m in %r "
                    "if importable(m)]}))" % (needed,))
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
