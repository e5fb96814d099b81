# owner_swap.py — one task whose awaiter keeps changing, for `frameproof
# record --async` (tests/async/test_record_async.py).  CPython 3.11+.
# Two owner tasks ("owner-a", "owner-b") wait in owner(), each inside a
# TaskGroup of its own; the task "shared" is linked to one of them as its
# awaiter — on 3.14+ with asyncio.future_add_to_awaited_by, before with what
# those versions record of an awaiter, a TaskGroup's done callback (the
# owner's group's _on_task_done, which names the owner as its parent task;
# shared never finishes, so it is never called) — and, while it is, spins in spin_a() for owner-a or spin_b() for owner-b
# between yields, then moves itself to the other owner.  The move and the
# change of spin function happen in one step of the task, so at any instant
# a stack of shared inside spin_a is awaited by owner-a and one inside
# spin_b by owner-b: a profile that joins a stack through an awaiter edge of
# another instant shows spin_a under owner-b.  The main task ("Task-1")
# sleeps.  Run as a script, it prints "ready" once shared has moved once and
# runs until killed; imported, it only gives its truth (JOIN, problem()).
import asyncio
import sys
import time

SPIN_S = 0.001        # one spin
SPINS_PER_OWNER = 2   # spins before shared moves to the other owner
JOIN = {"spin_a": "owner-a", "spin_b": "owner-b"}  # the truth the test checks
OWNERS = frozenset(JOIN.values())


# The failure classes of problem(): True for a stack the program cannot
# have at any one instant; False for another view of an instant it can
# have, whose frames are not the task's own: while asyncio's C code steps
# the task (about to enter its coroutine, or just back from it) the thread
# runs the event loop, and a profiler that puts the thread's stack (or its
# innermost frames) under the task shows the loop, asyncio.run and
# <module> as the task's frames, or no frame of the task when it finds none.
IMPOSSIBLE = {
    "a spin under the other owner": True,
    "a spin with no owner": True,
    "a frame of the task missing": True,
    "not a chain of the program's tasks": True,
    "the event loop's frames as the task's": False,
    "no frame of the task": False,
}


# The event loop's own frames, as a thread's stack shows them while asyncio
# steps a task: the module, asyncio.run, and methods of the loop's classes.
LOOP_FUNCTIONS = ("<module>", "run")
LOOP_CLASSES = ("Runner.", "BaseEventLoop.", "BaseSelectorEventLoop.", "_UnixSelectorEventLoop.", "Handle.",
                "EpollSelector.", "TimerHandle.")


def is_loop_frame(function):
    return function in LOOP_FUNCTIONS or function.startswith(LOOP_CLASSES)


def problem(stack):
    """What is wrong with a task stack of shared (function names and task
    names, root first), as (failure class, the stack); None when it is
    what frameproof shows of an instant the program can have: an owner's
    task, owner(), asyncio's sleep, shared's task, shared_loop and what it
    runs (or, while asyncio steps it, where it waits under "<task step>"),
    a spin only under its own owner; or shared alone (caught between
    owners), in no spin.  IMPOSSIBLE says which classes no instant has."""
    text = ";".join(stack)
    if stack[:1] == ("shared",):
        rest = stack[1:]
        if rest[:1] != ("shared_loop",):
            return ("a frame of the task missing", text)
        return ("a spin with no owner", text) if any(f in JOIN for f in rest) else None
    if stack[:1] and stack[0] in OWNERS and stack[1:4] == ("owner", "sleep", "shared"):
        rest = stack[4:]
        if not rest:
            return ("no frame of the task", text)
        if all(is_loop_frame(f) for f in rest):
            return ("the event loop's frames as the task's", text)
        if rest[0] != "shared_loop":
            return ("a frame of the task missing", text)
        if any(f in JOIN and JOIN[f] != stack[0] for f in rest):
            return ("a spin under the other owner", text)
        return None
    return ("not a chain of the program's tasks", text)


def spin_a():
    end = time.perf_counter() + SPIN_S
    while time.perf_counter() < end:
        pass


def spin_b():
    end = time.perf_counter() + SPIN_S
    while time.perf_counter() < end:
        pass


async def owner(groups, side):
    async with asyncio.TaskGroup() as group:
        groups[side] = group
        await asyncio.sleep(3600)


def link(me, owners, groups, side):
    """Makes the owner of side shared's awaiter, as the version records one."""
    if hasattr(asyncio, "future_add_to_awaited_by"):
        asyncio.future_add_to_awaited_by(me, owners[side])
    else:
        me.add_done_callback(groups[side]._on_task_done)


def unlink(me, owners, groups, side):
    if hasattr(asyncio, "future_discard_from_awaited_by"):
        asyncio.future_discard_from_awaited_by(me, owners[side])
    else:
        me.remove_done_callback(groups[side]._on_task_done)


async def shared_loop(owners, groups, ready):
    me = asyncio.current_task()
    side = "a"
    link(me, owners, groups, side)
    while True:
        for _ in range(SPINS_PER_OWNER):
            (spin_a if side == "a" else spin_b)()
            await asyncio.sleep(0)
        unlink(me, owners, groups, side)
        side = "b" if side == "a" else "a"
        link(me, owners, groups, side)
        if not ready.is_set():
            ready.set()


async def main():
    groups = {}
    owners = {"a": asyncio.create_task(owner(groups, "a"), name="owner-a"),
              "b": asyncio.create_task(owner(groups, "b"), name="owner-b")}
    ready = asyncio.Event()
    while len(groups) < 2:    # both owners inside their groups
        await asyncio.sleep(0)
    asyncio.create_task(shared_loop(owners, groups, ready), name="shared")
    await ready.wait()
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    await asyncio.sleep(3600)


if __name__ == "__main__":
    asyncio.run(main())
