# yield from chains six generators deep: parked in the innermost one while
# iterating, while a value is sent through the chain, and in an except
# handler reached by gen.throw() travelling down the chain.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt

fpgt.start("yield_from")


def leaf(label):
    try:
        got = yield 1
        if got == "park":
            fpgt.park(label)
        yield 2
    except KeyError:
        fpgt.park("thrown")
        yield 3


def level(n, label):
    if n == 0:
        result = yield from leaf(label)
    else:
        result = yield from level(n - 1, label)
    return result


def plain_leaf():
    fpgt.park("iterate")
    yield 1


def chain(n):
    if n == 0:
        yield from plain_leaf()
    else:
        yield from chain(n - 1)


list(chain(5))
g = level(5, "sent")
next(g)
g.send("park")
g2 = level(5, "unused")
next(g2)
g2.throw(KeyError("down the chain"))
fpgt.done()
