"""Target of test_code_churn: creates a fresh function per round (distinct
name and first line), parks a thread inside it, reports the code object's
address, then deletes it so the next round's code object can take over the
freed address.  Protocol on stdin/stdout: prints "ready ROUND NATIVE_ID
CODE_ADDR NAME LINE", waits for a line, and moves on; prints "done"."""
import gc
import sys
import threading

ROUNDS = int(sys.argv[1])
TEMPLATE = "{pad}def {name}(gate):\n    gate.acquire()\n"

for rnd in range(ROUNDS):
    name = f"churned_{rnd:04d}_{'x' * (rnd % 7)}"
    ns = {}
    exec(compile(TEMPLATE.format(pad="\n" * (rnd * 3 + 1), name=name), f"<churn {rnd}>", "exec"), ns)
    fn = ns[name]
    gate = threading.Lock()
    gate.acquire()
    started = threading.Event()
    t = threading.Thread(target=lambda: (started.set(), fn(gate)))
    t.start()
    started.wait()
    # Wait until the thread is blocked inside fn (its frame is the innermost).
    while True:
        frame = sys._current_frames().get(t.ident)
        if frame is not None and frame.f_code is fn.__code__ and frame.f_lasti > 0:
            break
    line = fn.__code__.co_firstlineno + 1
    print(f"ready {rnd} {t.native_id} {id(fn.__code__)} {name} {line}", flush=True)
    sys.stdin.readline()
    gate.release()
    t.join()
    del fn, ns, t, frame
    gc.collect()
print("done", flush=True)
