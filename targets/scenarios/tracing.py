# Tracing and profiling hooks: parked in a function traced by sys.settrace,
# inside the trace function itself (called from C for a "call" event),
# inside a sys.setprofile function on a "c_call" event, and (3.12+) inside a
# sys.monitoring PY_START callback.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt

fpgt.start("tracing")


def traced_target():
    fpgt.park("under-settrace")


def probe():
    return 1


def tracer(frame, event, arg):
    if event == "call" and frame.f_code is probe.__code__:
        fpgt.park("in-trace-function")
    return None


def profiled():
    return abs(-1)


def profiler(frame, event, arg):
    if event == "c_call" and arg is abs:
        fpgt.park("in-profile-function")


sys.settrace(tracer)
traced_target()
probe()
sys.settrace(None)

sys.setprofile(profiler)
profiled()
sys.setprofile(None)

monitoring = getattr(sys, "monitoring", None)
if monitoring is not None:
    def monitored():
        return 2

    def on_start(code, offset):
        if code is monitored.__code__:
            fpgt.park("in-monitoring-callback")

    TOOL = 4
    monitoring.use_tool_id(TOOL, "fpgt-tracing")
    monitoring.register_callback(TOOL, monitoring.events.PY_START, on_start)
    monitoring.set_local_events(TOOL, monitored.__code__,
                                monitoring.events.PY_START)

    def call_monitored():
        monitored()

    call_monitored()
    monitoring.set_local_events(TOOL, monitored.__code__, 0)
    monitoring.register_callback(TOOL, monitoring.events.PY_START, None)
    monitoring.free_tool_id(TOOL)
fpgt.done()
