"""ci/sample_cost.py attributes perf's samples as its tables say (TAP): a
perf sample goes to the stage of the first stage function on its call
chain, the sample's time to a part by its leaf (a kernel leaf by the first
kernel frame that names what it was doing, a user leaf by the first frame
of frameproof's own files, the C library's time to its caller), each with
its period; and the table divides by bench's samples.  One frame moved to
another file moves the time.
usage: test_sample_cost.py SOURCE_DIR"""
import os
import sys

SOURCE = sys.argv[1]
sys.path.insert(0, os.path.join(SOURCE, "ci"))
sys.path.insert(0, os.path.join(SOURCE, "tests", "cli"))
import sample_cost  # noqa: E402
from tap_results import check, report  # noqa: E402

FP = "/x/build/harness/cli/frameproof"
K = "[kernel.kallsyms]"
LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6"


def sample(period, *frames):
    lines = ["4242     %d " % period]
    for sym, dso in frames:
        lines.append("\t    %x %s%s" % (0x1000, sym, " (inlined)" if dso is None else " (%s)" % dso))
    return "\n".join(lines)


SCRIPT = "\n\n".join([
    # the kernel's copy, under process_vm_readv, under the walk's read
    sample(100000, ("_copy_to_iter", K), ("process_vm_rw_core.constprop.0", K), ("do_syscall_64", K),
           ("process_vm_readv", LIBC), ("vm_read", FP), ("fp_session_sample", FP), ("fps_run", FP)),
    # a lock released inside the kernel's page lookup: pinning, not the scheduler
    sample(100000, ("_raw_spin_unlock_irqrestore", K), ("gup_vma_lookup", K), ("__get_user_pages", K),
           ("fp_session_sample", FP), ("fps_run", FP)),
    # an inlined leaf, then the check's function
    sample(50000, ("frame_unchanged", None), ("fpi_verify_batch.constprop.0", FP), ("fp_session_sample", FP)),
    # the C library's copy, called by the walk
    sample(50000, ("__memmove_avx512_unaligned_erms", LIBC), ("fpi_collect_chain", FP), ("fp_session_sample", FP)),
    # the hold, outside the sample
    sample(100000, ("__set_cpus_allowed_ptr", K), ("fps_colocate_hold", FP), ("fps_run", FP)),
    # the callback thread
    sample(100000, ("futex_wait", K), ("deliver_loop", FP)),
    # attaching, before the loop
    sample(100000, ("fpi_locate", FP), ("cli_cmd_bench", FP)),
    # bench's loop itself
    sample(100000, ("fps_clock_ns", FP), ("fps_run", FP)),
])
FILES = {"vm_read": "reader_vm.c", "fpi_verify_batch": "verify.c", "fpi_collect_chain": "chain.c",
         "fps_colocate_hold": "colocate.c", "fps_run": "sampler.c", "fpi_locate": "locate.c"}

stages, parts, leaves = sample_cost.parse_script(SCRIPT, FILES)
check("stages by the first stage function on the chain",
      stages == {"sample": 300000, "hold and colocation": 100000, "hand-over and callback thread": 100000,
                 "rest of the loop": 100000, "start-up": 100000}, stages)
nonzero = {k: v for k, v in parts.items() if v}
check("the sample's parts by leaf: kernel by what it did, user by file, the C library with its caller",
      nonzero == {"kernel: copy": 100000, "kernel: pin and find pages": 100000, "read-back check": 50000,
                  "walk": 50000}, nonzero)
check("the sample's leaves with their periods", leaves == {"[k] _copy_to_iter": 100000,
                                                           "[k] _raw_spin_unlock_irqrestore": 100000,
                                                           "frame_unchanged": 50000,
                                                           "__memmove_avx512_unaligned_erms": 50000}, leaves)
moved = dict(FILES, fpi_collect_chain="verify.c")
check("one function in another file moves its time", sample_cost.parse_script(SCRIPT, moved)[1]["walk"] == 0 and
      sample_cost.parse_script(SCRIPT, moved)[1]["read-back check"] == 100000)
check("a user leaf of no known file is other (user)",
      sample_cost.frame_part([("mystery", "frameproof", False)], {}) == sample_cost.OTHER_USER)
check("a bare C library leaf is the C library's",
      sample_cost.frame_part([("memcpy", "libc.so.6", False)], {}) == sample_cost.C_LIBRARY)

row = {"interpreter": "3.15", "shape": "1×8", "mode": "default", "mean_us": 3.9, "samples_per_s": 200000.0,
       "ranges_per_read": 11, "stages_us": {k: v / 100 / 1000 for k, v in stages.items()},
       "parts_us": {k: v / 100 / 1000 for k, v in parts.items()}}
doc = {"date": "2026-12-06 00:00 UTC", "commit": "abc1234", "command": "ci/sample-cost", "cores": 2,
       "duration_s": 2.0, "perf_hz": 10000, "rows": [row]}
lines = [line for line in sample_cost.markdown(doc).splitlines() if line.startswith("| 3.15 ")]
cells = [c.strip() for c in lines[0].strip("|").split("|")]
check("the stage table: latency, loop, ranges, then CPU µs per sample by stage",
      cells == ["3.15", "1×8", "default", "3.9", "5.0", "11", "3.00", "1.00", "1.00", "1.00"], cells)
cells = [c.strip() for c in lines[1].strip("|").split("|")]
check("the part table starts with the sample stage, then the parts in order",
      cells[:6] == ["3.15", "1×8", "default", "3.00", "0.50", "0.50"] and cells[-6] == "1.00" and
      cells[-5] == "1.00", cells)
report()
