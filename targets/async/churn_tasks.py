# churn_tasks.py — asyncio tasks created and finished without pause, for
# `frameproof dump --async` on a running program (tests/async/test_async_churn.py).
# CPython 3.11+.  Two threads each run an event loop with SUPERVISORS
# supervisor tasks ("sup-T-I"); each supervisor keeps starting a TaskGroup of
# JOBS jobs ("job-T-I-N", N counting up) and waits for it, and every job walks
# job -> step_a -> step_b, yielding to the loop (asyncio.sleep(0)) at each
# level, a few times, then returns.  So at any instant tasks are being
# created, run, suspended and finished, the lists change under the reader and
# a task's memory is soon reused by another.  The shapes a graph may show are
# declared below (DECLARED) for the test to check every graph against; once
# both loops run, it prints "ready" and runs until killed.
import asyncio
import sys
import threading

SUPERVISORS = 3
JOBS = 4
ROUNDS = 3  # yields per level of a job: 1 to ROUNDS, by its number (the jobs of a
            # group end apart, their memory taken by other supervisors' jobs)

# What a graph of this program may hold, for the test: per task-name prefix,
# the function its stack starts from (outermost) and the prefix of the task
# that awaits it (the same thread and supervisor, by name); CALLS, the
# coroutines each one may await (asyncio's own sleep and TaskGroup exit
# among them).  A task's stack, innermost first, read from its last frame
# to its first, must follow these edges.
DECLARED = {
    "job-": {"root": "job", "awaited_by": "sup-"},
    "sup-": {"root": "supervise", "awaited_by": "main-"},
    "main-": {"root": "main", "awaited_by": None},
}
CALLS = {
    "job": {"step_a", "sleep"},
    "step_a": {"step_b", "sleep"},
    "step_b": {"sleep"},
    "supervise": {"TaskGroup.__aexit__"},
    "TaskGroup.__aexit__": {"TaskGroup._aexit"},
    # sleep(0) awaits asyncio's __sleep0(), a generator-based coroutine: a view
    # that follows generators shows it (frameproof's stack ends at sleep).
    "sleep": {"__sleep0"},
}


async def step_b(rounds):
    for _ in range(rounds):
        await asyncio.sleep(0)


async def step_a(rounds):
    for _ in range(rounds):
        await asyncio.sleep(0)
    await step_b(rounds)


async def job(rounds):
    await asyncio.sleep(0)
    await step_a(rounds)


# Before 3.13 TaskGroup.create_task names a task only after creating it, so
# a read could find a job of the default name "Task-N", which no other
# instant has; there, the loop's task factory gives a job its name as it is
# made (the name the supervisor is about to pass, kept per loop).
NAMES_AT_CREATION = sys.version_info < (3, 13)
next_name = {}


def named_task(loop, coro, **kwargs):
    kwargs.setdefault("name", next_name.pop(loop, None))
    return asyncio.Task(coro, loop=loop, **kwargs)


async def supervise(prefix):
    n = 0
    loop = asyncio.get_running_loop()
    while True:
        async with asyncio.TaskGroup() as tg:
            for _ in range(JOBS):
                name = "job-%s-%d" % (prefix, n)
                next_name[loop] = name
                tg.create_task(job(1 + n % ROUNDS), name=name)
                n += 1


async def main(t, started):
    asyncio.current_task().set_name("main-%d" % t)
    if NAMES_AT_CREATION:
        asyncio.get_running_loop().set_task_factory(named_task)
    sups = [asyncio.create_task(supervise("%d-%d" % (t, i)), name="sup-%d-%d" % (t, i))
            for i in range(SUPERVISORS)]
    started.set()
    await asyncio.gather(*sups)


def run(t, started):
    asyncio.run(main(t, started))


if __name__ == "__main__":
    ready = [threading.Event() for _ in range(2)]
    other = threading.Thread(target=run, args=(1, ready[1]), daemon=True)
    other.start()
    threading.Thread(target=lambda: (ready[0].wait(), ready[1].wait(), print("ready", flush=True)),
                     daemon=True).start()
    run(0, ready[0])
