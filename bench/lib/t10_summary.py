#!/usr/bin/env python3
"""Table 10's figures (bench/tables/t10-python.sh).

usage: t10_summary.py RUNS N IR_N WORK IR_PLAIN IR_HOOKS IR_R4

RUNS: one line per run, "conf round user_s sys_s samples".  WORK holds the
callgrind annotations t10-{plain,hooks,r4}.txt (inclusive) and
t10-{hooks,r4}.self.txt (self), and t10-r4.out (the program's output).
"""
import re
import statistics
import sys

path, n, ir_n, work = sys.argv[1:5]
ir = {}
for key, v in zip(("plain", "hooks", "r4", "detached"), sys.argv[5:9]):
    try:
        ir[key] = int(v)
    except ValueError:
        pass

runs = {}
for line in open(path):
    conf, r, u, s, k = line.split()
    runs.setdefault(int(r), {})[conf] = (float(u), float(s), int(k))


def med(xs):
    xs = [x for x in xs if x == x]
    return (statistics.median(xs), min(xs), max(xs)) if xs else None


def cell(m, fmt="{:.3f}"):
    return (fmt + " (" + fmt + "-" + fmt + ")").format(*m) if m else "-"


def per_round(f):
    return [f(rr) for rr in runs.values()]


def ratio(conf, base, what):
    def f(rr):
        if conf not in rr or base not in rr:
            return float("nan")
        a, b = what(rr[conf]), what(rr[base])
        return a / b if b > 0 else float("nan")
    return med(per_round(f))


user = lambda x: x[0]
cpu = lambda x: x[0] + x[1]
labels = {
    "plain": "plain",
    "detached": "detached (injected, then detached: loaded, hooks out)",
    "1e-5": "attached at 1e-5",
    "1e-4": "attached at 1e-4",
    "tracemalloc": "`python3 -X tracemalloc`",
    "fake-hooks": "split: hooks in, never sampling (fake tracer)",
    "fake-1e-4": "split: fake tracer at 1e-4 (no uprobe, no BPF)",
}
print(f"{int(n):,} rounds; user CPU time of the loop (every thread), median of {len(runs)} "
      "interleaved rounds (range); ratios against plain in the same round.")
print()
print("| configuration | user s | user / plain | user+sys / plain | samples |")
print("|---|---|---|---|---|")
for conf, label in labels.items():
    u = med(per_round(lambda rr: rr[conf][0] if conf in rr else float("nan")))
    k = med(per_round(lambda rr: rr[conf][2] if conf in rr else float("nan")))
    cells = [label, cell(u), "1" if conf == "plain" else cell(ratio(conf, "plain", user)),
             "1" if conf == "plain" else cell(ratio(conf, "plain", cpu)),
             f"{k[0]:,.0f}" if k and k[0] else "-"]
    print("| " + " | ".join(cells) + " |")


def per_sample_us(conf, base):
    def f(rr):
        if conf not in rr or base not in rr or not rr[conf][2]:
            return float("nan")
        return (cpu(rr[conf]) - cpu(rr[base])) / rr[conf][2] * 1e6
    return med(per_round(f))


print()
print("Where the attached cost goes (CPU time, user+sys; per round, then the median):")
print()
print(f"- the wrappers on every allocation and free, no sample: "
      f"{cell(ratio('fake-hooks', 'plain', cpu))} of plain")
print(f"- per sample, in the process (stack, frame walk, core, probe batch): "
      f"{cell(per_sample_us('fake-1e-4', 'fake-hooks'), '{:.2f}')} us")
print(f"- per sample, the kernel's side (uprobe hit per batch, BPF programs): "
      f"{cell(per_sample_us('1e-4', 'fake-1e-4'), '{:.2f}')} us")


def incl(tag, fn):
    """Inclusive Ir of the first function named fn in an annotation, or 0."""
    try:
        for line in open(f"{work}/t10-{tag}.txt"):
            m = re.match(r"\s*([0-9,]+) \([ 0-9.]+%\)\s+\S*:" + re.escape(fn) + r" \[", line)
            if m:
                return int(m.group(1).replace(",", ""))
    except OSError:
        pass
    return 0


def self_of(tag, pattern):
    total = 0
    try:
        for line in open(f"{work}/t10-{tag}.self.txt"):
            m = re.match(r"\s*([0-9,]+) \([ 0-9.]+%\)\s+(\S+) \[", line)
            if m and re.search(pattern, m.group(2)):
                total += int(m.group(1).replace(",", ""))
    except OSError:
        pass
    return total


def samples_of(tag):
    try:
        for line in open(f"{work}/t10-{tag}.out"):
            if line.startswith("samples "):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


print()
if len(ir) < 3:
    print("Callgrind: not available (a run failed).")
    sys.exit(0)
p, h, r4 = ir["plain"], ir["hooks"], ir["r4"]
own = self_of("hooks", r"hooks\.c:|preload\.h:")
k = samples_of("r4")
print(f"Callgrind, {int(ir_n):,} rounds, whole process (Ir): plain {p:,}; hooks in, never "
      f"sampling {h:,} ({100 * (h - p) / p:+.2f}%: the wrappers' own {own:,}, the rest CPython's "
      f"lost devirtualised call to pymalloc); fake tracer at 1e-4 {r4:,} "
      f"({100 * (r4 - p) / p:+.2f}%), {k:,} samples.")
if "detached" in ir:
    d = ir["detached"]
    print()
    print(f"Detached, exactly: the library loaded with no tracer (its watcher looking at the "
          f"semaphore every 20 ms, the hooks never in) {d:,} Ir, {100 * (d - p) / p:+.3f}% of plain.")
if k:
    total = (r4 - h) / k
    track = incl("r4", "sampler_track") / k
    walk = incl("r4", "python_frames") / k
    stack = incl("r4", "callstack_capture") / k
    print()
    print("Per sample (Ir): the difference of the two runs over the samples, then the sample's")
    print("path in the allocation hook (`sampler_track`: the stack, the core's tracking, the probe")
    print("batch) and its parts. The difference also holds the countdown's slow path and each")
    print("sampled block's death, and what sampled blocks in RAW rather than pymalloc change.")
    print()
    print("| per sample (Ir) | fake 1e-4 - hooks | sample path | native unwind | Python frame walk "
          "| core, probe batch |")
    print("|---|---|---|---|---|---|")
    print(f"| fake tracer at 1e-4 | {total:,.0f} | {track:,.0f} | {stack - walk:,.0f} | "
          f"{walk:,.0f} | {track - stack:,.0f} |")
