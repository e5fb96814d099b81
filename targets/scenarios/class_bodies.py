# Parked while class bodies execute: a module-level class, a class nested in
# a class, a class body inside a function, and the C->Python calls made while
# a class is created (__prepare__, metaclass __new__, __set_name__,
# __init_subclass__).
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt

fpgt.start("class_bodies")


class Outer:
    x = 1
    fpgt.park("module-class-body")

    class Inner:
        y = 2
        fpgt.park("nested-class-body")


def factory():
    class Local:
        z = 3
        fpgt.park("class-body-in-function")
    return Local


factory()


class Meta(type):
    @classmethod
    def __prepare__(mcls, name, bases, **kw):
        if name == "Traced":
            fpgt.park("__prepare__")
        return {}

    def __new__(mcls, name, bases, ns, **kw):
        if name == "Traced":
            fpgt.park("metaclass-__new__")
        return super().__new__(mcls, name, bases, ns)


class Named:
    def __set_name__(self, owner, name):
        fpgt.park("__set_name__")


class Base:
    def __init_subclass__(cls, **kw):
        super().__init_subclass__()
        fpgt.park("__init_subclass__")


class Traced(Base, metaclass=Meta):
    attr = Named()


fpgt.done()
