"""fpimg.py — the .fpimg memory-image layout for Python scripts, taken from
facts.env (the same facts the C reader is built from): write a header and
region table, read the regions back.  docs/image-format.md describes it.
"""
import struct

import fpfacts

_F = fpfacts.load()
_N = {k: int(v) for k, v in _F.items() if k.startswith("FPIMG_") and v.isdigit()}
MAGIC = _F["FPIMG_MAGIC"].encode("ascii").ljust(_N["FPIMG_MAGIC_LEN"], b"\0")
HEADER_SIZE = _N["FPIMG_HEADER_SIZE"]
# (offset key, struct format) of each integer field of the fixed header.
_FIELDS = {
    "format": ("FPIMG_OFF_FORMAT", "<I"),
    "header_size": ("FPIMG_OFF_HEADER_SIZE", "<I"),
    "flags": ("FPIMG_OFF_FLAGS", "<I"),
    "hexversion": ("FPIMG_OFF_HEXVERSION", "<I"),
    "pid": ("FPIMG_OFF_PID", "<i"),
    "thread_count": ("FPIMG_OFF_THREAD_COUNT", "<I"),
    "runtime": ("FPIMG_OFF_RUNTIME", "<Q"),
    "region_count": ("FPIMG_OFF_REGION_COUNT", "<Q"),
}
_REGION = "<QQ"   # start address, length; FPIMG_REGION_HEADER bytes


def build(hexversion, runtime, regions, version, *, flags=0, pid=1):
    """An image without threads holding the (address, bytes) regions."""
    head = bytearray(HEADER_SIZE)
    head[:len(MAGIC)] = MAGIC
    values = {"format": _N["FPIMG_FORMAT_VERSION"], "header_size": HEADER_SIZE, "flags": flags,
              "hexversion": hexversion, "pid": pid, "thread_count": 0, "runtime": runtime,
              "region_count": len(regions)}
    for name, (key, fmt) in _FIELDS.items():
        struct.pack_into(fmt, head, _N[key], values[name])
    off = _N["FPIMG_OFF_PYVERSION"]
    head[off:off + _N["FPIMG_PYVERSION_LEN"]] = version.ljust(_N["FPIMG_PYVERSION_LEN"], b"\0")
    body = b"".join(struct.pack(_REGION, a, len(b)) + b for a, b in sorted(regions))
    return bytes(head) + body


def field(data, name):
    key, fmt = _FIELDS[name]
    return struct.unpack_from(fmt, data, _N[key])[0]


def regions(data):
    """(runtime address, [(address, bytes), ...]) of an image; ValueError if
    it does not start with the magic."""
    if data[:len(MAGIC)] != MAGIC:
        raise ValueError("not a memory image")
    pos = field(data, "header_size") + _N["FPIMG_THREAD_ENTRY"] * field(data, "thread_count")
    out = []
    for _ in range(field(data, "region_count")):
        addr, ln = struct.unpack_from(_REGION, data, pos)
        pos += _N["FPIMG_REGION_HEADER"]
        out.append((addr, data[pos:pos + ln]))
        pos += ln
    return field(data, "runtime"), out
