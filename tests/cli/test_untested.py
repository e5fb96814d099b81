"""test_untested — a CPython newer than the newest supported version is
refused unless --allow-untested-version, and then unwound and marked.

Usage: test_untested.py FRAMEPROOF IMAGE_3_15

A copy of a captured 3.15 image is made to say 3.16 everywhere the version
is read: the image header (hexversion and version string) and the version
word of the target's own _Py_DebugOffsets at the runtime address."""
import json
import os
import struct
import subprocess
import sys
import tempfile

from tap_results import check, report

UNTESTED_MINOR = 16
HDR_HEXVERSION, HDR_THREADS, HDR_RUNTIME, HDR_REGIONS, HDR_VERSION = 20, 28, 32, 40, 48
VERSION_FIELD = 32
THREAD_ENTRY, REGION_HEADER = 16, 16
DEBUG_OFFSETS_VERSION = 8  # after the 8-byte cookie
REFUSAL = f"CPython 3.{UNTESTED_MINOR}: not supported (3.11–3.15 are; newer versions only with allow_untested)"


def retag(src, dst):
    """Writes src as a 3.16 image; returns the new hexversion."""
    b = bytearray(open(src, "rb").read())
    hexv = struct.unpack_from("<I", b, HDR_HEXVERSION)[0]
    new = (hexv & ~0x00ff0000) | UNTESTED_MINOR << 16
    struct.pack_into("<I", b, HDR_HEXVERSION, new)
    ver = bytes(b[HDR_VERSION:HDR_VERSION + VERSION_FIELD]).split(b"\0")[0].decode()
    nver = ver.replace("3.15", f"3.{UNTESTED_MINOR}", 1).encode()
    b[HDR_VERSION:HDR_VERSION + VERSION_FIELD] = nver.ljust(VERSION_FIELD, b"\0")
    hsize = struct.unpack_from("<I", b, 12)[0]
    nthreads = struct.unpack_from("<I", b, HDR_THREADS)[0]
    runtime = struct.unpack_from("<Q", b, HDR_RUNTIME)[0]
    nregions = struct.unpack_from("<Q", b, HDR_REGIONS)[0]
    pos, patched = hsize + nthreads * THREAD_ENTRY, False
    target = runtime + DEBUG_OFFSETS_VERSION
    for _ in range(nregions):
        addr, ln = struct.unpack_from("<QQ", b, pos)
        pos += REGION_HEADER
        if addr <= target and target + 8 <= addr + ln:
            off = pos + target - addr
            assert struct.unpack_from("<Q", b, off)[0] == hexv, "the debug offsets disagree with the header"
            struct.pack_into("<Q", b, off, new)
            patched = True
        pos += ln
    assert patched, "no _Py_DebugOffsets at the runtime address"
    open(dst, "wb").write(b)
    return new


def run(*args):
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


def main():
    exe, image = sys.argv[1:3]
    with tempfile.TemporaryDirectory() as tmp:
        img = os.path.join(tmp, "untested.fpimg")
        new_hex = retag(image, img)
        for form in ([], ["--json"]):
            r = run(exe, "replay", *form, img)
            check(" ".join(["replay", *form]) + ": refused without the option",
                  r.returncode == 1 and r.stdout == "" and r.stderr == f"frameproof replay: {img}: {REFUSAL}\n",
                  f"status {r.returncode}, stderr {r.stderr!r}")
        base_json, base_text = run(exe, "replay", "--json", image), run(exe, "replay", image)
        check("the 3.15 image replays", base_json.returncode == 0 and base_text.returncode == 0, base_json.stderr)
        got = run(exe, "replay", "--allow-untested-version", "--json", img)
        check("--json: unwound with the option", got.returncode == 0 and got.stderr == "", got.stderr)
        if base_json.returncode == 0 and got.returncode == 0:
            want, have = json.loads(base_json.stdout), json.loads(got.stdout)
            check("--json: marked untested, with its own version",
                  have["python"].get("untested") is True and have["python"]["hexversion"] == new_hex and
                  have["python"]["version"].startswith(f"3.{UNTESTED_MINOR}."), json.dumps(have["python"]))
            check("--json: the 3.15 image's threads and frames exactly", have["interpreters"] == want["interpreters"],
                  got.stdout[:1000])
            check("--json: a supported version is not marked", "untested" not in want["python"],
                  json.dumps(want["python"]))
        got = run(exe, "replay", "--allow-untested-version", img)
        check("text: unwound with the option", got.returncode == 0, got.stderr)
        if base_text.returncode == 0 and got.returncode == 0:
            head, _, rest = got.stdout.partition("\n")
            bhead, _, brest = base_text.stdout.partition("\n")
            check("text: the header marks the version untested",
                  head == bhead.replace("CPython 3.15", f"CPython 3.{UNTESTED_MINOR}").replace(
                      " (reader:", ", untested version (reader:"), f"{head!r} vs {bhead!r}")
            check("text: every thread as in the 3.15 image", rest == brest, got.stdout[:1000])
    return report()


if __name__ == "__main__":
    sys.exit(main())
