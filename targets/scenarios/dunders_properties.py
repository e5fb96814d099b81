# Special methods and descriptors called from C: __getitem__, __add__,
# __eq__ (list.index), __len__, __iter__/__next__, __hash__ (dict insert),
# __getattr__, property getter and setter, a data descriptor's __get__,
# __format__ (f-string), __repr__, __bool__, __contains__, __index__.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt

fpgt.start("dunders_properties")


class Magic:
    def __getitem__(self, i):
        fpgt.park("__getitem__")
        return i

    def __add__(self, other):
        fpgt.park("__add__")
        return self

    def __eq__(self, other):
        fpgt.park("__eq__")
        return True

    __hash__ = None

    def __len__(self):
        fpgt.park("__len__")
        return 1

    def __iter__(self):
        return self

    def __next__(self):
        fpgt.park("__next__")
        raise StopIteration

    def __getattr__(self, name):
        fpgt.park("__getattr__")
        return name

    @property
    def prop(self):
        fpgt.park("property-get")
        return 1

    @prop.setter
    def prop(self, value):
        fpgt.park("property-set")

    def __format__(self, spec):
        fpgt.park("__format__")
        return "m"

    def __repr__(self):
        fpgt.park("__repr__")
        return "Magic()"

    def __bool__(self):
        fpgt.park("__bool__")
        return True

    def __contains__(self, item):
        fpgt.park("__contains__")
        return True

    def __index__(self):
        fpgt.park("__index__")
        return 1


class Hashable:
    def __hash__(self):
        fpgt.park("__hash__")
        return 1


class Descriptor:
    def __get__(self, obj, objtype=None):
        fpgt.park("descriptor-__get__")
        return 2


class HasDescriptor:
    d = Descriptor()


m = Magic()
m[0]
m + 1
[m].index(0)
len(m)
for _ in m:
    pass
{Hashable(): 1}
m.missing
m.prop
m.prop = 2
HasDescriptor().d
f"{m}"
repr(m)
if m:
    pass
1 in m
range(m)
fpgt.done()
