# Threads with unusual names: every PEP 393 width, very long, spaces and
# punctuation, and one renamed after it started.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt

fpgt.start("named_threads")
NAMES = [
    "plain",
    "caf\u00e9-latin1",
    "\u7ebf\u7a0b-\u03a9-bmp",
    "\U0001d531\U0001d525\U0001d52f-astral",
    "x" * 300,
    "with spaces (and) [punctuation]: \"quoted\"",
]


def worker(tag):
    fpgt.park("named", len(NAMES) + 2)


threads = [fpgt.thread(worker, n, name=n) for n in NAMES]
late = fpgt.thread(worker, "late", name="before-rename")
late.name = "after-rename"
fpgt.park("named", len(NAMES) + 2)
for t in threads + [late]:
    t.join()
fpgt.done()
