# Qualified names of methods: instance, static and class methods, a method
# of a nested class, a method reached through super(), and __call__.
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

    class Nested:
        class Deeper:
            def method(self):
                fpgt.park("nested-class-method")


t = Thing()
t.method()
Thing.static()
t.klass()
t.greet()
t(1)
Thing.Nested.Deeper().method()
fpgt.done()
