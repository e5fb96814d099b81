# Live, CPython 3.15+: before "ready", a helper process (this interpreter,
# spawned here) profiles this process briefly with
# _remote_debugging.RemoteUnwinder(cache_frames=True), which writes
# last_profiled_frame anchors into the thread states, and exits.  The stale
# anchors stay while the driver keeps alternating the chains
# p1 -> p2 -> leaf_p and q1 -> q2 -> leaf_q.  Lines carry "@tag" comments
# that stale_anchor.decl.json refers to.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import subprocess
import fpgt

WORK = 40                         # loop iterations in each leaf
PROFILE_S = 0.5                   # how long the helper profiles
HELPER = """
import sys, time, _remote_debugging
u = _remote_debugging.RemoteUnwinder(int(sys.argv[1]), all_threads=True, cache_frames=True)
end = time.monotonic() + float(sys.argv[2])
n = 0
while time.monotonic() < end:
    try:
        u.get_stack_trace()
        n += 1
    except Exception:
        pass
print(n, flush=True)
sys.exit(0 if n else 1)
"""


def leaf_p(n):                    # @leaf_p
    total = 0                     # @leaf_p
    for i in range(n):            # @leaf_p
        total += i * 3            # @leaf_p
    return total                  # @leaf_p


def p2(n):                        # @p2
    return leaf_p(n) + 1          # @p2 @p2-call


def p1(n):                        # @p1
    return p2(n) + 1              # @p1 @p1-call


def leaf_q(n):                    # @leaf_q
    total = 1                     # @leaf_q
    for i in range(n):            # @leaf_q
        total += i * 5            # @leaf_q
    return total                  # @leaf_q


def q2(n):                        # @q2
    return leaf_q(n) + 2          # @q2 @q2-call


def q1(n):                        # @q1
    return q2(n) + 2              # @q1 @q1-call


def driver(ready, stop):          # @driver
    helper = subprocess.Popen([sys.executable, "-c", HELPER, str(os.getpid()), str(PROFILE_S)],
                              stdout=subprocess.PIPE)
    rounds = 0                    # @driver
    while not stop:               # @driver
        p1(WORK)                  # @driver @driver-p
        q1(WORK)                  # @driver @driver-q
        rounds += 1               # @driver
        if helper is not None and rounds % 64 == 0 and helper.poll() is not None:  # @driver
            out = helper.stdout.read().decode().strip()
            if helper.returncode != 0:
                fpgt.fail("the RemoteUnwinder helper failed (%r)" % out)
            helper = None
            ready.append(rounds)  # @driver
    return rounds                 # @driver


ready, stop = fpgt.live("stale_anchor")
driver(ready, stop)               # @module-driver
fpgt.done()
