# park_tasks.py — an asyncio task graph, parked, for `frameproof dump --async`
# (tests/async/test_dump_async.py).  On CPython 3.14+ two threads each run an
# event loop whose tasks all end up suspended in asyncio.sleep(): a
# TaskGroup of workers (worker -> mid -> leaf), a gather() of two tasks, a
# task awaiting another task, a shield(), a wait_for(), an unnamed task, a
# recursive chain, a task reached through plain (non-task) futures, an eager
# task, a task cleaning up after its cancellation, a task iterating an async
# generator and one awaiting an object of the program's own class named
# `coroutine` (not the built-in type, whatever its name); a third
# thread's loop is stopped inside a running task (the task "runner", awaited
# by "runner-parent", blocked on a lock in a plain function two coroutines
# deep: its stack is what its thread runs, as capture_call_graph() gives the
# current task's, taken on the line it blocks on); and a fourth thread
# leaves a task pending and exits (its task then on the
# interpreter's list, "thread": null in the truth).  Once
# every loop is idle, the truth is computed inside the process with
# asyncio.capture_call_graph() on each loop's own thread, from a callback
# (so no task is running) — its stacks continued into the async generator
# an `async for` awaits, where capture_call_graph stops (the awaitable
# __anext__() returns has no cr_await; the generator is found among its
# referents) — and printed as one line "ready <json>":
#   {"pid": P, "tasks": [{"addr": id(task), "task": true, "name", "thread",
#     "stack": [[co_qualname, f_lineno], ...] innermost first,
#     "awaited_by": sorted ids[, "running": true for the running task]}, ...,
#    {"addr": id(fut), "task": false, "awaited_by": [...]}, ...]}
# Before 3.14 (no capture_call_graph(), no awaited_by) the same program
# runs without the parts those versions lack (the future relay; the eager
# task before 3.12) and the truth is taken from the tasks themselves: each
# pending task's coroutine chain, and as its awaiters the tasks that wait
# on it (their _fut_waiter) or on a gather() that has it among its
# children, its TaskGroup's parent task, the task waiting on the shield()
# around it — the links 3.11-3.13 keep, in the tasks' waiters and done
# callbacks, and what `frameproof dump --async` reads there.  With
# PARK_PURE_TASKS=1 in its environment every task is of asyncio's
# pure-Python implementation (asyncio.tasks._PyTask): on 3.11-3.13 made by
# each loop's task factory, on 3.14+ asyncio's C module kept from being
# imported (its futures then pure-Python too, and capture_call_graph()
# the truth still).
import os
import sys

if sys.version_info >= (3, 14) and os.environ.get("PARK_PURE_TASKS") == "1":
    sys.modules["_asyncio"] = None   # asyncio falls back on its pure-Python implementation

import asyncio  # noqa: E402
import gc  # noqa: E402
import inspect  # noqa: E402
import json  # noqa: E402
import threading  # noqa: E402

PARK_SECONDS = 3600
LEGACY = sys.version_info < (3, 14)   # no task graph kept by asyncio itself
SETTLE_SECONDS = 0.2   # lets every task reach its sleep before the truth is taken
CROSS_TIMEOUT = 60     # how long one thread waits for the other
DEEP = 6               # recursion depth of the deep chain
PURE = LEGACY and os.environ.get("PARK_PURE_TASKS") == "1"
TASK = asyncio.tasks._PyTask if PURE else asyncio.Task


def pure_task(loop, coro, **kwargs):
    return asyncio.tasks._PyTask(coro, loop=loop, **kwargs)


def pure_policy():
    """A policy whose every new loop makes pure-Python tasks (asyncio.run's
    main task too); made only when PURE (3.14 deprecates policies)."""
    class PurePolicy(asyncio.DefaultEventLoopPolicy):
        def new_event_loop(self):
            loop = super().new_event_loop()
            loop.set_task_factory(pure_task)
            return loop
    return PurePolicy()


async def leaf():
    await asyncio.sleep(PARK_SECONDS)


async def mid():
    await leaf()


async def worker():
    await mid()


async def gathered():
    await asyncio.sleep(PARK_SECONDS)


async def gatherer(children):
    await asyncio.gather(*children)


async def awaits_task(other):
    await other


async def shielding(inner):
    await asyncio.shield(inner)


