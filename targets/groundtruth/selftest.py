#!/usr/bin/env python3
"""Self-test of the fpgt ground-truth module, run by the interpreter under test.

    python3.X targets/groundtruth/selftest.py [-v] [--all]

Checks the protocol end to end with run_scenario.py's driver, using this same
interpreter for the targets: hello and checkpoint contents, exact frames of
known code (names, lines, columns, kinds, exception flag), determinism, the
error paths (uncaught exceptions, protocol errors, exiting without done(),
done() with parked threads), EOF handling, the stdout/stdin fallback, and the
consistency of scenarios/index.json with the scenario files.  It also runs
every "fast" scenario that applies to this interpreter (--all: every one).

Ends with a line "N passed, N failed, N skipped"; exit status 1 on failure.
"""

import json
import os
import re
import select
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import run_scenario  # noqa: E402

SCENARIOS = run_scenario.SCENARIOS
INTERP = run_scenario.Interpreter(sys.executable, [sys.executable])
RUN_ALL = False

PRELUDE = ("import sys, os; sys.path.insert(0, %r)\nimport fpgt\n" % HERE)


def write_scenario(tmpdir, name, body):
    """An unlisted scenario: any interpreter, run_scenario's default timeout."""
    path = os.path.join(tmpdir, name + ".py")
    with open(path, "w", encoding="utf-8") as f:
        f.write("%s%s" % (PRELUDE, body))
    return path


def run(path, **kw):
    return run_scenario.run_once(INTERP, path, quiet=True, **kw)


def line_of(path, needle):
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            if needle in line:
                return no, line.index(needle)
    raise AssertionError("%r not in %s" % (needle, path))


class Launch:
    """Start a target by hand to exercise protocol corner cases."""

    def __init__(self, path, env_extra=None):
        self.to_r, self.to_w = os.pipe()
        self.from_r, self.from_w = os.pipe()
        env = dict(os.environ)
        env["FP_GT_WFD"] = str(self.from_w)
        env["FP_GT_RFD"] = str(self.to_r)
        env.pop("FP_GT_AUTO_CONTINUE", None)
        env.update(env_extra or {})
        self.proc = subprocess.Popen(
            [sys.executable, path], pass_fds=(self.to_r, self.from_w),
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE)
        os.close(self.to_r)
        os.close(self.from_w)
        self.buf = b""

    def message(self, timeout=20):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("no message from target")
            r, _, _ = select.select([self.from_r], [], [], left)
            if r:
                chunk = os.read(self.from_r, 1 << 20)
                if not chunk:
                    return None
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def send(self, data):
        os.write(self.to_w, data)

    def close_write(self):
        if self.to_w is not None:
            os.close(self.to_w)
            self.to_w = None

    def finish(self, timeout=20):
        try:
            return self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.close_write()
            os.close(self.from_r)
            self.proc.stderr.close()


class Base(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="fpgt-selftest-")
        self.tmp = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def assertRunOk(self, result):
        if result["error"]:
            self.fail("%s: %s\n%s" % (result["scenario"], result["error"],
                                      result["stderr"][-3000:]))


