# Generator expressions consumed by C functions (sum, list, any) and nested
# generator expressions; park called directly from a genexpr's expression.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt

fpgt.start("genexpr")


def value(x, label):
    if x == 3:
        fpgt.park(label)
    return x


total = sum(value(x, "sum") for x in range(5))
nested = list(sum(value(y, "nested") for y in range(x)) for x in range(5))
direct = list(fpgt.park("direct") for _ in range(1))


def in_function():
    return any(value(x, "any") == 3 for x in range(10))


in_function()
fpgt.done()
