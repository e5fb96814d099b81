# Coroutines without an event loop, driven by send(): an await chain down to
# a custom awaitable whose __await__ is a generator, a types.coroutine
# generator, and a coroutine resumed by send() that parks after resuming.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt
import types

fpgt.start("coroutine_send")


class Awaitable:
    def __await__(self):
        fpgt.park("in-__await__")
        got = yield "suspend"
        return got


@types.coroutine
def legacy():
    got = yield "legacy-suspend"
    fpgt.park("types.coroutine")
    return got


async def leaf():
    got = await Awaitable()
    fpgt.park("leaf-resumed")
    got2 = await legacy()
    return got + got2


async def middle():
    return await leaf()


async def top():
    return await middle()


coro = top()
assert coro.send(None) == "suspend"
assert coro.send(1) == "legacy-suspend"
try:
    coro.send(2)
except StopIteration as stop:
    assert stop.value == 3
else:
    fpgt.fail("coroutine did not finish")
fpgt.done()
