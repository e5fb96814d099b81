"""probe_callable_slots.py — where a 3.11+ caller keeps the function it called.

Run by the interpreter under test (python3.X probe_callable_slots.py): every
callee below reads, through ctypes, its own _PyInterpreterFrame and its
caller's, and records whether it was pushed by its caller directly (its
`previous` is the caller's frame, and on 3.11 it is no entry frame), whether its f_func / f_funcobj is the
function called, and what the caller holds at its saved stack depth
(3.11-3.13: `stacktop`, an index; 3.14+: `stackpointer`, an address): the
function there, or NULL there and the function in the slot above (3.14+:
stack references, compared without their tag bits, and the exact bits of
f_funcobj there too).  The walk's callee-function check (unwinder/src/emit.c,
callee_was_called) and the CALLABLE_AT_DEPTH set of gen_call_sites rely on
it for CALL, CALL_KW and CALL_FUNCTION_EX.  Each form is probed on its first
run and once its call site is specialised.  Prints one line per form
(version, form, verdict, tab-separated) and exits 1 when a form pushed
directly leaves neither, unless the caller's instruction (its specialised
name) is one of the arguments: the forms gen_call_sites leaves out of
CALLABLE_AT_DEPTH (CALLABLE_ELSEWHERE), whose links the walk does not
compare.
"""
import dis
import ctypes
import sys

# _PyInterpreterFrame offsets per minor version: f_func / f_funcobj,
# previous, frame_obj, is_entry (3.11: a frame its caller reached through C;
# 3.12+ put an entry frame between them instead); 3.11-3.13 keep the int
# stacktop at 64 and localsplus at 72; 3.14 and 3.15 the stackpointer at 64
# (localsplus at 80, GIL and free-threaded alike).
OFFSETS = {11: (0, 48, 40, 68), 12: (16, 8, 48, None), 13: (16, 8, 48, None), 14: (16, 8, 48, None),
           15: (16, 8, 48, None)}
STACKTOP, LOCALSPLUS, WORD = 64, 72, 8
POINTER_SINCE = 14   # the first minor version that saves a stack pointer, not a depth
TAG_BITS = 3         # a stack reference's tag bits (3.14+)
MAX_HEADER = 80  # PyFrameObject bytes searched for its f_frame pointer
WARM_RUNS = 64   # runs after which every call site of caller() is specialised

if sys.version_info[:2] not in {(3, m) for m in OFFSETS}:
    sys.exit("probe_callable_slots: CPython 3.11-3.15 only, not %d.%d" % sys.version_info[:2])
FUNCOBJ, PREVIOUS, FRAME_OBJ, IS_ENTRY = OFFSETS[sys.version_info[1]]
POINTER = sys.version_info[1] >= POINTER_SINCE


def u64(addr):
    return ctypes.c_uint64.from_address(addr).value


def i32(addr):
    return ctypes.c_int32.from_address(addr).value


def iframe(frame_object):
    """The _PyInterpreterFrame a frame object stands for (its f_frame)."""
    for off in range(2 * WORD, MAX_HEADER, WORD):
        p = u64(id(frame_object) + off)
        if p and p % WORD == 0 and u64(p + FRAME_OBJ) == id(frame_object):
            return p
    sys.exit("probe_callable_slots: no f_frame found in the frame object")


seen = {}


def probe(form, callee):
    me, caller = iframe(sys._getframe(1)), iframe(sys._getframe(2))
    if POINTER:
        at = u64(caller + STACKTOP)
    else:
        at = caller + LOCALSPLUS + WORD * i32(caller + STACKTOP)
    mask = ~TAG_BITS if POINTER else ~0
    s0, s1, fn = u64(at) & mask, u64(at + WORD) & mask, u64(me + FUNCOBJ)
    entry = IS_ENTRY is not None and ctypes.c_uint8.from_address(me + IS_ENTRY).value != 0
    seen[form + PASS] = {"op": caller_op(sys._getframe(2)),"direct": u64(me + PREVIOUS) == caller and not entry, "funcobj": fn & mask == id(callee),
                  "at_depth": s0 == id(callee), "null_then_above": s0 == 0 and s1 == id(callee),
                  "same_bits": u64(at) == fn or u64(at + WORD) == fn}


def caller_op(frame):
    """The name of the instruction the frame stands at, as specialised."""
    for ins in dis.get_instructions(frame.f_code, adaptive=True):
        if ins.offset == frame.f_lasti:
            return ins.opname
    return "?"


def plain(a, b):
    probe("CALL f(a, b)", plain)


def keywords(a, b=0):
    probe("CALL_KW f(a, b=1)", keywords)


def defaults(a, b=2):
    probe("CALL f(a) with a default", defaults)


def star_args(*a):
    probe("CALL_FUNCTION_EX f(*args)", star_args)


def star_kwargs(**k):
    probe("CALL_FUNCTION_EX f(**kwargs)", star_kwargs)


def fixed_star(a, b):
    probe("CALL_FUNCTION_EX f(*args) of fixed parameters", fixed_star)


class Klass:
    def method(self):
        probe("CALL obj.method()", Klass.method)

    def method_star(self, *a):
        probe("CALL_FUNCTION_EX obj.method(*args)", Klass.method_star)

    @staticmethod
    def static_star(*a):
        probe("CALL_FUNCTION_EX Klass.static(*args)", Klass.static_star)

    def method_default(self, a=1):
        probe("CALL obj.method() with a default", Klass.method_default)

    @classmethod
    def cls_method(cls, a):
        probe("CALL Klass.classmethod(a)", Klass.cls_method.__func__)

    def bound_default(self, a=1):
        probe("CALL bound() with a default", Klass.bound_default)

    @classmethod
    def cls_default(cls, a=1):
        probe("CALL Klass.classmethod() with a default", Klass.cls_default.__func__)


def caller():
    t = (1, 2)
    plain(1, 2)
    keywords(1, b=1)
    defaults(1)
    star_args(*t)
    star_kwargs(**{"k": 1})
    fixed_star(*t)
    Klass().method()
    Klass().method_star(*t)
    Klass.static_star(*t)
    Klass().method_default()
    Klass.cls_method(1)
    bound = Klass().bound_default  # a method object on the stack, called with fewer arguments than parameters
    bound()
    Klass.cls_default()


# Once as first run (the generic instructions), then until every call site
# has been specialised for what it calls (3.11+ specialise a call site
# after a few runs; CALL_BOUND_METHOD_GENERAL, 3.13, is one that only
# specialisation reaches): both are probed.
PASS = ""
caller()
PASS = " (specialised)"
for _ in range(WARM_RUNS):
    caller()
bad = 0
for form, r in seen.items():
    if not r["direct"]:
        verdict = "through C (not checked)"
    elif r["funcobj"] and (r["at_depth"] or r["null_then_above"]):
        verdict = "function at the depth" if r["at_depth"] else "NULL at the depth, function above it"
    elif r["op"] in sys.argv[1:]:
        verdict = "elsewhere, not compared (%s)" % r["op"]
    else:
        verdict = "NEITHER (%s)" % r["op"]
        bad += 1
    print("%d.%d\t%s\t%s" % (sys.version_info[0], sys.version_info[1], form, verdict))
sys.exit(1 if bad else 0)
