# Nested functions and lambdas: outer.<locals>.inner.<locals>.innermost,
# module-level and nested lambdas, a closure inside a method, and a
# functools.wraps wrapper (its code keeps its own qualname).
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt
import functools

fpgt.start("closures_lambdas")


def outer():
    a = 1

    def inner():
        b = a + 1

        def innermost():
            fpgt.park("innermost")
            return b
        return innermost()
    return inner()


outer()

top_lambda = lambda: fpgt.park("module-lambda")
top_lambda()


def with_lambda():
    f = lambda x: (lambda: fpgt.park("nested-lambda"))()
    return f(1)


with_lambda()


class Holder:
    def method(self):
        def helper():
            fpgt.park("closure-in-method")
        helper()


Holder().method()


def deco(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


@deco
def decorated():
    fpgt.park("wrapped")


decorated()
fpgt.done()
