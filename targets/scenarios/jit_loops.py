# Hot loops that the JIT compiles, parked from inside them: a loop calling a
# step -> checkpoint chain on every iteration (the checkpoint parks once the
# loop is hot), an interpreted outer loop whose callee's short loop gets hot
# across calls (interpreted and JIT frames on one stack), and a worker
# thread's hot loop.  On a "+jit" interpreter (PYTHON_JIT=1, docs/jit.md)
# each checkpoint first proves the code runs as JIT code (fpgt.require_jit:
# the loops have executors, every caller under the checkpoint stands at its
# call) or fails loudly; elsewhere the same code runs interpreted.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt

fpgt.start("jit_loops")

# Iterations before a checkpoint parks: well past the backward-jump count
# after which CPython 3.14 and 3.15 optimise a loop (about 4 100, docs/jit.md),
# so its trace, with the calls it makes, is JIT code long before the park.
HOT = 20000


def checkpoint(i, label, loops):
    # Called on every iteration from the traced loop; parks once.
    if i == HOT:
        fpgt.require_jit(*loops, call_frames=2)
        fpgt.park(label)
    return i & 7


def step(i, label, loops):
    return checkpoint(i, label, loops) + 1


def hot_loop(label):
    total = 0
    for i in range(HOT + 1):
        total += step(i, label, (hot_loop,))
    return total


def inner(j, label):
    acc = 0
    k = 0
    while k < 50:
        acc += checkpoint(j * 50 + k, label, (inner,))
        k += 1
    return acc


def nested_loop(label):
    total = 0
    for j in range(HOT // 50 + 1):
        total += inner(j, label)
    return total


def worker_loop(label):
    # A code object of its own: the executors of hot_loop may be gone once
    # it returned, and a loop made hot again waits out a backoff first.
    total = 0
    for i in range(HOT + 1):
        total += step(i, label, (worker_loop,))
    return total


def run():
    # No global is assigned while a loop runs: a trace that read this
    # module's globals is invalidated when they change (CPython watches the
    # dict), and a worker racing an assignment would lose its executor.
    hot_loop("jit-main")
    nested_loop("jit-nested")
    fpgt.thread(worker_loop, "jit-worker", name="jit-worker").join()


run()
fpgt.done()
