# Parked inside an atexit callback during interpreter finalisation (after the
# main module finished; the callback is called from C with no Python frame
# below it), then done() from there.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt
import atexit

fpgt.start("atexit_park")


def at_exit():
    fpgt.park("atexit")
    fpgt.done()


atexit.register(at_exit)
fpgt.park("main-module-end")
