# Exception handling: parked inside except blocks (flat and nested), in a
# finally block while an exception propagates, in a finally block on the
# normal path, in except* (exception groups), in __exit__ while an exception
# passes through a with statement, and after a handled exception.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt

fpgt.start("exceptions_finally")


def raiser(exc):
    raise exc


def in_except():
    try:
        raiser(ValueError("x"))
    except ValueError:
        fpgt.park("except")


def in_nested_except():
    try:
        raiser(KeyError("outer"))
    except KeyError:
        try:
            raiser(TypeError("inner"))
        except TypeError:
            fpgt.park("nested-except")


def finally_propagating():
    try:
        raiser(RuntimeError("propagates"))
    finally:
        fpgt.park("finally-propagating")


def finally_normal():
    try:
        pass
    finally:
        fpgt.park("finally-normal")


def in_except_star():
    try:
        raise ExceptionGroup("group", [ValueError(1), TypeError(2)])
    except* ValueError:
        fpgt.park("except*")
    except* TypeError:
        pass


class Exiting:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        fpgt.park("__exit__-with-exception")
        return True


def after_handled():
    try:
        raiser(OSError("handled"))
    except OSError:
        pass
    fpgt.park("after-handled")


in_except()
in_nested_except()
try:
    finally_propagating()
except RuntimeError:
    pass
finally_normal()
in_except_star()
with Exiting():
    raiser(LookupError("into __exit__"))
after_handled()
fpgt.done()
