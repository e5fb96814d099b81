# Live, CPython 3.15+: a second profiler writes the frame-cache anchor
# while the unwinder under test samples.  Before "ready" this process
# spawns a helper (this interpreter) that keeps profiling it with
# _remote_debugging.RemoteUnwinder(cache_frames=True) until it exits, so
# last_profiled_frame is written by that helper all along — and, when the
# unwinder under test keeps an anchor too (CPython's cache_frames=True),
# by two profilers at once.  The driver alternates p1 -> p2 -> leaf_p and
# q1 -> q2 -> leaf_q in the same frame slots; every RARE_EVERY rounds a leaf
# calls deep1 -> deep2 two slots above its own.  An anchor a profiler writes
# for a deep frame that has already returned names a slot that no frame
# leaves for a long while, so the sequence number does not move when the
# frames below it return; when the other profiler then writes a slot that
# the other chain has since taken, a reader comparing the anchor's address
# and sequence sees no change.  Lines carry "@tag" comments that
# contended_anchor.decl.json refers to.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import select
import subprocess
import fpgt

WORK = 40                         # loop iterations in each leaf
DEEP_WORK = 8                     # loop iterations in deep2
RARE_EVERY = 32                   # rounds between two calls of the deep pair
WARM_SAMPLES = 200                # helper samples before "ready"
# The helper samples until this process is gone (it polls the pid every 256
# calls, whether they succeed or not), with a short sleep after each call.
HELPER = """
import os, sys, time, _remote_debugging
pid, warm = int(sys.argv[1]), int(sys.argv[2])
u = _remote_debugging.RemoteUnwinder(pid, all_threads=True, cache_frames=True)
done = calls = 0
while True:
    calls += 1
    try:
        u.get_stack_trace()
        done += 1
        if done == warm:
            print("warm", flush=True)
    except Exception:
        pass
    if calls % 256 == 0:
        try:
            os.kill(pid, 0)
        except OSError:
            break
    time.sleep(0.00002)
"""


def deep2(n):                     # @deep2
    total = 0                     # @deep2
    for i in range(n):            # @deep2
        total += i                # @deep2
    return total                  # @deep2


def deep1(n):                     # @deep1
    return deep2(n) + 1           # @deep1 @deep1-call


def leaf_p(n, rare):              # @leaf_p
    total = 0                     # @leaf_p
    for i in range(n):            # @leaf_p
        total += i * 3            # @leaf_p
    if rare:                      # @leaf_p
        total += deep1(DEEP_WORK)  # @leaf_p @leaf_p-deep
    return total                  # @leaf_p


def p2(n, rare):                  # @p2
    return leaf_p(n, rare) + 1    # @p2 @p2-call


def p1(n, rare):                  # @p1
    return p2(n, rare) + 1        # @p1 @p1-call


def leaf_q(n, rare):              # @leaf_q
    total = 1                     # @leaf_q
    for i in range(n):            # @leaf_q
        total += i * 5            # @leaf_q
    if rare:                      # @leaf_q
        total += deep1(DEEP_WORK)  # @leaf_q @leaf_q-deep
    return total                  # @leaf_q


def q2(n, rare):                  # @q2
    return leaf_q(n, rare) + 2    # @q2 @q2-call


def q1(n, rare):                  # @q1
    return q2(n, rare) + 2        # @q1 @q1-call


def driver(ready, stop):          # @driver
    helper = subprocess.Popen([sys.executable, "-c", HELPER, str(os.getpid()), str(WARM_SAMPLES)],
                              stdout=subprocess.PIPE)
    warming = True                # @driver
    rounds = 0                    # @driver
    while not stop:               # @driver
        rare = rounds % RARE_EVERY == 0  # @driver
        p1(WORK, rare)            # @driver @driver-p
        q1(WORK, rare)            # @driver @driver-q
        rounds += 1               # @driver
        if warming and rounds % 64 == 0:  # @driver
            if helper.poll() is not None:
                fpgt.fail("the RemoteUnwinder helper exited before it was warm (status %d)"
                          % helper.returncode)
            if select.select([helper.stdout], [], [], 0)[0]:
                if helper.stdout.readline().decode().strip() != "warm":
                    fpgt.fail("the RemoteUnwinder helper said something other than 'warm'")
                warming = False
                ready.append(rounds)  # @driver
    if helper.poll() is not None:
        fpgt.fail("the RemoteUnwinder helper exited while the target was sampled (status %d)"
                  % helper.returncode)
    helper.kill()
    helper.wait()
    return rounds                 # @driver


ready, stop = fpgt.live("contended_anchor")
driver(ready, stop)               # @module-driver
fpgt.done()
