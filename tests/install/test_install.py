"""`meson install` gives a working, relocatable `frameproof` and a library
others can link (TAP): install into a staging directory (--destdir); build
examples/dump_pid.c outside the checkout with plain
`cc $(pkg-config --cflags --libs frameproof)` against the installed headers,
pkg-config file and shared library (soname libframeproof.so.MAJOR), and run
it on a CPython; run the installed
`frameproof conform --fast --python 3.11 --scenario plain_calls` from a
directory outside the checkout (it must find its scenarios and ground-truth
module under datadir/frameproof, next to its own binary), and check with
`strings` that no installed file names the source or build tree.
A library built with sanitizers (b_sanitize) needs their runtime in the
program too: the example is then built with the same -fsanitize.
usage: test_install.py BUILD_DIR SOURCE_DIR PREFIX BINDIR WORK_DIR PROJECT_VERSION B_SANITIZE"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "facts"))
from tap_results import check, host_python, report, skip  # noqa: E402
import fpfacts  # noqa: E402  (the shared facts)

BUILD, SOURCE, PREFIX, BINDIR, WORK, PROJECT_VERSION, SANITIZE = sys.argv[1:8]
INTERP = "3.11"
SCENARIO = "plain_calls"
TIMEOUT = 600
ELF_MAGIC = b"\x7fELF"


def elf_files(top):
    for dirpath, _, names in os.walk(top):
        for name in names:
            path = os.path.join(dirpath, name)
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, "rb") as f:
                    if f.read(4) == ELF_MAGIC or name.endswith(".a"):
                        yield path


def tree_paths(path, trees):
    """The strings of a binary that contain one of the tree paths."""
    out = subprocess.run(["strings", "-a", path], capture_output=True, timeout=TIMEOUT).stdout
    return sorted({line for line in out.splitlines() if any(t in line for t in trees)})


def find_file(top, name):
    for dirpath, _, names in os.walk(top):
        if name in names:
            return os.path.join(dirpath, name)
    return None


def build_example(dest, root, outside):
    """Builds and runs examples/dump_pid.c against the installed library."""
    pc = find_file(dest, "frameproof.pc")
    check("pkg-config file installed", pc is not None)
    check("public headers installed", all(os.path.exists(os.path.join(root, "include", "frameproof", h))
                                          for h in ("frameproof.h", "reader.h", "image.h", "pause.h", "export.h",
                                                    "version.h")))
    if pc is None:
        return
    major = PROJECT_VERSION.split(".")[0]
    lib = find_file(dest, "libframeproof.so." + major)
    check("libframeproof.so.%s installed" % major, lib is not None)
    if lib is not None:
        dyn = subprocess.run(["readelf", "-d", lib], capture_output=True, text=True, timeout=TIMEOUT).stdout
        check("soname is libframeproof.so.%s" % major, "[libframeproof.so.%s]" % major in dyn, dyn[-800:])
    src = os.path.join(outside, "dump_pid.c")
    shutil.copy(os.path.join(SOURCE, "examples", "dump_pid.c"), src)
    exe = os.path.join(outside, "dump_pid")
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.dirname(pc), PKG_CONFIG_SYSROOT_DIR=dest)
    env.pop("PKG_CONFIG_LIBDIR", None)
    sanitize = "" if SANITIZE == "none" else " -fsanitize=" + SANITIZE
    line = "cc%s dump_pid.c $(pkg-config --cflags --libs frameproof) -o dump_pid" % sanitize
    cc = subprocess.run(["sh", "-c", line], capture_output=True, text=True, cwd=outside, env=env, timeout=TIMEOUT)
    check("cc dump_pid.c $(pkg-config --cflags --libs frameproof)", cc.returncode == 0 and os.access(exe, os.X_OK),
          cc.stdout[-1500:] + cc.stderr[-1500:])
    if cc.returncode != 0:
        return
    libdir = os.path.dirname(lib) if lib else ""
    env = dict(os.environ, LD_LIBRARY_PATH=libdir)
    ldd = subprocess.run(["ldd", exe], capture_output=True, text=True, env=env, timeout=TIMEOUT).stdout
    check("the example loads the installed library", os.path.realpath(libdir) in ldd or libdir in ldd, ldd)
    target = subprocess.Popen([host_python(), "-c",
                               "import time\ndef parked():\n    print('ready', flush=True); time.sleep(60)\n"
                               "parked()\n"], stdout=subprocess.PIPE, text=True)
    try:
        target.stdout.readline()
        run = subprocess.run([exe, str(target.pid)], capture_output=True, text=True, cwd=outside, env=env,
                             timeout=TIMEOUT)
    finally:
        target.kill()
        target.wait()
    check("the example built against the installed library prints the target's stack",
          run.returncode == 0 and "    parked (" in run.stdout, "exit %d\n%s\n%s" % (run.returncode, run.stdout[-800:],
                                                                            run.stderr[-800:]))


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    dest = os.path.join(WORK, "dest")
    inst = subprocess.run(["meson", "install", "-C", BUILD, "--no-rebuild", "--destdir", dest],
                          capture_output=True, text=True, timeout=TIMEOUT)
    check("meson install --destdir", inst.returncode == 0, inst.stdout[-1500:] + inst.stderr[-1500:])
    root = dest + PREFIX
    fp = os.path.join(root, BINDIR, "frameproof")
    check("frameproof installed", os.access(fp, os.X_OK), fp)
    check("scenario index installed",
          os.path.exists(os.path.join(root, "share", "frameproof", "scenarios", "index.json")))
    # fpgt.py and the private _fpgt_*.py modules it imports from its directory.
    modules = ["fpgt.py"] + sorted(name for name in os.listdir(os.path.join(SOURCE, "targets", "groundtruth"))
                                   if name.startswith("_fpgt_") and name.endswith(".py"))
    missing = [name for name in modules
               if not os.path.exists(os.path.join(root, "share", "frameproof", "groundtruth", name))]
    check("ground-truth module installed", not missing, "missing: %s" % ", ".join(missing))

    # No absolute path of the checkout or the build directory in anything
    # installed; the check must catch a binary that holds one.
    trees = {os.path.realpath(SOURCE).encode(), os.path.realpath(BUILD).encode()}
    planted = os.path.join(WORK, "planted.bin")
    with open(planted, "wb") as f:
        f.write(ELF_MAGIC + b"\0" * 12 + os.path.realpath(SOURCE).encode() + b"/targets\0")
    check("the strings check catches a planted source path", tree_paths(planted, trees))
    files = list(elf_files(dest))
    check("installed binaries found", len(files) >= 2, repr(files))
    for path in files:
        hits = tree_paths(path, trees)
        check("no source or build path in %s" % os.path.relpath(path, dest), not hits,
              b"\n".join(hits[:5]).decode(errors="replace"))

    outside = tempfile.mkdtemp(prefix="fp-install-run-")
    try:
        build_example(dest, root, outside)
        helptext = subprocess.run([fp, "conform", "--help"], capture_output=True, text=True, cwd=outside,
                                  timeout=TIMEOUT).stdout
        used = [line for line in helptext.splitlines() if ", used now)" in line]
        check("--help names the installed data as the default targets",
              len(used) == 1 and "(the installed data, used now)" in used[0], "\n".join(used) or helptext[-800:])
        manifest, provisioned = fpfacts.provisioned(fpfacts.load())
        name = "installed conform --fast --python %s --scenario %s from %s" % (INTERP, SCENARIO, outside)
        if INTERP not in provisioned:
            skip(name, "%s not provisioned (no entry in %s)" % (INTERP, manifest))
            return
        env = {k: v for k, v in os.environ.items() if k != "FRAMEPROOF_TARGETS"}
        run = subprocess.run([fp, "conform", "--fast", "--python", INTERP, "--scenario", SCENARIO,
                              "--report-dir", os.path.join(outside, "report")],
                             capture_output=True, text=True, cwd=outside, env=env, timeout=TIMEOUT)
        check(name, run.returncode == 0, "exit %d\n%s\n%s" % (run.returncode, run.stdout[-1500:],
                                                               run.stderr[-1500:]))
        check("the run wrote its report outside the checkout",
              os.path.exists(os.path.join(outside, "report", "report.json")))
    finally:
        shutil.rmtree(outside, ignore_errors=True)


main()
report()
