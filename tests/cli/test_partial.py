"""test_partial — a sample with one failed thread is printed, not dropped.

Usage: test_partial.py FRAMEPROOF CORRUPT_THREAD IMAGE

A copy of a captured image gets one corrupted thread (corrupt_thread: its
data-stack top below its chunk).  `replay` and `replay --json` must print
every other thread exactly as they are printed from the intact image, the
corrupted thread with its error and no frames, one line on stderr, and exit
1 (docs/cli.md: dump --json)."""
import json
import os
import subprocess
import sys
import tempfile

from tap_results import check, report

CORRUPTED = 1  # index of the corrupted thread in the interpreter's list
ERROR_NAME = "invalid or corrupt layout or data"
DETAIL = "data-stack top 0x3fffff0: below its chunk at 0xfffffffffffffff0"


def run(*args):
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


def text_blocks(text):
    return text.split("\n\n")


def main():
    exe, corrupt, image = sys.argv[1:4]
    with tempfile.TemporaryDirectory() as tmp:
        bad = os.path.join(tmp, "one-bad-thread.fpimg")
        r = run(corrupt, image, bad, str(CORRUPTED))
        check("the corrupted copy is written", r.returncode == 0, r.stderr)
        good_json, good_text = run(exe, "replay", "--json", image), run(exe, "replay", image)
        check("the intact image replays", good_json.returncode == 0 and good_text.returncode == 0,
              good_json.stderr + good_text.stderr)
        if r.returncode or good_json.returncode or good_text.returncode:
            return report()
        expected = json.loads(good_json.stdout)
        threads = expected["interpreters"][0]["threads"]
        victim = threads[CORRUPTED]
        check("the image has frames on other threads",
              len(threads) > 1 and all(t["frames"] for i, t in enumerate(threads) if i != CORRUPTED),
              json.dumps(threads)[:400])
        victim["error"] = ERROR_NAME
        victim["frames"] = []
        # The key order of the documented schema: "error" before "frames".
        threads[CORRUPTED] = {k: victim[k] for k in ("native_id", "thread_id", "main", "status", "error", "frames")}

        got = run(exe, "replay", "--json", bad)
        check("--json: exit status 1", got.returncode == 1, f"status {got.returncode}")
        check("--json: one line on stderr", got.stderr == f"frameproof replay: {bad}: {DETAIL}\n", repr(got.stderr))
        try:
            check("--json: every other thread exact, the failed one with its error and no frames",
                  json.loads(got.stdout) == expected and json.dumps(expected, ensure_ascii=False, separators=(",", ":")) + "\n" == got.stdout,
                  got.stdout[:2000])
        except json.JSONDecodeError as e:
            check("--json: output is JSON", False, f"{e}: {got.stdout[:400]!r}")

        blocks = text_blocks(good_text.stdout)
        head = f"Thread {victim['native_id']} ("
        idx = [i for i, b in enumerate(blocks) if b.startswith(head)]
        check("text: the intact image prints the thread", len(idx) == 1, good_text.stdout[:400])
        if len(idx) == 1:
            first = blocks[idx[0]].split("\n")[0]
            blocks[idx[0]] = f"{first}\n  <stack not available: {ERROR_NAME}>"
        got = run(exe, "replay", bad)
        check("text: exit status 1", got.returncode == 1, f"status {got.returncode}")
        check("text: one line on stderr", got.stderr == f"frameproof replay: {bad}: {DETAIL}\n", repr(got.stderr))
        check("text: every other thread exact, the failed one with its error", got.stdout == "\n\n".join(blocks),
              got.stdout[:2000])
    return report()


if __name__ == "__main__":
    sys.exit(main())
