#!/usr/bin/env python3
"""Per-site accuracy of a malloc profiler against mallocmix's exact totals.

usage: accuracy.py sites WORKLOAD_OUT
           the site names, largest exact bytes first, one per line
       accuracy.py TOOL TOOL_OUT WORKLOAD_OUT
           one markdown fragment: "metric | r1 | r2 | ..." where r is the
           tool's estimate / the exact figure for each site (sites in the
           order of `sites`), or "not available: <reason>"

TOOL and what is compared:
  bpftrace   bytes requested, summed over @bytes[ustack] stacks
  memleak    bytes still live, from the last "outstanding allocations" report
  heaptrack  allocation calls, from heaptrack_print's folded stacks
  jemalloc   bytes allocated, jeprof --alloc_space cumulative per function
             (jemalloc counts size-class bytes, not requested bytes)
  memprof    bytes allocated, memprof-bpf's report (see parse_memprof)
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
    reports = text.split("stacks with outstanding allocations:")
    if len(reports) < 2:
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
    """memprof-bpf's report: any line naming a site with a byte figure,
    "<bytes> ... <frames naming the site>" or "site ... bytes N".  The
    estimate for a site is the sum of the allocated-bytes figures of the
    stacks that name it."""
    est = {s: 0 for s in sites}
    found = False
    for block in re.split(r"\n\s*\n", text):
        s = site_of_frames(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", block), sites)
        if not s:
            continue
        m = re.search(r"(?:alloc(?:ated)?_bytes|bytes)[ =:]+(\d+)", block) or \
            re.search(r"^\s*(\d+)", block, re.M)
        if m:
            est[s] += int(m.group(1))
            found = True
    if not found:
        raise ValueError("no per-site bytes in memprof-bpf's report")
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
    if len(sys.argv) != 4 or sys.argv[1] not in PARSERS:
        sys.exit(__doc__)
    tool, tool_out, workload_out = sys.argv[1:]
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
            cells.append(f"{est[s] / exact:.2f}")
    print(f"{metric} | " + " | ".join(cells))


if __name__ == "__main__":
    main()
