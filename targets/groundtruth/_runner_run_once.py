"""Running one scenario under one interpreter (part of run_scenario.py).

run_once() starts the target with the two channel pipes (FP_GT_WFD and
FP_GT_RFD), reads its messages, checks each checkpoint's structure, runs the
--at-checkpoint command if any, answers ``continue`` and waits for ``done``
and a clean exit, within the scenario's timeout.

Contract: a run that goes wrong (timeout, protocol or target error, bad
exit) raises nothing: run_once() returns its result with "error" set.  The
target's process group is killed in any case; its stdout and stderr are in
the result.
"""

import json
import os
import select
import shlex
import signal
import subprocess
import sys
import tempfile
import time

from _runner_results import format_checkpoint
from _runner_scenarios import scenario_meta


class RunError(Exception):
    pass


def check_checkpoint(msg, hello):
    """Structural checks of one checkpoint message; returns problems."""
    problems = []
    park = hello.get("park", {})
    ids = {t["thread_id"] for t in msg.get("all_threads", [])}
    if not msg.get("threads"):
        problems.append("no threads")
    for t in msg.get("threads", []):
        for key in ("native_id", "thread_id", "main", "exception", "frames"):
            if key not in t:
                problems.append("thread lacks %r" % key)
        if t.get("thread_id") not in ids:
            problems.append("thread %s not in all_threads" % t.get("thread_id"))
        frames = t.get("frames") or []
        if not frames:
            problems.append("thread %s has no frames" % t.get("thread_id"))
            continue
        top = frames[0]
        if top.get("function") != park.get("function") or top.get(
                "lasti") != park.get("lasti"):
            problems.append("innermost frame is not the park call: %r" % (top,))
        for fr in frames:
            for key in ("function", "name", "file", "line", "end_line",
                        "column", "end_column", "kind", "lasti"):
                if key not in fr:
                    problems.append("frame lacks %r" % key)
            if fr.get("kind") not in ("python", "generator"):
                problems.append("bad kind %r" % fr.get("kind"))
    return problems


def run_once(interp, scenario_path, *, timeout=None, at_checkpoint=None,
             quiet=False, raw=False, out=sys.stdout):
    """Run a scenario; returns {"hello", "checkpoints", "returncode", ...}."""
    meta = scenario_meta(scenario_path)
    limit = timeout if timeout is not None else meta["timeout"]
    script = interp.script_path(scenario_path)
    to_target_r, to_target_w = os.pipe()
    from_target_r, from_target_w = os.pipe()
    env = interp.environ(os.environ)
    env["FP_GT_WFD"] = str(from_target_w)
    env["FP_GT_RFD"] = str(to_target_r)
    env.pop("FP_GT_AUTO_CONTINUE", None)
    env.pop("PYTHONPATH", None)
    stdout_f = tempfile.TemporaryFile()
    stderr_f = tempfile.TemporaryFile()
    started = time.monotonic()
    deadline = started + limit
    proc = subprocess.Popen(interp.command([script]),
                            pass_fds=(to_target_r, from_target_w), env=env,
                            stdin=subprocess.DEVNULL, stdout=stdout_f,
                            stderr=stderr_f, start_new_session=True)
    os.close(to_target_r)
    os.close(from_target_w)
    result = {"scenario": os.path.splitext(os.path.basename(scenario_path))[0],
              "interpreter": interp.id, "hello": None, "checkpoints": [],
              "returncode": None, "error": None, "stderr": ""}
    buf = b""
    finished = False
    try:
        while True:
            nl = buf.find(b"\n")
            if nl < 0:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise RunError("timeout after %.0f s" % limit)
                r, _, _ = select.select([from_target_r], [], [], remaining)
                if not r:
                    continue
                chunk = os.read(from_target_r, 1 << 20)
                if not chunk:
                    if not finished:
                        try:
                            status = proc.wait(2)
                        except subprocess.TimeoutExpired:
                            status = None
                        raise RunError("target closed the channel without"
                                       " 'done' (%s)" % describe_status(status))
                    break
                buf += chunk
                continue
            line, buf = buf[:nl], buf[nl + 1:]
            try:
                msg = json.loads(line.decode("utf-8"))
            except ValueError:
                raise RunError("bad JSON line from target: %r" % line[:200])
            event = msg.get("event")
            if finished:
                raise RunError("message after 'done': %r" % (event,))
            if event == "hello":
                if result["hello"] is not None:
                    raise RunError("second hello")
                result["hello"] = msg
                if msg.get("pid") != proc.pid:
                    raise RunError("hello pid %r != %r" % (msg.get("pid"),
                                                           proc.pid))
                if not quiet:
                    print("[%s] hello: python %s%s%s, park lasti %s (%s)" % (
                        result["scenario"], msg["python"]["version"],
                        " free-threaded" if msg["python"]["free_threaded"]
                        else "", " debug" if msg["python"]["debug"] else "",
                        msg["park"]["lasti"], msg["park"]["calibration"]),
                        file=out)
            elif event == "checkpoint":
                if result["hello"] is None:
                    raise RunError("checkpoint before hello")
                problems = check_checkpoint(msg, result["hello"])
                if problems:
                    raise RunError("checkpoint %r: %s" % (
                        msg.get("name"), "; ".join(problems[:5])))
                result["checkpoints"].append(msg)
                if not quiet:
                    print(format_checkpoint(result["scenario"], msg, raw),
                          file=out)
                if at_checkpoint:
                    run_hook(at_checkpoint, proc.pid, msg, out, quiet)
                os.write(to_target_w, b"continue\n")
            elif event == "done":
                finished = True
            elif event == "error":
                raise RunError("target error: %s" % msg.get("message"))
            else:
                raise RunError("unknown event %r" % (event,))
        remaining = max(0.1, deadline - time.monotonic())
        try:
            result["returncode"] = proc.wait(remaining)
        except subprocess.TimeoutExpired:
            raise RunError("target did not exit after 'done'")
        if result["returncode"] != 0:
            raise RunError("exit status %d after 'done'" % result["returncode"])
    except RunError as e:
        result["error"] = str(e)
    finally:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
        proc.wait()
        if result["returncode"] is None:
            result["returncode"] = proc.returncode
        os.close(to_target_w)
        os.close(from_target_r)
        stderr_f.seek(0)
        result["stderr"] = stderr_f.read().decode("utf-8", "replace")
        stdout_f.seek(0)
        result["stdout"] = stdout_f.read().decode("utf-8", "replace")
        stderr_f.close()
        stdout_f.close()
    result["seconds"] = round(time.monotonic() - started, 3)
    return result


def describe_status(status):
    if status is None:
        return "still running"
    if status < 0:
        try:
            return "killed by %s" % signal.Signals(-status).name
        except ValueError:
            return "killed by signal %d" % -status
    return "exit status %d" % status


def run_hook(template, pid, msg, out, quiet):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False,
                                     encoding="utf-8") as f:
        json.dump(msg, f, ensure_ascii=False)
        path = f.name
    try:
        cmd = [part.format(pid=pid, name=msg["name"], seq=msg.get("seq", ""),
                           json=path) for part in shlex.split(template)]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT)
        if not quiet or proc.returncode:
            print(proc.stdout.decode("utf-8", "replace"), end="", file=out)
        if proc.returncode:
            raise RunError("--at-checkpoint command exited %d"
                           % proc.returncode)
    finally:
        os.unlink(path)
