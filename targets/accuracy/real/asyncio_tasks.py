"""asyncio_tasks.py — a real workload of the accuracy verdict (ci/accuracy
real): 40 tasks in an asyncio.TaskGroup, then a gather, of short coroutines
that do a little CPU work between awaits — building records, formatting, hashing, summing — so
that the current stack changes every few tens of microseconds.  It does a
FIXED amount of work and exits (see gevent_pool.py for why).

usage: asyncio_tasks.py [SCALE | check]   (SCALE multiplies the work; default
1.0, about 6 s on CPython 3.11 on one core; check: exit 0)"""
import asyncio
import hashlib
import sys

TASKS = 40
STEPS_PER_TASK = 15000   # at SCALE 1.0


def build(i, n):
    return {"i": i, "n": n, "name": "item-%d-%d" % (i, n), "values": list(range(n % 50))}


def digest(record):
    return hashlib.sha1(repr(record).encode()).hexdigest()


def score(record):
    return sum(v * v for v in record["values"]) + len(record["name"])


async def fetch(i, n):
    await asyncio.sleep(0)
    return build(i, n)


async def handle(i, n):
    record = await fetch(i, n)
    h = digest(record)
    await asyncio.sleep(0)
    return score(record) + int(h[:4], 16)


async def task(i, steps):
    total = 0
    for n in range(steps):
        total += await handle(i, n)
    return total


async def main(steps):
    async with asyncio.TaskGroup() as tg:
        tasks = [tg.create_task(task(i, steps)) for i in range(TASKS)]
    gathered = await asyncio.gather(*(handle(i, 0) for i in range(TASKS)))
    return sum(t.result() for t in tasks) + sum(gathered)


if __name__ == "__main__" and sys.argv[1:] != ["check"]:
    scale = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    print(asyncio.run(main(max(1, int(STEPS_PER_TASK * scale)))))
