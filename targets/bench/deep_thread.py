# deep_thread.py — a parked target with one thread deeper than the rest:
# the main thread DEPTH calls deep in rec(), another thread one call deep in
# other(), both sleeping for good.  For the checks that a thread deeper than
# --max-depth fails alone (dump, record).  Prints "ready" on stdout once both
# are parked.
# usage: deep_thread.py DEPTH
import sys
import threading
import time

PARK_SECONDS = 3600
STARTED = threading.Event()


def other():
    STARTED.set()
    time.sleep(PARK_SECONDS)


def rec(n):
    if n == 0:
        print("ready", flush=True)
        time.sleep(PARK_SECONDS)
    rec(n - 1)


def main():
    if len(sys.argv) != 2 or not sys.argv[1].isdigit():
        sys.exit("usage: deep_thread.py DEPTH")
    threading.Thread(target=other, daemon=True).start()
    STARTED.wait()
    rec(int(sys.argv[1]))


if __name__ == "__main__":
    main()
