# A Python signal handler runs on top of the frame that raised the signal
# (signal.raise_signal runs pending handlers before returning); parked in the
# handler, and in a handler of a second signal raised from inside the first.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt
import signal

fpgt.start("signal_handler")


def on_usr2(signum, frame):
    fpgt.park("nested-handler")


def on_usr1(signum, frame):
    fpgt.park("handler")
    signal.raise_signal(signal.SIGUSR2)


signal.signal(signal.SIGUSR1, on_usr1)
signal.signal(signal.SIGUSR2, on_usr2)


def trigger():
    signal.raise_signal(signal.SIGUSR1)


trigger()
signal.signal(signal.SIGUSR1, signal.SIG_DFL)
signal.signal(signal.SIGUSR2, signal.SIG_DFL)
fpgt.done()
