"""test_call_sites_table — unwinder/src/call_sites_table.h is what
targets/layouts/gen_call_sites writes from the provisioned interpreters
now: a change to its families (CALLABLE_ELSEWHERE, WAITS, ...) that was
not regenerated, or a table edited by hand, fails here, since the walker
reads the committed table, not the script.  Skipped until every id of the
provisioning matrix is provisioned (the table has one set per minor
version of the whole matrix)."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "facts"))
from tap_results import check, report, skip  # noqa: E402
import fpfacts  # noqa: E402

GEN = os.path.join(HERE, "..", "..", "targets", "layouts", "gen_call_sites")
TABLE = os.path.join(HERE, "..", "..", "unwinder", "src", "call_sites_table.h")
TIMEOUT = 300


def main():
    name = "call_sites_table.h is gen_call_sites's output"
    path, ids = fpfacts.matrix(fpfacts.load())
    missing = [i for i, e in ids if e is None]
    if missing:
        skip(name, "not provisioned: " + " ".join(missing))
        report()
        return
    with tempfile.TemporaryDirectory(prefix="fp-call-sites-") as tmp:
        out = os.path.join(tmp, "call_sites_table.h")
        r = subprocess.run([sys.executable, GEN, "--manifest", path, "--out", out],
                           capture_output=True, text=True, timeout=TIMEOUT)
        if r.returncode != 0:
            check(name, False, f"gen_call_sites exited {r.returncode}: {r.stderr.strip()}")
            report()
            return
        with open(out, encoding="utf-8") as f:
            want = f.read().splitlines()
    with open(TABLE, encoding="utf-8") as f:
        have = f.read().splitlines()
    differ = [i + 1 for i in range(max(len(want), len(have)))
              if i >= len(want) or i >= len(have) or want[i] != have[i]]
    check(name, not differ,
          f"{len(differ)} lines differ, the first at line {differ[:1]}: regenerate with "
          "targets/layouts/gen_call_sites")
    report()


main()
