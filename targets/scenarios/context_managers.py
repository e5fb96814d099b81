# Context managers: __enter__ and __exit__ methods, the generator of a
# contextlib.contextmanager (entered from C-level code in contextlib), the
# with-body, ExitStack callbacks, and an async context manager.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt
import asyncio
import contextlib

fpgt.start("context_managers")


class Manager:
    def __enter__(self):
        fpgt.park("__enter__")
        return self

    def __exit__(self, *exc):
        fpgt.park("__exit__")
        return False


@contextlib.contextmanager
def generated():
    fpgt.park("contextmanager-enter")
    yield
    fpgt.park("contextmanager-exit")


class AsyncManager:
    async def __aenter__(self):
        fpgt.park("__aenter__")

    async def __aexit__(self, *exc):
        fpgt.park("__aexit__")


async def use_async():
    async with AsyncManager():
        pass


with Manager():
    fpgt.park("with-body")
with generated():
    pass
with contextlib.ExitStack() as stack:
    stack.callback(fpgt.park, "exitstack-callback")
asyncio.run(use_async())
fpgt.done()
