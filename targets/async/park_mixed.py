# park_mixed.py — tasks of asyncio's pure-Python implementation
# (asyncio.tasks._PyTask) in a program that imported asyncio's C module, for
# `frameproof dump --async` (tests/async/test_dump_async.py).  Beside the C
# module asyncio records no awaiter of such a task (the C
# future_add_to_awaited_by leaves out every future not its own), so the
# graph cannot be read whole and must be refused.  PARK_MIXED in its
# environment says how the two meet: "factory", every task pure through the loop's task factory (the
# main task too: no C task at all); "patched", a C main task awaiting a
# pure one, the program having put the pure-Python recorder back into
# asyncio.futures (the pure tasks then record their awaiters among
# themselves, but the C task's wait on the pure one is recorded nowhere).
# Prints "ready {}" once parked and sleeps until killed.
import asyncio
import json
import os

PARK_SECONDS = 3600


async def leaf():
    await asyncio.sleep(PARK_SECONDS)


async def middle():
    await asyncio.tasks._PyTask(leaf(), loop=asyncio.get_running_loop(), name="pure-leaf")


async def main():
    loop = asyncio.get_running_loop()
    pure = asyncio.tasks._PyTask(middle(), loop=loop, name="pure")
    loop.call_later(0.2, lambda: print("ready " + json.dumps({}), flush=True))
    await pure


def pure_loop():
    loop = asyncio.new_event_loop()
    loop.set_task_factory(lambda loop, coro, **kwargs: asyncio.tasks._PyTask(coro, loop=loop, **kwargs))
    return loop


if os.environ.get("PARK_MIXED") == "factory":
    with asyncio.Runner(loop_factory=pure_loop) as runner:
        runner.run(main())
else:
    asyncio.futures.future_add_to_awaited_by = asyncio.futures._py_future_add_to_awaited_by
    asyncio.futures.future_discard_from_awaited_by = asyncio.futures._py_future_discard_from_awaited_by
    asyncio.run(main())
