"""gevent_pool.py — a real workload of the accuracy verdict (ci/accuracy
real): a gevent pool of 50 greenlets, each repeatedly parsing a JSON
document, tokenising its text with re.findall and sorting the tokens with
a lambda key, with a cooperative yield between steps.  It does a FIXED
amount of work and exits (not a fixed duration: a blocking reference slows
the target, and a time bound would then profile another part of the run).

usage: gevent_pool.py [SCALE | check]   (SCALE multiplies the work; default
1.0, about 6 s on CPython 3.11 on one core; check: exit 0 when gevent
imports here)"""
import json
import random
import re
import sys

try:
    import gevent
    import gevent.pool
except ImportError as e:
    sys.exit(f"gevent does not import on this interpreter (Debian's python3-gevent has no extension for it?): {e}")

GREENLETS = 50
ITEMS_PER_GREENLET = 192  # at SCALE 1.0
WORDS = 400
WORD = re.compile(r"[a-z]+|\d+")


def make_document(rng):
    words = ["".join(rng.choice("abcdefghij") for _ in range(rng.randint(2, 8))) for _ in range(WORDS)]
    return json.dumps({"id": rng.randint(0, 10**6), "text": " ".join(words),
                       "tags": [{"k": w, "v": rng.random()} for w in words[:40]]})


def parse(doc):
    return json.loads(doc)


def tokenise(text):
    return WORD.findall(text)


def rank(tokens):
    return sorted(tokens, key=lambda t: (len(t), t[::-1]))


def worker(seed, items):
    rng = random.Random(seed)
    docs = [make_document(rng) for _ in range(4)]
    total = 0
    for i in range(items):
        obj = parse(docs[i % len(docs)])
        gevent.sleep(0)
        tokens = tokenise(obj["text"] * 3)
        gevent.sleep(0)
        total += len(rank(tokens))
    return total


def main():
    if sys.argv[1:] == ["check"]:
        return   # gevent imported
    scale = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    items = max(1, int(ITEMS_PER_GREENLET * scale))
    pool = gevent.pool.Pool(GREENLETS)
    jobs = [pool.spawn(worker, seed, items) for seed in range(GREENLETS)]
    gevent.joinall(jobs, raise_error=True)
    print(sum(j.value for j in jobs))


if __name__ == "__main__":
    main()
