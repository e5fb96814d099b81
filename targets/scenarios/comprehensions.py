# List, dict and set comprehensions (own frames up to 3.11, inlined into the
# enclosing frame from 3.12), nested comprehensions and a comprehension in a
# class body.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt

fpgt.start("comprehensions")


def step(x, label):
    if x == 2:
        fpgt.park(label)
    return x


def in_function():
    squares = [step(x, "listcomp") * x for x in range(3)]
    mapping = {x: step(x, "dictcomp") for x in range(3)}
    unique = {step(x, "setcomp") for x in range(3)}
    grid = [[step(x + y, "nested") for y in range(2)] for x in range(2)]
    return squares, mapping, unique, grid


in_function()
module_level = [step(x, "module-listcomp") for x in range(3)]


class InClass:
    values = [step(x, "class-listcomp") for x in range(3)]


fpgt.done()
