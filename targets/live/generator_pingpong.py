# Live: a consumer drives generators with a for loop and with explicit
# next() and send(), and coroutines with send(), alternating between an
# "a" producer and a "b" producer.  Generator frames live outside the data
# stack: a correct sample shows the consumer on the line that resumed them.
# Lines carry "@tag" comments that generator_pingpong.decl.json refers to.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt

WARMUP = 100                      # rounds before "ready"
ITEMS = 12                        # values per producer per round


def work_a(v):                    # @work_a
    s = 0                         # @work_a
    for i in range(v + 10):       # @work_a
        s += i                    # @work_a
    return s                      # @work_a


def work_b(v):                    # @work_b
    s = 7                         # @work_b
    for i in range(v + 10):       # @work_b
        s ^= i                    # @work_b
    return s                      # @work_b


def produce_a(n):                 # @produce_a
    for i in range(n):            # @produce_a
        got = yield work_a(i)     # @produce_a @produce_a-work
        if got:                   # @produce_a
            n += 0                # @produce_a


def produce_b(n):                 # @produce_b
    for i in range(n):            # @produce_b
        got = yield work_b(i)     # @produce_b @produce_b-work
        if got:                   # @produce_b
            n += 0                # @produce_b


class Tick:
    def __await__(self):          # @tick
        yield self                # @tick


async def coro_a(n):              # @coro_a
    total = 0                     # @coro_a
    for i in range(n):            # @coro_a
        total += work_a(i)        # @coro_a @coro_a-work
        await Tick()              # @coro_a @coro_a-await
    return total                  # @coro_a


async def coro_b(n):              # @coro_b
    total = 0                     # @coro_b
    for i in range(n):            # @coro_b
        total += work_b(i)        # @coro_b @coro_b-work
        await Tick()              # @coro_b @coro_b-await
    return total                  # @coro_b


def drive(coro):                  # @drive
    try:                          # @drive
        while True:               # @drive
            coro.send(None)       # @drive @drive-send
    except StopIteration as e:    # @drive
        return e.value            # @drive


def consumer(ready, stop):        # @consumer
    rounds = 0                    # @consumer
    while not stop:               # @consumer
        total = 0                 # @consumer
        for v in produce_a(ITEMS):  # @consumer @consumer-for-a
            total += v            # @consumer
        g = produce_b(ITEMS)      # @consumer @consumer-make-b
        try:                      # @consumer
            while True:           # @consumer
                total += next(g)  # @consumer @consumer-next-b
        except StopIteration:     # @consumer
            pass                  # @consumer
        g = produce_a(ITEMS)      # @consumer @consumer-make-a
        total += next(g)          # @consumer @consumer-next-a
        try:                      # @consumer
            while True:           # @consumer
                total += g.send(rounds)  # @consumer @consumer-send-a
        except StopIteration:     # @consumer
            pass                  # @consumer
        total += drive(coro_a(ITEMS))  # @consumer @consumer-drive-a
        total += drive(coro_b(ITEMS))  # @consumer @consumer-drive-b
        rounds += 1               # @consumer
        if rounds == WARMUP:      # @consumer
            ready.append(rounds)  # @consumer
    return rounds                 # @consumer


ready, stop = fpgt.live("generator_pingpong")
consumer(ready, stop)             # @module-consumer
fpgt.done()
