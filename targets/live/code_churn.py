# Live: code objects made by compile()/exec(), called, freed and made again,
# so a new generation's code objects reuse the addresses of freed ones.
# Generation N (N = 0 .. GENERATIONS-1, then again) defines work_gNN and
# inner_gNN in the file "<churn>" at lines STRIDE*N + 1 ..: a name of one
# generation shown with a line of another, or work_gNN calling inner_gMM,
# is a stale read.  Lines carry "@tag" comments that code_churn.decl.json
# refers to.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt

WARMUP = 100                      # generations before "ready"
GENERATIONS = 40                  # distinct names and line ranges
STRIDE = 20                       # lines between two generations' code
TEMPLATE = """def work_g{n:02d}(k):
    t = 0
    for i in range(k):
        t += inner_g{n:02d}(i)
    return t

def inner_g{n:02d}(i):
    s = i
    for j in range(12):
        s += j * {n}
    return s
"""


def make(n):                      # @make
    source = "\n" * (STRIDE * n) + TEMPLATE.format(n=n)  # @make
    code = compile(source, "<churn>", "exec")  # @make
    namespace = {}                # @make
    exec(code, namespace)         # @make @make-exec
    return namespace["work_g%02d" % n]  # @make


def driver(ready, stop):          # @driver
    rounds = 0                    # @driver
    while not stop:               # @driver
        work = make(rounds % GENERATIONS)  # @driver @driver-make
        work(8)                   # @driver @driver-work
        work = None               # @driver
        rounds += 1               # @driver
        if rounds == WARMUP:      # @driver
            ready.append(rounds)  # @driver
    return rounds                 # @driver


ready, stop = fpgt.live("code_churn")
driver(ready, stop)               # @module-driver
fpgt.done()
