"""check_call_graph — the library's sources call each other in one
direction: no cycle among the files of unwinder/src, by calls or by
includes.

Usage: check_call_graph.py SRC_DIR [--print]

Builds the file-level call graph from the sources: the functions each
SRC_DIR/*.c defines (a static one is seen only from its own file), and in
each function body every name followed by "(" that another file defines.
A cycle between files fails, as TAP, naming the edges that form it;
--print lists every edge instead.  Includes: every "x.h" a header of
SRC_DIR includes, a cycle of which fails too.  Functions defined in headers (static
inline) belong to no file and make no edge; a call through a pointer
makes none either (the hooks a lower stage is handed run code it does not
name)."""
import pathlib
import re
import sys

# Edges that may close a cycle, as ("caller.c", "callee.c"): "why it is
# there"; none is needed.  An edge listed that the sources no longer have
# fails the check, so the list only shrinks.
ALLOWED = {
}

KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "_Alignof", "alignof", "defined",
            "_Static_assert", "static_assert", "_Generic"}

COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'')
PREPROC = re.compile(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.M)
CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")


def strip(text):
    """The text without comments, strings or preprocessor lines, its
    newlines kept."""
    blank = lambda m: re.sub(r"[^\n]", " ", m.group(0))
    text = COMMENT.sub(blank, text)
    text = STRING.sub(blank, text)
    return PREPROC.sub(blank, text)


def definitions(text):
    """(name, is_static, body) for every function defined at file scope
    of stripped text."""
    out = []
    depth, i, n = 0, 0, len(text)
    start = 0  # where the current top-level declaration began
    while i < n:
        c = text[i]
        if c == "{":
            if depth == 0:
                head = text[start:i]
                body_start = i
                d, j = 0, i
                while j < n:
                    if text[j] == "{":
                        d += 1
                    elif text[j] == "}":
                        d -= 1
                        if d == 0:
                            break
                    j += 1
                m = re.search(r"\b([A-Za-z_]\w*)\s*\(([^()]|\([^()]*\))*\)\s*$", head)
                if m and m.group(1) not in KEYWORDS and "=" not in head[:m.start()]:
                    is_static = re.search(r"\bstatic\b", head) is not None
                    out.append((m.group(1), is_static, text[body_start:j + 1]))
                i = j + 1
                start = i
                continue
        elif c == ";" and depth == 0:
            start = i + 1
        elif c == "}" and depth == 0:
            start = i + 1
        i += 1
    return out


def graph(src_dir):
    """{file: {callee file: [(caller, callee), ...]}} over SRC_DIR/*.c."""
    files = {}
    for path in sorted(pathlib.Path(src_dir).glob("*.c")):
        files[path.name] = definitions(strip(path.read_text()))
    public = {}
    for name, defs in files.items():
        for fn, is_static, _ in defs:
            if not is_static:
                public.setdefault(fn, name)
    edges = {name: {} for name in files}
    for name, defs in files.items():
        local = {fn for fn, _, _ in defs}
        for fn, _, body in defs:
            for m in CALL.finditer(body):
                callee = m.group(1)
                if callee in local or callee not in public:
                    continue
                target = public[callee]
                if target != name:
                    edges[name].setdefault(target, []).append((fn, callee))
    return edges


def includes(src_dir):
    """{header: {included header: []}} over SRC_DIR/*.h (quoted includes
    of headers in SRC_DIR)."""
    heads = {p.name: p for p in pathlib.Path(src_dir).glob("*.h")}
    out = {}
    for name, path in heads.items():
        found = re.findall(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', path.read_text(), re.M)
        out[name] = {h: [] for h in found if h in heads and h != name}
    return out


def cycles(edges):
    """The strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def main():
    src_dir = sys.argv[1]
    edges = graph(src_dir)
    if "--print" in sys.argv[2:]:
        for a in sorted(edges):
            for b in sorted(edges[a]):
                calls = sorted({f"{f}->{c}" for f, c in edges[a][b]})
                print(f"{a} -> {b}: {', '.join(calls)}")
        return 0
    print("1..3")
    stale = sorted(e for e in ALLOWED if e[1] not in edges.get(e[0], {}))
    if stale:
        print("not ok 1 - every allowed edge is still in the sources")
        for a, b in stale:
            print(f"# {a} -> {b}: no longer called; remove it from ALLOWED")
    else:
        print("ok 1 - every allowed edge is still in the sources")
    pruned = {a: {b: c for b, c in out.items() if (a, b) not in ALLOWED} for a, out in edges.items()}
    found = cycles(pruned)
    if found:
        print("not ok 2 - no cycle among the files of unwinder/src")
        for comp in found:
            print(f"# cycle among {', '.join(comp)}:")
            for a in comp:
                for b in sorted(pruned[a]):
                    if b in comp:
                        calls = sorted({f"{f}->{c}" for f, c in pruned[a][b]})
                        print(f"#   {a} -> {b}: {', '.join(calls)}")
    else:
        print("ok 2 - no cycle among the files of unwinder/src")
    loops = cycles(includes(src_dir))
    if loops:
        print("not ok 3 - no cycle among the headers of unwinder/src")
        for comp in loops:
            print(f"# headers including each other: {', '.join(comp)}")
    else:
        print("ok 3 - no cycle among the headers of unwinder/src")
    return 1 if stale or found or loops else 0


if __name__ == "__main__":
    sys.exit(main())
