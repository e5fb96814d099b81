# Recursion through generated functions with many locals, so data-stack
# chunks hold only a few frames (300 locals) or a single frame is bigger than
# a whole 16 KiB chunk (2500 and 12000 locals).
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt

fpgt.start("recursion_big_frames")


def make(name, nlocals):
    lines = ["def %s(depth, label):" % name]
    lines += ["    v%d = depth + %d" % (i, i) for i in range(nlocals)]
    lines += ["    if depth == 0:",
              "        fpgt.park(label)",
              "        return v0",
              "    return %s(depth - 1, label) + v%d" % (name, nlocals - 1)]
    ns = {"fpgt": fpgt}
    exec(compile("\n".join(lines) + "\n", "<generated %s>" % name, "exec"), ns)
    return ns[name]


locals300 = make("locals300", 300)
locals2500 = make("locals2500", 2500)
locals12000 = make("locals12000", 12000)


def mixed(depth):
    if depth == 0:
        return locals2500(3, "mixed")
    return locals300(2, "unused") if depth < 0 else mixed(depth - 1)


locals300(120, "locals300")
locals2500(6, "locals2500")
locals12000(3, "locals12000")
mixed(40)
fpgt.done()
