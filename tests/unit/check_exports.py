"""check_exports — the shared library exports exactly the public API.

Usage: check_exports.py NM LIBFRAMEPROOF.so LIBFRAMEPROOF.a INCLUDE_DIR SRC_DIR

The public API is every function declared in INCLUDE_DIR/frameproof/*.h (a
declaration starts at column 0 and names an fp_* function; a static inline
wrapper is not one).  TAP checks: every dynamic symbol the .so defines is
such a function; every such function is defined by the .so; every one is
named fp_<object>_<verb>[_<what>]; every other global function of the static
library carries the internal prefix fpi_ (never the public fp_); the
internal headers in SRC_DIR name nothing fp_*/FP_* that the public headers
do not (internal types and macros are fpi_*/FPI_*), the shared facts of the
generated fp_facts.h aside."""
import pathlib
import re
import subprocess
import sys

DECL = re.compile(r"^(?!typedef|#|static)[A-Za-z_][\w \t*]*?\b(fp_\w+)\s*\(", re.M)
INTERNAL_PREFIX = "fpi_"
# The naming rule: fp_<object>_<verb>[_<what>], the object being the type the
# call acts on or creates; read-only accessors are get_<property>, predicates
# is_<property>.
OBJECTS = ("image_builder", "async_graph", "options", "error", "session", "sample", "image", "recorder", "pause", "reader")
VERBS = {"new", "free", "open", "close", "init", "attach", "detach", "sample", "read", "readv", "resume",
         "add", "serialize", "write", "capture", "describe", "set", "get", "is"}


def misnamed(names):
    """The public names that break the naming rule."""
    wrong = []
    for name in sorted(names):
        obj = next((o for o in OBJECTS if name.startswith("fp_" + o + "_")), None)
        rest = name[len("fp_" + obj + "_"):] if obj else ""
        if not obj or rest.split("_")[0] not in VERBS:
            wrong.append(name)
    return wrong
# Defined by the toolchain in every shared object, not by the library.
TOOLCHAIN = {"_init", "_fini"}


def public_functions(include_dir):
    names = set()
    for header in sorted(pathlib.Path(include_dir, "frameproof").glob("*.h")):
        names.update(DECL.findall(header.read_text()))
    return names


NAME = re.compile(r"\b(?:fp|FP)_\w+")
# The shared facts (facts/facts.env) are FP_FACT_<KEY> in the generated
# fp_facts.h (facts/meson.build): an internal header may use them.
FACTS_HEADER = "fp_facts"
FACTS_PREFIX = "FP_FACT_"


def prefixed_names(paths):
    names = set()
    for path in paths:
        names.update(NAME.findall(pathlib.Path(path).read_text()))
    return names


def defined_globals(nm, args, path):
    """Names of the defined global text symbols nm lists for path."""
    out = subprocess.run([nm, *args, "--defined-only", path], check=True,
                         capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TWDBRiV":
            names.add(parts[2].split("@")[0])
    return names - TOOLCHAIN


def main():
    nm, shared, static, include_dir, src_dir = sys.argv[1:6]
    public = public_functions(include_dir)
    exported = defined_globals(nm, ["-D"], shared)
    static_globals = defined_globals(nm, ["-g"], static)
    results = [
        ("the public headers declare functions", bool(public), "no fp_* declaration found"),
        ("the shared library exports nothing outside the public headers", not exported - public,
         "exported but not public: " + " ".join(sorted(exported - public))),
        ("the shared library exports every public function", not public - exported,
         "public but not exported: " + " ".join(sorted(public - exported))),
        ("every public function is named fp_<object>_<verb>", not misnamed(public),
         "misnamed: " + " ".join(misnamed(public))),
    ]
    internal = static_globals - public
    wrong = sorted(n for n in internal if not n.startswith(INTERNAL_PREFIX))
    results.append((f"every internal global function is named {INTERNAL_PREFIX}*", not wrong,
                    "internal names without the prefix: " + " ".join(wrong)))
    # version.h is generated from version.h.in: its names are public too.
    public_dir = pathlib.Path(include_dir, "frameproof")
    public_names = prefixed_names(list(public_dir.glob("*.h")) + list(public_dir.glob("*.h.in")))
    stray = sorted(n for n in prefixed_names(pathlib.Path(src_dir).glob("*.h")) - public_names
                   if n != FACTS_HEADER and not n.startswith(FACTS_PREFIX))
    results.append(("internal headers use fpi_/FPI_ for their own names", not stray,
                    "public-prefixed internal names: " + " ".join(stray)))
    print(f"1..{len(results)}")
    for i, (name, ok, detail) in enumerate(results, 1):
        print(f"{'ok' if ok else 'not ok'} {i} - {name}")
        if not ok:
            print(f"# {detail}")
    return 0 if all(ok for _, ok, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
