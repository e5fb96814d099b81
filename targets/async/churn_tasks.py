# churn_tasks.py — asyncio tasks created and finished without pause, for
# `frameproof dump --async` on a running program (tests/async/test_async_churn.py).
# CPython 3.14+.  Two threads each run an event loop with SUPERVISORS
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
ROUNDS = 3  # yields per level of a job

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


async def step_b():
    for _ in range(ROUNDS):
        await asyncio.sleep(0)


async def step_a():
    for _ in range(ROUNDS):
        await asyncio.sleep(0)
    await step_b()


async def job():
    await asyncio.sleep(0)
    await step_a()


async def supervise(prefix):
    n = 0
    while True:
        async with asyncio.TaskGroup() as tg:
            for _ in range(JOBS):
                tg.create_task(job(), name="job-%s-%d" % (prefix, n))
                n += 1


async def main(t, started):
    asyncio.current_task().set_name("main-%d" % t)
    sups = [asyncio.create_task(supervise("%d-%d" % (t, i)), name="sup-%d-%d" % (t, i))
            for i in range(SUPERVISORS)]
    started.set()
    await asyncio.gather(*sups)


def run(t, started):
    asyncio.run(main(t, started))


if __name__ == "__main__":
    if sys.version_info < (3, 14):
        print("ready", flush=True)
        threading.Event().wait()
    ready = [threading.Event() for _ in range(2)]
    other = threading.Thread(target=run, args=(1, ready[1]), daemon=True)
    other.start()
    threading.Thread(target=lambda: (ready[0].wait(), ready[1].wait(), print("ready", flush=True)),
                     daemon=True).start()
    run(0, ready[0])
