# A generated function of 20000 lines (big line table, lasti beyond 64 KiB),
# parked near its end at a column beyond 1000; another with a 300000-line
# gap inside its body (large line-number deltas in one line table).
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt

fpgt.start("huge_function")

lines = ["def huge(label):", "    acc = 0"]
for i in range(20000):
    lines.append("    acc += %d" % i)
lines.append("    " + "acc = acc + 0; " * 80 + "fpgt.park(label)")
lines.append("    return acc")
ns = {"fpgt": fpgt}
exec(compile("\n".join(lines) + "\n", "<generated huge 20000 lines>", "exec"), ns)

gap = ("def gapped(label):\n    a = 1\n" + "\n" * 300000 +
       "    b = a + 1\n" + "\n" * 300000 + "    fpgt.park(label)\n    return b\n")
exec(compile(gap, "<generated gapped>", "exec"), ns)


def caller():
    ns["huge"]("huge")
    ns["gapped"]("gapped")


caller()
fpgt.done()
