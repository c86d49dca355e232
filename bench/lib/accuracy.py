#!/usr/bin/env python3
"""Per-site accuracy of a malloc profiler against mallocmix's exact totals.

usage: accuracy.py sites WORKLOAD_OUT
           the site names, largest exact bytes first, one per line
       accuracy.py TOOL TOOL_OUT WORKLOAD_OUT [RATE]
           one markdown fragment: "metric | r1 | r2 | ..." where r is the
           tool's estimate / the exact figure for each site (sites in the
           order of `sites`), or "not available: <reason>".  With RATE (a
           per-word Poisson sampling rate) each ratio is followed by its
           distance from 1 in standard deviations, sd = 8*sqrt(words/RATE)
           bytes for a site of `words` 8-byte words.

TOOL and what is compared:
  bpftrace   bytes requested, summed over @bytes[ustack] stacks
  memleak    bytes still live, from the last "outstanding allocations" report
  heaptrack  allocation calls, from heaptrack_print's folded stacks
  jemalloc   bytes allocated, jeprof --alloc_space cumulative per function
             (jemalloc counts size-class bytes, not requested bytes)
  memprof    bytes allocated, memprof-bpf's folded stacks (alloc view)
"""
import re
import sys

SITE_RE = re.compile(r"^site (\S+) calls (\d+) bytes (\d+) live_bytes (\d+)")


def exact_totals(path):
    sites = {}
    with open(path) as f:
        for line in f:
            m = SITE_RE.match(line)
            if m:
                sites[m.group(1)] = {"calls": int(m.group(2)), "bytes": int(m.group(3)),
                                     "live": int(m.group(4))}
    if not sites:
        raise ValueError(f"no site totals in {path}")
    return sites


def site_of_frames(frames, sites):
    """The site a stack belongs to: the first frame naming a site."""
    for fr in frames:
        name = re.split(r"[+ (]", fr.strip(), 1)[0]
        if name in sites:
            return name
    return None


def parse_bpftrace(text, sites):
    est = {s: 0 for s in sites}
    for m in re.finditer(r"@bytes\[\n(.*?)\]: (\d+)", text, re.S):
        s = site_of_frames(m.group(1).splitlines(), sites)
        if s:
            est[s] += int(m.group(2))
    return est, "bytes"


def parse_memleak(text, sites):
    # The last complete report: the one SIGINT cut short may be empty.
    reports = [r for r in text.split("stacks with outstanding allocations:")[1:]
               if "allocations from stack" in r]
    if not reports:
        raise ValueError("memleak printed no report")
    last = reports[-1]
    est = {s: 0 for s in sites}
    for m in re.finditer(r"(\d+) bytes in \d+ allocations from stack\n((?:\t\t.*\n?)*)", last):
        frames = [l.split(None, 1)[1] if len(l.split(None, 1)) > 1 else l
                  for l in m.group(2).splitlines()]
        s = site_of_frames(frames, sites)
        if s:
            est[s] += int(m.group(1))
    return est, "live"


def parse_heaptrack(text, sites):
    est = {s: 0 for s in sites}
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        frames = [f.split(" (")[0] for f in stack.split(";")]
        s = site_of_frames(frames, sites)
        if s:
            est[s] += int(count)
    return est, "calls"


def parse_jemalloc(text, sites):
    est = {s: 0 for s in sites}
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 6 and f[5] in sites and f[3].isdigit():
            est[f[5]] = int(f[3])
    return est, "bytes"


def parse_memprof(text, sites):
    """memprof-bpf's report: folded stacks ("frame;frame;... BYTES"),
    weighted in estimated bytes (the alloc view)."""
    est, _ = parse_heaptrack(text, sites)
    if not any(est.values()):
        raise ValueError("no site in memprof-bpf's folded stacks")
    return est, "bytes"


PARSERS = {"bpftrace": parse_bpftrace, "memleak": parse_memleak,
           "heaptrack": parse_heaptrack, "jemalloc": parse_jemalloc,
           "memprof": parse_memprof}
EXACT_KEY = {"bytes": "bytes", "live": "live", "calls": "calls"}


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "sites":
        sites = exact_totals(sys.argv[2])
        for s in sorted(sites, key=lambda s: -sites[s]["bytes"]):
            print(s)
        return
    if len(sys.argv) not in (4, 5) or sys.argv[1] not in PARSERS:
        sys.exit(__doc__)
    tool, tool_out, workload_out = sys.argv[1:4]
    rate = float(sys.argv[4]) if len(sys.argv) == 5 else None
    try:
        sites = exact_totals(workload_out)
        with open(tool_out, errors="replace") as f:
            text = f.read()
        est, metric = PARSERS[tool](text, sites)
    except (OSError, ValueError) as e:
        print(f"not available: {e}")
        return
    order = sorted(sites, key=lambda s: -sites[s]["bytes"])
    cells = []
    for s in order:
        exact = sites[s][EXACT_KEY[metric]]
        if exact == 0:
            cells.append("-" if est[s] == 0 else f"{est[s]} vs 0")
        else:
            cell = f"{est[s] / exact:.2f}"
            if rate:
                sd = 8 * (exact / 8 / rate) ** 0.5
                cell += f" ({(est[s] - exact) / sd:+.1f} sd)"
            cells.append(cell)
    print(f"{metric} | " + " | ".join(cells))


if __name__ == "__main__":
    main()