async def timed():
    # Twice the sleep: the timeout never fires first.
    await asyncio.wait_for(leaf(), timeout=2 * PARK_SECONDS)


async def descend(n):
    if n == 0:
        await asyncio.sleep(PARK_SECONDS)
    else:
        await descend(n - 1)


async def awaits_future(fut):
    await fut


async def cleaning_up():
    try:
        await asyncio.sleep(PARK_SECONDS)
    except asyncio.CancelledError:
        await asyncio.sleep(PARK_SECONDS)   # cancelled: cleaning up, still pending


async def ticks():
    while True:
        await asyncio.sleep(PARK_SECONDS)
        yield 1


async def consumes():
    async for _ in ticks():
        pass


class coroutine:  # noqa: N801  (named like the built-in type on purpose)
    """An awaitable that is its own iterator, so awaiting it leaves this
    object itself on the awaiting coroutine's stack; its type is called
    `coroutine` and is no coroutine."""

    def __init__(self, fut):
        self.fut = fut

    def __await__(self):
        return self

    def __next__(self):
        if not self.fut.done():
            self.fut._asyncio_future_blocking = True
            return self.fut
        raise StopIteration(self.fut.result())

    def send(self, _value):
        return self.__next__()

    def throw(self, *exc):
        raise exc[-1] if len(exc) == 1 else exc[1]


async def awaits_impostor():
    await coroutine(asyncio.get_running_loop().create_future())


def task_name(task):
    """task.get_name() without its side effect: an unnamed task keeps the
    integer N of "Task-N" until get_name() first turns it into the string,
    and the unwinder must read that lazy form too.  A pending C task's only
    int referent is that counter (a pure-Python task's name is a str at
    once, and its __dict__ holds other ints)."""
    counters = [r for r in gc.get_referents(task) if type(r) is int]
    c_task = getattr(asyncio.tasks, "_CTask", None)   # none without asyncio's C module
    if len(counters) == 1 and c_task is not None and isinstance(task, c_task):
        return "Task-%d" % counters[0]
    return task.get_name()


def loop_truth(loop):
    """Every task of loop (the running one, called from one of its
    callbacks) with its call graph, and every non-task future reached as
    an awaiter, as the entries of "ready"'s document."""
    thread = threading.get_native_id()
    entries, seen = [], set()

    def parents(graph):
        for p in graph.awaited_by:
            fut = p.future
            if not isinstance(fut, asyncio.Task) and id(fut) not in seen:
                seen.add(id(fut))
                entries.append({"addr": id(fut), "task": False,
                                "awaited_by": sorted(id(q.future) for q in p.awaited_by)})
                parents(p)

    tasks = asyncio.all_tasks(loop)
    for task in tasks:
        if LEGACY:
            legacy_entry(task, thread, entries, tasks)
        else:
            parents(task_entry(task, thread, entries))
    return entries


SHIELD_CALLBACK = "shield.<locals>._inner_done_callback"


def legacy_awaited_by(task, tasks):
    """Before 3.14, the awaiters of task among tasks, sorted by id, from
    what those versions record: the tasks that wait on it (_fut_waiter),
    directly or through a gather() that has it among its children; the
    parent task of the TaskGroup whose done callback it carries; the task
    waiting on the outer future of the shield() whose callback it carries."""
    by = set()
    for t in tasks:
        w = t._fut_waiter
        if w is task or (type(w).__name__ == "_GatheringFuture" and any(c is task for c in w._children or ())):
            by.add(t)
    for cb, _ in task._callbacks or ():
        owner = getattr(cb, "__self__", None)
        if type(owner).__name__ == "TaskGroup" and any(owner._parent_task is t for t in tasks):
            by.add(owner._parent_task)
        if getattr(cb, "__qualname__", None) == SHIELD_CALLBACK:
            outers = [c.cell_contents for c in cb.__closure__ or ()
                      if isinstance(getattr(c, "cell_contents", None), asyncio.Future)]
            by.update(t for t in tasks if any(t._fut_waiter is o for o in outers))
    return sorted(id(t) for t in by)


def legacy_entry(task, thread, entries, tasks):
    """task_entry before 3.14: its coroutine chain and legacy_awaited_by."""
    entries.append({"addr": id(task), "task": True, "name": task_name(task), "thread": thread,
                    "stack": [[f.f_code.co_qualname, f.f_lineno] for f in coroutine_stack(task)],
                    "awaited_by": legacy_awaited_by(task, tasks)})


