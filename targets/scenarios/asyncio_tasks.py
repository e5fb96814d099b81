# asyncio tasks: the event-loop thread parked inside a coroutine run by
# gather(), inside a TaskGroup task, inside a nested await chain, and a
# worker thread of asyncio.to_thread parked while the loop waits.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt
import asyncio

fpgt.start("asyncio_tasks")


async def sleeper(i):
    await asyncio.sleep(0)
    return i


async def parker(label):
    await asyncio.sleep(0)
    fpgt.park(label)
    return label


async def inner_chain(depth):
    if depth == 0:
        return await parker("nested-await")
    return await inner_chain(depth - 1)


def blocking_in_thread():
    fpgt.park("to-thread")
    return 7


async def main():
    await asyncio.gather(sleeper(1), parker("gather"), sleeper(2))
    async with asyncio.TaskGroup() as tg:
        tg.create_task(sleeper(3))
        tg.create_task(parker("taskgroup"))
    await asyncio.create_task(inner_chain(4))
    await asyncio.to_thread(blocking_in_thread)


asyncio.run(main())
fpgt.done()
