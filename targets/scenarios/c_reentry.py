# Python called back from C: sorted/list.sort keys, map, filter,
# functools.reduce, min with a key, functools.partial, re.sub with a
# function, json object hooks and itertools.starmap.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt
import functools
import itertools
import json
import re

fpgt.start("c_reentry")


def key(x, label="sorted-key"):
    if x == 2:
        fpgt.park(label)
    return -x


sorted([1, 2, 3], key=key)
[3, 2, 1].sort(key=lambda x: key(x, "list.sort-key"))
list(map(lambda x: key(x, "map"), [1, 2]))
list(filter(lambda x: key(x, "filter"), [2]))
functools.reduce(lambda a, b: key(b, "reduce") + a, [1, 2, 3])
min([1, 2], key=functools.partial(key, label="min-partial"))
re.sub("b", lambda m: str(key(2, "re.sub")), "abc")
json.loads('{"a": 1}', object_hook=lambda d: key(2, "json-object-hook"))
list(itertools.starmap(lambda a, b: key(a, "starmap"), [(2, 0)]))


def nested_levels():
    return sorted([2], key=lambda a: sorted([2], key=lambda b: key(b, "sorted-in-sorted")))


nested_levels()
fpgt.done()
