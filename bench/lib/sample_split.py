#!/usr/bin/env python3
"""Where a traced sample's instructions go in the malloc host, from two
callgrind profiles of build/bench/mallocmix under the preload (collecting
only inside run_work): one detached, one with --fake-tracer RATE (the
host samples, unwinds and queues as when traced; its probe sites are bare
nops, so this is the in-process part alone).

usage: sample_split.py DETACHED.cg FAKE.cg

The profiles, for example (fixed seed; the same iterations for both):
  MEMPROF_SEED=1 LD_PRELOAD=build/libmemprof-preload.so valgrind --tool=callgrind \
    --callgrind-out-file=DETACHED.cg --collect-atstart=no --toggle-collect=run_work \
    build/bench/mallocmix --iterations 200000
  (the same with --callgrind-out-file=FAKE.cg and --fake-tracer 1e-3 at the end)

Prints markdown: Ir per sample in all ((fake - detached) / samples, the
samples being the calls of memprof_track_malloc) and by part (inclusive Ir
of the functions named below over the same samples).
"""
import re
import subprocess
import sys

# part -> (functions whose inclusive Ir it is, functions whose inclusive Ir
# it leaves out); callgrind names, no file.
PARTS = [
    ("call stack (unwinder, dropping the profiler's frames)", ["callstack_capture"], []),
    ("entry, handle, queued record (sample_new_locked: an in-process profile's samples)",
     ["sample_new_locked"], []),
    ("queued record of a tracer-only sample (probe_fire_sample)", ["probe_fire_sample"], []),
    ("memprof_track_malloc's own (core mutex, id, young list, stack buffer, rate)",
     ["memprof_track_malloc"], ["callstack_capture", "sample_new_locked", "probe_fire_sample"]),
    ("slow path: countdown, draws, epochs, tracer poll, core gate", ["sampler_countdown_expired"],
     []),
    ("sampled-block table: insert", ["sampled_blocks_insert"], []),
    ("free of a sampled block (table, core gate, core, death event)", ["sampler_block_freed"], []),
]
CALLS = "memprof_track_malloc"


def total(path):
    out = subprocess.run(["callgrind_annotate", "--auto=no", path], capture_output=True,
                         text=True, check=True).stdout
    m = re.search(r"([\d,]+) +\(100\.0%\) +PROGRAM TOTALS", out)
    return int(m.group(1).replace(",", ""))


def inclusive(path):
    """function -> inclusive Ir, and function -> calls.  A function with
    code inlined from several files is listed once per file; the entry
    point's line holds the whole, so the largest is taken."""
    out = subprocess.run(["callgrind_annotate", "--auto=no", "--inclusive=yes",
                          "--threshold=100", path],
                         capture_output=True, text=True, check=True).stdout
    incl, calls = {}, {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+) \(.*%\)\s+\S*:(\w+)", line)
        if m:
            ir = int(m.group(1).replace(",", ""))
            incl[m.group(2)] = max(incl.get(m.group(2), 0), ir)
    out = subprocess.run(["callgrind_annotate", "--auto=no", "--inclusive=yes",
                          "--tree=calling", "--threshold=100", path],
                         capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        m = re.match(r"\s*[\d,]+ .*>\s+\S*:(\w+)[^(]*\(([\d,]+)x\)", line)
        if m:
            calls[m.group(1)] = calls.get(m.group(1), 0) + int(m.group(2).replace(",", ""))
    return incl, calls


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    det, fake = sys.argv[1], sys.argv[2]
    incl, calls = inclusive(fake)
    n = calls.get(CALLS, 0)
    if not n:
        sys.exit("sample_split: no call of %s in %s" % (CALLS, fake))
    extra = total(fake) - total(det)
    print("| part | Ir per sample |")
    print("|---|---|")
    shown = 0
    for name, funcs, minus in PARTS:
        ir = sum(incl.get(f, 0) for f in funcs) - sum(incl.get(f, 0) for f in minus)
        shown += ir
        print(f"| {name} | {ir / n:,.0f} |")
    print(f"| the rest (the wrappers' slow paths, false hits of the free filter) | {(extra - shown) / n:,.0f} |")
    print(f"| **in all** ({n:,} samples) | **{extra / n:,.0f}** |")


if __name__ == "__main__":
    main()
