# park_plain.py — a program that never imports asyncio, parked, for
# `frameproof dump --async` (tests/async/test_dump_async.py): it prints
# "ready {"builtin": B}", B whether asyncio's C module is built into the
# interpreter (then its layout is found all the same; else the graph is
# empty and says asyncio is not loaded), and sleeps until killed.
import json
import sys
import threading

print("ready " + json.dumps({"builtin": "_asyncio" in sys.builtin_module_names}), flush=True)
threading.Event().wait()