AGEN_AWAITABLES = ("async_generator_asend", "async_generator_athrow")


def coroutine_stack(task):
    """The frames task's coroutine chain is suspended in, innermost first:
    what capture_call_graph follows (cr_await, ag_await), and through the
    awaitable of an async generator's __anext__()/asend()/athrow() into
    the generator itself, where capture_call_graph stops."""
    frames, obj = [], task.get_coro()
    while obj is not None:
        if inspect.iscoroutine(obj):
            frames.append(obj.cr_frame)
            obj = obj.cr_await
        elif inspect.isasyncgen(obj):
            frames.append(obj.ag_frame)
            obj = obj.ag_await
        elif type(obj).__name__ in AGEN_AWAITABLES and type(obj).__module__ == "builtins":
            gens = [r for r in gc.get_referents(obj) if inspect.isasyncgen(r)]
            obj = gens[0] if len(gens) == 1 else None
        else:
            break
    return [f for f in reversed(frames) if f is not None]


class Runner:
    """The third thread's loop, stopped in its running task, and the truth
    that task computes of its loop before it blocks."""
    lock = threading.Lock()       # held by the main thread for ever: the task blocks on it
    parent_waits = False
    truth = None
    computed = threading.Event()


def runner_truth():
    """The running task's loop as entries, from inside that task: its own
    stack (the caller's caller on, as capture_call_graph gives it) and
    every other task of its loop; returns True, for Runner.lock.acquire."""
    me = asyncio.current_task()
    thread = threading.get_native_id()
    tasks = asyncio.all_tasks()
    if LEGACY:
        # from the caller on, as capture_call_graph(depth=2) would: up to
        # the frame of the task's own coroutine
        frames, f, root = [], sys._getframe(1), me.get_coro().cr_frame
        while f is not None:
            frames.append(f)
            f = None if f is root else f.f_back
        stack, awaited_by = frames, legacy_awaited_by(me, tasks)
    else:
        graph = asyncio.capture_call_graph(depth=2)
        stack, awaited_by = [e.frame for e in graph.call_stack], sorted(id(p.future) for p in graph.awaited_by)
    entries = [{"addr": id(me), "task": True, "name": task_name(me), "thread": thread, "running": True,
                "stack": [[f.f_code.co_qualname, f.f_lineno] for f in stack], "awaited_by": awaited_by}]
    for task in tasks:
        if task is not me:
            if LEGACY:
                legacy_entry(task, thread, entries, tasks)
            else:
                task_entry(task, thread, entries)
    Runner.truth = entries
    Runner.computed.set()
    return True


def runner_blocks():
    Runner.lock.acquire(runner_truth())   # one line: the truth is taken where it blocks


async def runner_inner():
    runner_blocks()


async def runner():
    while not Runner.parent_waits:   # runner-parent awaits this task first
        await asyncio.sleep(0)
    await runner_inner()


async def runner_parent(task):
    Runner.parent_waits = True
    await task


async def runner_main():
    task = asyncio.create_task(runner(), name="runner")
    await asyncio.create_task(runner_parent(task), name="runner-parent")


def task_entry(task, thread, entries):
    """Appends task's entry (thread: the native id of the thread whose list
    holds it, None for the interpreter's) to entries; returns its graph."""
    graph = asyncio.capture_call_graph(task)
    frames = coroutine_stack(task)
    known = [e.frame for e in graph.call_stack]
    if frames[len(frames) - len(known):] != known:
        sys.exit("%r: capture_call_graph's stack is not the end of the chain followed" % task.get_name())
    entries.append({"addr": id(task), "task": True, "name": task_name(task), "thread": thread,
                    "stack": [[f.f_code.co_qualname, f.f_lineno] for f in frames],
                    "awaited_by": sorted(id(p.future) for p in graph.awaited_by)})
    return graph


class Orphan:
    """A task left pending by a thread that has exited, its loop stopped and
    not closed: CPython moves it to its interpreter's own task list."""
    loop = None
    task = None


def orphan_thread():
    Orphan.loop = asyncio.new_event_loop()

    async def spawn():
        Orphan.task = asyncio.create_task(leaf(), name="orphan")
        await asyncio.sleep(0)   # the orphan's first step: it parks in its sleep

    Orphan.loop.run_until_complete(spawn())


