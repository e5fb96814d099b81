# Very long names: qualnames longer than 1024 and 70000 characters (nested
# functions with long names, built by exec), a 70000-character co_name, and
# file names longer than 4096 and 100000 characters given to compile().
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt

fpgt.start("long_names")


def build(names, filename):
    src = []
    indent = ""
    for n in names:
        src.append(indent + "def %s(label):" % n)
        indent += "    "
    src.append(indent + "fpgt.park(label)")
    for depth in range(len(names) - 1, 0, -1):
        src.append("    " * depth + "%s(label)" % names[depth])
    ns = {"fpgt": fpgt}
    exec(compile("\n".join(src) + "\n", filename, "exec"), ns)
    return ns[names[0]]


over1k = build(["f" + "a" * 400, "g" + "b" * 400, "h" + "c" * 400], "<long qualname 1k>")
over70k = build(["F" + "A" * 25000, "G" + "B" * 25000, "H" + "C" * 25000], "<long qualname 70k>")
long_co_name = build(["n" * 70000], "<long co_name>")
long_file = build(["in_long_file"], "/" + "d" * 250 + ("/" + "p" * 250) * 20 + "/file.py")
huge_file = build(["in_huge_file"], "<" + "\u00e9\u4e2d\U0001d523" * 34000 + ">")

over1k("qualname>1024")
over70k("qualname>70000")
long_co_name("co_name=70000")
long_file("filename>4096")
huge_file("filename>100000")
fpgt.done()
