"""gen_linetables.py — location-table test vectors from one interpreter.

Runs UNDER a target interpreter (CPython 3.11+, any build; standard library
only).  It compiles every .py file of that interpreter's own standard library
(sysconfig.get_paths()['stdlib'] -- see stdlib_dir() for the one exception
-- recursively, test directories included;
site-packages and dist-packages are left out because what is installed there
differs between machines), walks every code object reachable through
co_consts, and writes one vector file pairing each code object's raw
co_linetable with what code.co_positions() reports for every code unit.
Files that cannot be read or compiled are skipped.  For a given interpreter
and standard library the output is byte-for-byte deterministic.

Usage:  python3.X gen_linetables.py [OUT]      (OUT omitted or "-": stdout)
        python3.X - [OUT] < gen_linetables.py  (when the path is not visible,
                                                e.g. inside a chroot)
A summary line "files=N skipped=N code_objects=N unique=N units=N" goes to
stderr; "unique" and "units" count the code objects stored and their units.

FILE FORMAT, version 1 (the same text is in corpora/linetables/FORMAT.md)

The file is a single zlib stream (RFC 1950, as zlib.compress writes it) of
the payload below.  An interpreter without the zlib module writes the
payload uncompressed; a reader tells them apart by the magic.

  uvar  unsigned LEB128: 7 bits per byte, least significant group first,
        0x80 set on every byte except the last.
  svar  zigzag, then uvar: n >= 0 -> 2n, n < 0 -> -2n - 1.
  str   uvar byte length, then UTF-8 bytes (backslash escapes stand for
        anything not encodable).

  Payload:
    magic     4 bytes   "FPLT"
    version   u32 LE    1
    base      str       "" in files this script writes.  Otherwise the id
                        of another interpreter directory whose vector file
                        (which must itself have base "") supplies part of
                        this file's records; followed by:
      nranges uvar      then nranges x (skip uvar, take uvar): walking the
                        base file's records in order, skip that many, then
                        take that many as records of this file too
    nfiles    uvar      then nfiles x str: source paths relative to the
                        stdlib directory, "/"-separated
    ncode     uvar      number of code-object records
    then eight sections, each a uvar byte length followed by that many
    bytes, in this order:
    1 meta     per record: file (uvar, index into the names),
               firstlineno (svar), nunits (uvar, len(co_code) // 2),
               qualname length (uvar), linetable length (uvar),
               nruns (uvar)
    2 qualname the records' co_qualname UTF-8 bytes, concatenated
    3 table    the records' co_linetable bytes, concatenated
    4 count    per run (all runs of record 0, then of record 1, ...):
               units in the run (uvar, >= 1)
    5 dline    per run: line - previous run's line (svar); the "previous
               line" of a record's first run is its firstlineno
    6 dend     per run: end_line - line (svar)
    7 col      per run: column (svar)
    8 dendcol  per run: end_column - column (svar)
    Nothing follows the eighth section; every section is consumed exactly.

A run is a maximal stretch of consecutive code units whose co_positions()
4-tuples are equal; None is written as -1.  A record's run counts add up to
nunits exactly: co_positions() stops where the table ends, and units past
that point are recorded as all None.  Records come in sorted source-path
order and, within a file, depth-first (a code object, then the code objects
in its co_consts).  A record whose (firstlineno, nunits, linetable, runs)
equals an earlier one's is left out; the first keeps its file and qualname.
Splitting fields into sections is only for compression.  The records of a
file with a base are the base records it takes plus its own; the driver
(targets/gen_linetables) writes such files, never this script.
"""

import gc
import os
import sys
import sysconfig
import warnings

MAGIC = b"FPLT"
VERSION = 1
NONE_VALUE = -1
ZLIB_LEVEL = 9
SKIP_DIRS = frozenset({"site-packages", "dist-packages", "__pycache__"})
SECTIONS = ("meta", "qualname", "table", "count", "dline", "dend", "col",
            "dendcol")


def uvar(n, out):
    if n < 0:
        raise ValueError("negative value for an unsigned varint")
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return


def svar(n, out):
    uvar(2 * n if n >= 0 else -2 * n - 1, out)


def put_str(s, out):
    b = s.encode("utf-8", "backslashreplace")
    uvar(len(b), out)
    out.extend(b)


def code_objects(top):
    """Depth-first, pre-order, without recursion.  The compiler puts nested
    code objects directly in co_consts, never inside tuples."""
    code_type = type(top)
    stack = [top]
    while stack:
        co = stack.pop()
        yield co
        kids = [k for k in co.co_consts if isinstance(k, code_type)]
        stack.extend(reversed(kids))


def positions_runs(co, nunits):
    """Expected positions per unit, run-length encoded, None -> -1."""
    pos = []
    for p in co.co_positions():
        if len(pos) == nunits:
            break
        pos.append(tuple(NONE_VALUE if v is None else v for v in p))
    pos.extend([(NONE_VALUE,) * 4] * (nunits - len(pos)))
    runs = []
    for p in pos:
        if runs and runs[-1][1] == p:
            runs[-1][0] += 1
        else:
            runs.append([1, p])
    return [(count, p) for count, p in runs]


def stdlib_sources(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in filenames:
            if name.endswith(".py"):
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, root).replace(os.sep, "/")
                yield rel, full