class Other:
    """The second thread's loop and what its truth hands back."""
    loop = None
    settled = threading.Event()
    truth = None
    computed = threading.Event()


async def other_main():
    loop = asyncio.get_running_loop()
    Other.loop = loop
    a = asyncio.create_task(worker(), name="t2-a")
    b = asyncio.create_task(awaits_task(a), name="t2-b")
    loop.call_later(SETTLE_SECONDS, Other.settled.set)
    await b


def other_truth():
    Other.truth = loop_truth(Other.loop)
    Other.computed.set()


def announce(loop):
    """Main loop callback, once every task is parked: both truths, "ready"."""
    entries = loop_truth(loop)
    Other.loop.call_soon_threadsafe(other_truth)
    if not Other.computed.wait(CROSS_TIMEOUT):
        sys.exit("the second loop did not compute its truth")
    entries += Other.truth
    if not Runner.computed.wait(CROSS_TIMEOUT):
        sys.exit("the running task did not compute its truth")
    entries += Runner.truth
    if LEGACY:
        legacy_entry(Orphan.task, None, entries, [Orphan.task])
    else:
        task_entry(Orphan.task, None, entries)
    print("ready " + json.dumps({"pid": os.getpid(), "tasks": entries}), flush=True)


async def main():
    loop = asyncio.get_running_loop()
    keep = []   # the loop holds its tasks weakly
    async with asyncio.TaskGroup() as tg:
        for i in range(3):
            tg.create_task(worker(), name="w%d" % i)
        g1 = asyncio.create_task(gathered(), name="gathered-1")
        g2 = asyncio.create_task(gathered(), name="gathered-2")
        keep += [g1, g2, asyncio.create_task(gatherer([g1, g2]), name="g")]
        awaited = asyncio.create_task(leaf(), name="awaited")
        keep += [awaited, asyncio.create_task(awaits_task(awaited), name="awaiter")]
        shielded = asyncio.create_task(leaf(), name="shielded")
        keep += [shielded, asyncio.create_task(shielding(shielded), name="shielder")]
        keep.append(asyncio.create_task(timed(), name="timed"))
        unnamed = asyncio.create_task(leaf())
        unnamed.get_name()   # this one's "Task-N" is a string; asyncio.run's tasks keep theirs lazy
        keep.append(unnamed)
        keep.append(asyncio.create_task(descend(DEEP), name="deep"))
        # A task reached through plain futures: relayed is awaited by the
        # future relay, which relay-waiter awaits and which the future
        # relay_outer awaits in turn.
        if not LEGACY:
            relay, relay_outer = loop.create_future(), loop.create_future()
            relayed = asyncio.create_task(gathered(), name="relayed")
            asyncio.future_add_to_awaited_by(relayed, relay)
            asyncio.future_add_to_awaited_by(relay, relay_outer)
            keep += [relay, relay_outer, relayed, asyncio.create_task(awaits_future(relay), name="relay-waiter")]
            keep.append(asyncio.create_task(leaf(), name="eager", eager_start=True))  # its first step runs here
        elif sys.version_info >= (3, 12):
            keep.append(TASK(leaf(), loop=loop, name="eager", eager_start=True))
        cancelled = asyncio.create_task(cleaning_up(), name="cancelled")
        loop.call_later(SETTLE_SECONDS / 4, cancelled.cancel)
        keep += [cancelled, asyncio.create_task(consumes(), name="agen-consumer")]
        keep.append(asyncio.create_task(awaits_impostor(), name="impostor-awaiter"))
        loop.call_later(SETTLE_SECONDS, announce, loop)
    return keep


def run():
    if PURE:
        asyncio.set_event_loop_policy(pure_policy())
    orphans = threading.Thread(target=orphan_thread)
    orphans.start()
    orphans.join()
    threading.Thread(target=asyncio.run, args=(other_main(),), daemon=True).start()
    Runner.lock.acquire()
    threading.Thread(target=asyncio.run, args=(runner_main(),), daemon=True).start()
    if not Other.settled.wait(CROSS_TIMEOUT):
        sys.exit("the second loop did not settle")
    asyncio.run(main())


if __name__ == "__main__":
    run()
