# Code compiled at run time with far-away line numbers: a function after a
# million blank lines, and functions moved by ast.increment_lineno to line
# ~123 million and to just below 2**31, calling each other so all are on
# the stack at once.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt
import ast

fpgt.start("far_line_numbers")

ns = {"fpgt": fpgt}
exec(compile("\n" * 1000000 + "def million(label):\n    fpgt.park(label)\n",
             "<far: 1000000 lines down>", "exec"), ns)


def moved(source, offset, filename):
    tree = ast.parse(source)
    ast.increment_lineno(tree, offset)
    exec(compile(tree, filename, "exec"), ns)


moved("def hundred_million(label):\n    return million(label)\n",
      123456789, "<far: ast.increment_lineno 123456789>")
moved("def near_int_max(label):\n    x = 1\n    return hundred_million(label)\n",
      2**31 - 100, "<far: ast.increment_lineno 2**31-100>")

ns["million"]("million")
ns["near_int_max"]("all-three")
fpgt.done()