def generate(root):
    """Compiles the stdlib under root; returns (records, stats).  A record
    is (file, firstlineno, nunits, qualname bytes, table bytes, runs)."""
    records = []
    seen = set()
    stats = {"files": 0, "skipped": 0, "code_objects": 0, "unique": 0,
             "units": 0}
    for rel, full in sorted(stdlib_sources(root)):
        try:
            with open(full, "rb") as f:
                src = f.read()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                top = compile(src, full, "exec", dont_inherit=True)
        except (Exception, RecursionError, MemoryError):
            stats["skipped"] += 1
            continue
        stats["files"] += 1
        for co in code_objects(top):
            stats["code_objects"] += 1
            nunits = len(co.co_code) // 2
            rec = (rel, co.co_firstlineno, nunits,
                   co.co_qualname.encode("utf-8", "backslashreplace"),
                   bytes(co.co_linetable), tuple(positions_runs(co, nunits)))
            key = record_key(rec)
            if key in seen:
                continue
            seen.add(key)
            records.append(rec)
            stats["unique"] += 1
            stats["units"] += nunits
    return records, stats


def record_key(rec):
    """What makes two records the same test: all but file and qualname."""
    return rec[1], rec[2], rec[4], rec[5]


def encode_payload(records, base="", base_ranges=()):
    names = []
    name_index = {}
    sec = {name: bytearray() for name in SECTIONS}
    for rel, first, nunits, qual, table, runs in records:
        if rel not in name_index:
            name_index[rel] = len(names)
            names.append(rel)
        meta = sec["meta"]
        uvar(name_index[rel], meta)
        svar(first, meta)
        uvar(nunits, meta)
        uvar(len(qual), meta)
        uvar(len(table), meta)
        uvar(len(runs), meta)
        sec["qualname"].extend(qual)
        sec["table"].extend(table)
        prev_line = first
        for count, (line, end_line, col, end_col) in runs:
            uvar(count, sec["count"])
            svar(line - prev_line, sec["dline"])
            svar(end_line - line, sec["dend"])
            svar(col, sec["col"])
            svar(end_col - col, sec["dendcol"])
            prev_line = line
    out = bytearray(MAGIC)
    out.extend(VERSION.to_bytes(4, "little"))
    put_str(base, out)
    if base:
        uvar(len(base_ranges), out)
        for skip, take in base_ranges:
            uvar(skip, out)
            uvar(take, out)
    uvar(len(names), out)
    for name in names:
        put_str(name, out)
    uvar(len(records), out)
    for name in SECTIONS:
        uvar(len(sec[name]), out)
        out.extend(sec[name])
    return bytes(out)


class _Reader:
    def __init__(self, data, pos=0):
        self.data, self.pos = data, pos

    def uvar(self):
        n = shift = 0
        while True:
            b = self.data[self.pos]
            self.pos += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return n

    def svar(self):
        u = self.uvar()
        return -(u >> 1) - 1 if u & 1 else u >> 1

    def take(self, n):
        if self.pos + n > len(self.data):
            raise ValueError("truncated vector payload")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b


def parse_payload(data):
    """Inverse of encode_payload: returns (records, base, base_ranges)."""
    if data[:4] != MAGIC or int.from_bytes(data[4:8], "little") != VERSION:
        raise ValueError("not a version %d FPLT payload" % VERSION)
    r = _Reader(data, 8)
    base = r.take(r.uvar()).decode("utf-8")
    ranges = []
    if base:
        ranges = [(r.uvar(), r.uvar()) for _ in range(r.uvar())]
    names = [r.take(r.uvar()).decode("utf-8") for _ in range(r.uvar())]
    ncode = r.uvar()
    sec = {}
    for name in SECTIONS:
        sec[name] = _Reader(r.take(r.uvar()))
    if r.pos != len(data):
        raise ValueError("trailing bytes in vector payload")
    records = []
    for _ in range(ncode):
        m = sec["meta"]
        fidx, first, nunits = m.uvar(), m.svar(), m.uvar()
        qual = sec["qualname"].take(m.uvar())
        table = sec["table"].take(m.uvar())
        runs = []
        prev_line = first
        for _ in range(m.uvar()):
            count = sec["count"].uvar()
            line = prev_line + sec["dline"].svar()
            end_line = line + sec["dend"].svar()
            col = sec["col"].svar()
            end_col = col + sec["dendcol"].svar()
            runs.append((count, (line, end_line, col, end_col)))
            prev_line = line
        records.append((names[fidx], first, nunits, qual, table, tuple(runs)))
    for name, rd in sec.items():
        if rd.pos != len(rd.data):
            raise ValueError("section %s not fully used" % name)
    return records, base, ranges


def stdlib_dir():
    """sysconfig's stdlib path.  CPython 3.13's free-threaded builds report
    lib/python3.13 there although the library lives in lib/python3.13t; in
    that case (the path is not a directory) use the directory os came from."""
    path = sysconfig.get_paths()["stdlib"]
    if not os.path.isdir(path):
        path = os.path.dirname(os.path.abspath(os.__file__))
    return path


def main(argv):
    if sys.version_info < (3, 11):
        sys.exit("gen_linetables.py: needs CPython 3.11 or later")
    # Nothing here makes reference cycles, and with hundreds of thousands
    # of live tuples the collector (free-threaded 3.13's especially, which
    # scans every object) would dominate the run time.
    gc.disable()
    records, stats = generate(stdlib_dir())
    if not stats["files"]:
        sys.exit("gen_linetables.py: no source compiled under %s"
                 % stdlib_dir())
    payload = encode_payload(records)
    try:
        import zlib
    except ImportError:
        data = payload
    else:
        data = zlib.compress(payload, ZLIB_LEVEL)
    out = argv[1] if len(argv) > 1 else "-"
    if out == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        with open(out, "wb") as f:
            f.write(data)
    print(" ".join("%s=%d" % kv for kv in stats.items()), file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv)
