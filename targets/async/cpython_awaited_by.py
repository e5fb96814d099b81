# cpython_awaited_by.py — CPython's own view of a process's asyncio task
# graph, for ci/async-field: _remote_debugging.RemoteUnwinder(PID)
# .get_all_awaited_by(), run by the target's own interpreter (3.14+; with
# the same ptrace rights as the target's tracer), printed as one JSON
# document in the node shape of `frameproof dump --async --json`:
#   {"pid": P, "python": {"version"}, "foreign_coroutines": N,
#    "tasks": [{"addr", "task": true, "name", "thread", "stack":
#      [{"function", "file", "line"}, ...] innermost first,
#      "awaited_by": [addr, ...]}, ...]}
# What get_all_awaited_by() returns (3.14 and 3.15 alike, but for frames):
# a list of AwaitedInfo(thread_id, awaited_by=[TaskInfo(task_id, task_name,
# coroutine_stack, awaited_by)]), one per thread state whose task list was
# read (its native id) and one with thread_id 0 for the interpreter's list
# (tasks whose thread exited).  Here:
# - addr is task_id (the task's address, id() in the target); thread is the
#   AwaitedInfo's thread_id, null for 0 (as the dump's is for a task on its
#   interpreter's list);
# - stack: coroutine_stack is a list of CoroInfo(call_stack, task_name),
#   where task_name is the address of the task whose coroutines call_stack
#   holds; the task's own ones (task_name == task_id, in practice the only
#   one) give its stack, their call_stacks innermost first already (each
#   FrameInfo(filename, lineno, funcname) on 3.14, FrameInfo(filename,
#   location, funcname, ...) on 3.15 with location a LocationInfo(lineno,
#   end_lineno, ...) or None: gh-143952); any other CoroInfo is counted in
#   foreign_coroutines, not shown;
# - awaited_by: each CoroInfo of the task's awaited_by names its awaiter by
#   address in task_name (a task, or a future that is not one, whose
#   call_stack is then empty).
# Exit status 0 with the document; 3 with {"pid", "error"} when
# RemoteUnwinder or get_all_awaited_by() raised (the view failed);
# 2 when _remote_debugging cannot be imported (nothing was measured).
# With COUNT (ci/async-live), get_all_awaited_by() is called COUNT times on
# one RemoteUnwinder, back to back, one line each (a document, or
# {"pid", "error"} for a call that raised, and the calls go on); exit 0.
# With --running, get_async_stack_trace() instead: the task each thread is
# running, then the tasks that await it, and what awaits those, in the same
# AwaitedInfo/TaskInfo shape (3.14, 3.15), and so the same document, but for
# "running": true on each thread's first task (CPython puts the running task
# first, its stack the thread's frames down to its coroutine); a document
# with no task when no thread runs one.
# usage: cpython_awaited_by.py [--running] PID [COUNT]
import json
import platform
import sys


def line_of(frame):
    """The frame's line: 3.15's location.lineno, 3.14's lineno."""
    if hasattr(frame, "location"):
        loc = frame.location
        return None if loc is None else loc.lineno
    return frame.lineno


def frame_of(frame):
    return {"function": frame.funcname, "file": frame.filename, "line": line_of(frame)}


def innermost_cause(e):
    while e.__cause__ is not None or e.__context__ is not None:
        e = e.__cause__ or e.__context__
    return e


def error_doc(pid, e):
    cause = innermost_cause(e)
    msg = "%s: %s" % (type(e).__name__, e)
    if cause is not e:
        msg += " (from %s: %s)" % (type(cause).__name__, cause)
    return {"pid": pid, "error": msg}


def document(pid, result, running=False):
    tasks, foreign = [], 0
    for info in result:
        thread = info.thread_id or None
        for k, task in enumerate(info.awaited_by):
            stack = []
            for coro in task.coroutine_stack:
                if coro.task_name == task.task_id:
                    stack += [frame_of(f) for f in coro.call_stack]
                else:
                    foreign += 1
            tasks.append({"addr": task.task_id, "task": True, "name": task.task_name, "thread": thread,
                          "stack": stack, "awaited_by": [c.task_name for c in task.awaited_by]})
            if running and k == 0:
                tasks[-1]["running"] = True
    return {"pid": pid, "python": {"version": platform.python_version()}, "foreign_coroutines": foreign,
            "tasks": tasks}


def main():
    args = sys.argv[1:]
    running = args[:1] == ["--running"]
    args = args[1:] if running else args
    if len(args) not in (1, 2):
        sys.exit("usage: cpython_awaited_by.py [--running] PID [COUNT]")
    pid = int(args[0])
    count = int(args[1]) if len(args) == 2 else None
    try:
        from _remote_debugging import RemoteUnwinder
    except ImportError as e:
        print("cpython_awaited_by.py: no _remote_debugging in this interpreter: %s" % e, file=sys.stderr)
        return 2
    try:
        unwinder = RemoteUnwinder(pid)
        read = unwinder.get_async_stack_trace if running else unwinder.get_all_awaited_by
        if count is None:
            print(json.dumps(document(pid, read(), running)))
            return 0
    except Exception as e:  # the view's failure, reported as data
        print(json.dumps(error_doc(pid, e)))
        return 3
    for _ in range(count):
        try:
            doc = document(pid, read(), running)
        except Exception as e:  # one call's failure, counted by the caller
            doc = error_doc(pid, e)
        print(json.dumps(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
