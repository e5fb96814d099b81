# Live: a consumer pulls values from short-lived generators as fast as it
# can: a for loop whose body calls a plain function with each value, and
# next() on a fresh generator drained by another for loop.  It alternates
# between resuming a generator (its frame linked directly above the
# consumer's) and calling the function (its frame in the consumer's slot
# above), so a read that mixes two instants can show the generator above
# the consumer's call of the function.  Lines carry "@tag" comments that
# generator_consumer.decl.json refers to.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt

WARMUP = 200                      # rounds before "ready"
ITEMS = 20                        # values per generator


def gen(n):                       # @gen
    for i in range(n):            # @gen
        yield i                   # @gen


def chelp(v):                     # @chelp
    return v + 1                  # @chelp


def consumer():                   # @consumer
    total = 0                     # @consumer
    for v in gen(ITEMS):          # @consumer @consumer-for
        total += chelp(v)         # @consumer @consumer-call
    it = gen(ITEMS)               # @consumer @consumer-make
    total += next(it)             # @consumer @consumer-next
    for v in it:                  # @consumer @consumer-drain
        total += v                # @consumer
    return total                  # @consumer


def driver(ready, stop):          # @driver
    rounds = 0                    # @driver
    while not stop:               # @driver
        consumer()                # @driver @driver-consumer
        rounds += 1               # @driver
        if rounds == WARMUP:      # @driver
            ready.append(rounds)  # @driver
    return rounds                 # @driver


ready, stop = fpgt.live("generator_consumer")
driver(ready, stop)               # @module-driver
fpgt.done()
