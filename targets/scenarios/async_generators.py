# Async generators: parked in the body of one iterated by "async for" under
# asyncio, in one driven by hand through asend().send(), in an async
# generator expression, and in an async comprehension.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt
import asyncio

fpgt.start("async_generators")


async def agen(n, label):
    for i in range(n):
        if i == n - 1:
            fpgt.park(label)
        yield i


async def consume():
    async for _ in agen(2, "async-for"):
        pass
    values = [v async for v in agen(2, "async-comprehension")]
    gen = (v async for v in agen(2, "async-genexpr"))
    async for _ in gen:
        pass
    return values


asyncio.run(consume())

manual = agen(1, "manual-asend")
step = manual.asend(None)
try:
    step.send(None)
except StopIteration:
    pass
step = manual.asend(None)
try:
    step.send(None)
except StopAsyncIteration:
    pass
fpgt.done()
