# Qualified names of methods: instance, static and class methods, a method
# of a nested class, a method reached through super(), and __call__; and a
# bound method object called with fewer arguments than its parameters from
# a call site parked in on its first run and again once it is specialised
# (3.13: CALL_BOUND_METHOD_GENERAL, which leaves the method object, not the
# function, where its caller's call keeps what it called; an unwinder that
# copied the code at the first park still sees the CALL there).
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt

fpgt.start("methods")


class Base:
    def greet(self):
        fpgt.park("super-method")


class Thing(Base):
    def method(self):
        fpgt.park("instance-method")

    @staticmethod
    def static():
        fpgt.park("staticmethod")

    @classmethod
    def klass(cls):
        fpgt.park("classmethod")

    def greet(self):
        super().greet()

    def __call__(self, arg):
        fpgt.park("__call__")

    def with_default(self, label, unused=None):
        if label:
            fpgt.park(label)

    class Nested:
        class Deeper:
            def method(self):
                fpgt.park("nested-class-method")


def call_bound(bound, times):
    for i in range(times):
        bound("bound-method-first-call" if i == 0 else "bound-method-specialised" if i == times - 1 else None)


t = Thing()
t.method()
Thing.static()
t.klass()
t.greet()
t(1)
Thing.Nested.Deeper().method()
call_bound(t.with_default, 301)
fpgt.done()