class TestModule(Base):
    def test_park_offset_from_dis(self):
        import fpgt
        lasti = fpgt._dis_park_lasti()
        self.assertIsInstance(lasti, int)
        positions = list(fpgt.park.__code__.co_positions())
        line = positions[lasti // 2][0]
        src = fpgt.park.__code__.co_filename
        with open(src, encoding="utf-8") as f:
            text = f.read().splitlines()[line - 1]
        self.assertEqual(text.strip(), "lock.acquire()")

    def test_generator_flags_match_inspect(self):
        import inspect
        import fpgt
        self.assertEqual(fpgt._CO_GENERATOR, inspect.CO_GENERATOR)
        self.assertEqual(fpgt._CO_COROUTINE, inspect.CO_COROUTINE)
        self.assertEqual(fpgt._CO_ASYNC_GENERATOR, inspect.CO_ASYNC_GENERATOR)

    def test_generated_files_deterministic(self):
        import fpgt
        a = fpgt.generated_files({"x/\u00e9.py": "pass\n", "y.py": "1\n"})
        b = fpgt.generated_files({"y.py": "1\n", "x/\u00e9.py": "pass\n"})
        self.assertEqual(a, b)
        with open(os.path.join(a, "x", "\u00e9.py"), encoding="utf-8") as f:
            self.assertEqual(f.read(), "pass\n")


class TestProtocol(Base):
    def test_hello_and_exact_frames(self):
        path = write_scenario(self.tmp, "exact", (
            "fpgt.start('exact')\n"
            "def leaf():\n"
            "    fpgt.park('leaf')  # @leaf\n"
            "def gen():\n"
            "    try:\n"
            "        raise KeyError(1)\n"
            "    except KeyError:\n"
            "        fpgt.park('gen')  # @gen\n"
            "    yield 1\n"
            "def middle():\n"
            "    leaf()  # @middle\n"
            "    list(gen())  # @list\n"
            "middle()  # @module\n"
            "fpgt.done()\n"))
        res = run(path)
        self.assertRunOk(res)
        hello = res["hello"]
        self.assertEqual(hello["scenario"], "exact")
        py = hello["python"]
        self.assertEqual(py["hexversion"], sys.hexversion)
        self.assertEqual(py["debug"], hasattr(sys, "gettotalrefcount"))
        if hasattr(sys, "_is_gil_enabled"):
            self.assertEqual(py["gil_enabled"], sys._is_gil_enabled())
        self.assertEqual(hello["park"]["calibration"], "dis")
        self.assertEqual(len(res["checkpoints"]), 2)

        leaf, gen = res["checkpoints"]
        self.assertEqual(leaf["name"], "leaf")
        self.assertEqual(leaf["seq"], 0)
        (t,) = leaf["threads"]
        self.assertTrue(t["main"])
        self.assertFalse(t["exception"])
        names = [f["function"] for f in t["frames"]]
        self.assertEqual(names, ["park", "leaf", "middle", "<module>"])
        for fr, marker in zip(t["frames"][1:], ("# @leaf", "# @middle",
                                                "# @module")):
            line, _ = line_of(path, marker)
            self.assertEqual(fr["file"], path)
            self.assertEqual((fr["line"], fr["end_line"]), (line, line))
            self.assertEqual(fr["kind"], "python")
        col = line_of(path, "fpgt.park('leaf')")[1]
        self.assertEqual(t["frames"][1]["column"], col)
        self.assertEqual(t["frames"][1]["end_column"],
                         col + len("fpgt.park('leaf')"))
        self.assertIn(t["thread_id"],
                      [a["thread_id"] for a in leaf["all_threads"]])
        self.assertIn("fpgt-channel",
                      [a["name"] for a in leaf["all_threads"]])

        (t,) = gen["threads"]
        self.assertTrue(t["exception"])
        names = [f["function"] for f in t["frames"]]
        self.assertEqual(names, ["park", "gen", "middle", "<module>"])
        self.assertEqual(t["frames"][1]["kind"], "generator")
        self.assertEqual(t["frames"][1]["line"], line_of(path, "# @gen")[0])
        self.assertEqual(t["frames"][2]["line"], line_of(path, "# @list")[0])

    def test_threads_and_parties(self):
        path = write_scenario(self.tmp, "threads", (
            "fpgt.start('threads')\n"
            "fpgt.expect('both', 3)\n"
            "def w(n):\n"
            "    if n:\n"
            "        return w(n - 1)\n"
            "    fpgt.park('both')\n"
            "ts = [fpgt.thread(w, i, name='w%d' % i) for i in (4, 1)]\n"
            "fpgt.park('both')\n"
            "for t in ts:\n"
            "    t.join()\n"
            "fpgt.done()\n"))
        res = run(path)
        self.assertRunOk(res)
        (cp,) = res["checkpoints"]
        self.assertEqual([t["name"] for t in cp["threads"]],
                         ["MainThread", "w1", "w4"])
        self.assertEqual([len(t["frames"]) for t in cp["threads"][1:]],
                         [2 + 1 + 3, 5 + 1 + 3])
        self.assertEqual(len({t["native_id"] for t in cp["threads"]}), 3)

    def test_deterministic(self):
        path = os.path.join(SCENARIOS, "plain_calls.py")
        a, b = run(path), run(path)
        self.assertRunOk(a)
        self.assertRunOk(b)
        self.assertIsNone(run_scenario.first_difference(
            run_scenario.normalized(a), run_scenario.normalized(b)))

    def test_uncaught_exception_reports_error(self):
        path = write_scenario(self.tmp, "boom", (
            "fpgt.start('boom')\n"
            "raise ValueError('boom-message')\n"))
        res = run(path)
        self.assertIn("boom-message", res["error"] or "")
        self.assertNotEqual(res["returncode"], 0)

    def test_thread_exception_while_main_parked(self):
        path = write_scenario(self.tmp, "thread_boom", (
            "fpgt.start('thread_boom')\n"
            "def bad():\n"
            "    raise KeyError('thread-boom')\n"
            "fpgt.thread(bad)\n"
            "fpgt.park('never', 2)\n"))
        res = run(path, timeout=15)
        self.assertIn("thread-boom", res["error"] or "")
        self.assertNotEqual(res["returncode"], 0)

    def test_exit_without_done(self):
        path = write_scenario(self.tmp, "nodone", "fpgt.start('nodone')\n")
        res = run(path)
        self.assertIn("without fpgt.done()", res["error"] or "")
        self.assertNotEqual(res["returncode"], 0)

    def test_done_with_parked_threads(self):
        path = write_scenario(self.tmp, "stuck", (
            "fpgt.start('stuck')\n"
            "fpgt.thread(fpgt.park, 'half', 2, daemon=True)\n"
            "import time\n"
            "while not fpgt.pending():\n"
            "    time.sleep(0.001)\n"
            "fpgt.done()\n"))
        res = run(path)
        self.assertIn("still parked", res["error"] or "")

    def test_eof_exits_at_once(self):
        path = write_scenario(self.tmp, "eof", (
            "fpgt.start('eof')\n"
            "fpgt.park('first')\n"
            "import time\n"
            "time.sleep(30)\n"
            "fpgt.done()\n"))
        t = Launch(path)
        self.assertEqual(t.message()["event"], "hello")
        self.assertEqual(t.message()["event"], "checkpoint")
        t.close_write()
        started = time.monotonic()
        self.assertEqual(t.finish(timeout=10), 3)
        self.assertLess(time.monotonic() - started, 5)

    def test_eof_between_checkpoints(self):
        path = write_scenario(self.tmp, "eof2", (
            "fpgt.start('eof2')\n"
            "import time\n"
            "time.sleep(30)\n"
            "fpgt.done()\n"))
        t = Launch(path)
        self.assertEqual(t.message()["event"], "hello")
        t.close_write()
        self.assertEqual(t.finish(timeout=10), 3)

    def test_garbage_from_harness(self):
        path = write_scenario(self.tmp, "garbage", (
            "fpgt.start('garbage')\n"
            "fpgt.park('first')\n"
            "fpgt.done()\n"))
        t = Launch(path)
        self.assertEqual(t.message()["event"], "hello")
        self.assertEqual(t.message()["event"], "checkpoint")
        t.send(b"\nbogus\n")
        msg = t.message()
        self.assertEqual(msg["event"], "error")
        self.assertIn("bogus", msg["message"])
        self.assertNotEqual(t.finish(), 0)

    def test_target_waits_for_continue(self):
        path = write_scenario(self.tmp, "waits", (
            "fpgt.start('waits')\n"
            "fpgt.park('first')\n"
            "fpgt.done()\n"))
        t = Launch(path)
        self.assertEqual(t.message()["event"], "hello")
        self.assertEqual(t.message()["event"], "checkpoint")
        r, _, _ = select.select([t.from_r], [], [], 0.5)
        self.assertEqual(r, [], "target moved on before 'continue'")
        self.assertIsNone(t.proc.poll())
        t.send(b"continue\n")
        self.assertEqual(t.message()["event"], "done")
        self.assertEqual(t.finish(), 0)

    def test_stdio_fallback_auto_continue(self):
        path = write_scenario(self.tmp, "stdio", (
            "fpgt.start('stdio')\n"
            "fpgt.park('a')\n"
            "fpgt.park('b')\n"
            "fpgt.done()\n"))
        env = dict(os.environ)
        for k in ("FP_GT_WFD", "FP_GT_RFD"):
            env.pop(k, None)
        env["FP_GT_AUTO_CONTINUE"] = "1"
        out = subprocess.run([sys.executable, path], env=env,
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             timeout=30, check=True).stdout
        events = [json.loads(l) for l in out.decode("utf-8").splitlines()]
        self.assertEqual([e["event"] for e in events],
                         ["hello", "checkpoint", "checkpoint", "done"])

    def test_stdio_fallback_typed_continue(self):
        path = write_scenario(self.tmp, "stdin", (
            "fpgt.start('stdin')\n"
            "fpgt.park('a')\n"
            "fpgt.done()\n"))
        env = dict(os.environ)
        for k in ("FP_GT_WFD", "FP_GT_RFD", "FP_GT_AUTO_CONTINUE"):
            env.pop(k, None)
        out = subprocess.run([sys.executable, path], env=env,
                             input=b"continue\n", stdout=subprocess.PIPE,
                             timeout=30, check=True).stdout
        events = [json.loads(l) for l in out.decode("utf-8").splitlines()]
        self.assertEqual([e["event"] for e in events],
                         ["hello", "checkpoint", "done"])


class TestScenarios(Base):
    def test_index_matches_files(self):
        index = run_scenario.load_index()
        names = [e["name"] for e in index]
        self.assertEqual(len(names), len(set(names)))
        files = sorted(f for f in os.listdir(SCENARIOS) if f.endswith(".py"))
        self.assertEqual(sorted(e["file"] for e in index), files)
        self.assertGreaterEqual(len(index), 30)
        self.assertGreaterEqual(sum(1 for e in index if e["fast"]), 6)
        first = ("import sys, os; sys.path.insert(0, os.path.join(os.path."
                 "dirname(os.path.abspath(__file__)), '..', 'groundtruth'))")
        for e in index:
            path = os.path.join(SCENARIOS, e["file"])
            meta = run_scenario.scenario_meta(path)
            self.assertEqual(meta["name"], e["name"])
            self.assertGreater(meta["timeout"], 0, e["name"])
            run_scenario.version_tuple(e["min_version"])
            self.assertIn(e["builds"], ("any", "gil", "ft"))
            with open(path, encoding="utf-8") as f:
                text = f.read()
            self.assertNotIn("# fp-scenario:", text, e["name"])
            self.assertIn("\n" + first + "\nimport fpgt\n", text, e["name"])
            self.assertIn("fpgt.start(%r)" % e["name"],
                          text.replace('"', "'"), e["name"])


def _make_scenario_test(entry):
    def test(self):
        info = INTERP.probe()
        meta = run_scenario.scenario_meta(os.path.join(SCENARIOS,
                                                      entry["file"]))
        why = run_scenario.applies(meta, info)
        if why:
            self.skipTest(why)
        res = run(os.path.join(SCENARIOS, entry["file"]))
        self.assertRunOk(res)
        self.assertGreater(len(res["checkpoints"]), 0)
    return test


for _entry in run_scenario.load_index():
    setattr(TestScenarios, "test_scenario_" + _entry["name"],
            _make_scenario_test(_entry))


def load_tests(loader, standard_tests, pattern):
    suite = unittest.TestSuite()
    for case in (TestModule, TestProtocol, TestScenarios):
        for name in loader.getTestCaseNames(case):
            if name.startswith("test_scenario_") and not RUN_ALL:
                entry = name[len("test_scenario_"):]
                if not _fast.get(entry):
                    continue
            suite.addTest(case(name))
    return suite


_fast = {e["name"]: e.get("fast", False) for e in run_scenario.load_index()}


def main():
    global RUN_ALL
    argv = list(sys.argv)
    if "--all" in argv:
        argv.remove("--all")
        RUN_ALL = True
    verbosity = 2 if "-v" in argv else 1
    loader = unittest.TestLoader()
    suite = load_tests(loader, None, None)
    result = unittest.TextTestRunner(verbosity=verbosity).run(suite)
    failed = len(result.failures) + len(result.errors)
    skipped = len(result.skipped)
    passed = result.testsRun - failed - skipped
    print("selftest (python %s): %d passed, %d failed, %d skipped" % (
        sys.version.split()[0], passed, failed, skipped))
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
