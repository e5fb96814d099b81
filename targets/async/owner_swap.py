# owner_swap.py — one task whose awaiter keeps changing, for `frameproof
# record --async` (tests/async/test_record_async.py).  CPython 3.14+.
# Two owner tasks ("owner-a", "owner-b") wait in owner(); the task "shared"
# is linked to one of them as its awaiter (asyncio.future_add_to_awaited_by)
# and, while it is, spins in spin_a() for owner-a or spin_b() for owner-b
# between yields, then moves itself to the other owner.  The move and the
# change of spin function happen in one step of the task, so at any instant
# a stack of shared inside spin_a is awaited by owner-a and one inside
# spin_b by owner-b: a profile that joins a stack through an awaiter edge of
# another instant shows spin_a under owner-b.  The main task ("main") sleeps.
# Prints "ready" once shared has moved once, and runs until killed.
import asyncio
import sys
import time

SPIN_S = 0.001        # one spin
SPINS_PER_OWNER = 2   # spins before shared moves to the other owner
JOIN = {"spin_a": "owner-a", "spin_b": "owner-b"}  # the truth the test checks


def spin_a():
    end = time.perf_counter() + SPIN_S
    while time.perf_counter() < end:
        pass


def spin_b():
    end = time.perf_counter() + SPIN_S
    while time.perf_counter() < end:
        pass


async def owner():
    await asyncio.sleep(3600)


async def shared_loop(owners, ready):
    me = asyncio.current_task()
    side = "a"
    asyncio.future_add_to_awaited_by(me, owners[side])
    while True:
        for _ in range(SPINS_PER_OWNER):
            (spin_a if side == "a" else spin_b)()
            await asyncio.sleep(0)
        asyncio.future_discard_from_awaited_by(me, owners[side])
        side = "b" if side == "a" else "a"
        asyncio.future_add_to_awaited_by(me, owners[side])
        if not ready.is_set():
            ready.set()


async def main():
    owners = {"a": asyncio.create_task(owner(), name="owner-a"),
              "b": asyncio.create_task(owner(), name="owner-b")}
    ready = asyncio.Event()
    asyncio.create_task(shared_loop(owners, ready), name="shared")
    await ready.wait()
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    await asyncio.sleep(3600)


asyncio.run(main())
