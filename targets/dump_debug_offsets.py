"""Writes the first 8 KiB of this interpreter's _PyRuntime (where CPython
3.13+ keeps _Py_DebugOffsets) to the file named by argv[1].  Run under each
interpreter of the matrix to refresh tests/data/debug_offsets/."""
import ctypes
import sys

SIZE = 8192

addr = ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, "_PyRuntime"))
data = ctypes.string_at(addr, SIZE)
if data[:8] != b"xdebugpy":
    sys.exit("no _Py_DebugOffsets cookie at _PyRuntime (CPython < 3.13?)")
with open(sys.argv[1], "wb") as f:
    f.write(data)
