#!/usr/bin/env python3
"""The "what this means" paragraph under each table, written from the
figures this run measured (never from expectations).

usage: explain.py t1|t2|t3|t4 WORKDIR

Each sentence is built from medians and per-round ranges read back from
the result files; a statement that the numbers cannot support (no data, a
range straddling 1) is replaced by one saying so.
"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from summarize import by_round, load  # noqa: E402

CPU = "cpu_s"
# One uprobe hit with a BPF program attached, measured on this kind of machine
# (docs/design.md): ~780 ns on a 1-byte nop site (int3), ~435 ns on our 5-byte nop sites.
INT3_UPROBE_NS = 780
OPT_UPROBE_NS = 435
NOISE = 0.03  # a ratio within 3% of 1 whose range straddles 1 is "no measurable cost"


def ratio(path, label, base, metric="wall_s"):
    """(median, low, high) of per-round ratios, or None."""
    if not os.path.exists(path):
        return None
    runs = load(path)
    a, b = by_round(runs, label, metric), by_round(runs, base, metric)
    if isinstance(a, str) or isinstance(b, str):
        return None
    rs = [a[r] / b[r] for r in sorted(set(a) & set(b)) if b[r] > 0]
    if not rs:
        return None
    return statistics.median(rs), min(rs), max(rs)


def median(path, label, metric):
    if not os.path.exists(path):
        return None
    got = by_round(load(path), label, metric)
    if isinstance(got, str):
        return None
    return statistics.median(got.values())


def pct(r):
    return f"{(r[0] - 1) * 100:+.0f}%"


def cost(r):
    """A ratio in words, honest about noise."""
    if r is None:
        return "not measured"
    m, lo, hi = r
    if lo <= 1.0 <= hi:
        return f"{m:.2f}x, not distinguishable from 1 (rounds {lo:.2f}-{hi:.2f})"
    return f"{m:.2f}x ({pct(r)})"


def ir_ratio(work, kind, label):
    try:
        ir = dict(l.split() for l in open(os.path.join(work, f"t1-ir-{kind}.txt"))
                  if len(l.split()) == 2)
        return int(ir[label]) / int(ir["base"])
    except (OSError, KeyError, ValueError, ZeroDivisionError):
        return None


def hook_ir_per_record(work, kind):
    """(Ir with the hook - Ir without) / records of the Ir runs, or None."""
    try:
        ir = dict(l.split() for l in open(os.path.join(work, f"t1-ir-{kind}.txt"))
                  if len(l.split()) == 2)
        return (int(ir["base"]) - int(ir["nohook"])) / int(ir["records"])
    except (OSError, KeyError, ValueError, ZeroDivisionError):
        return None


def t1(work):
    out = []
    for kind in ("short", "long"):
        rt = os.path.join(work, f"t1-rt-{kind}.jsonl")
        ml = os.path.join(work, f"t1-ml-{kind}.jsonl")
        r4u, r4t = ratio(rt, "0-1e-4", "base", CPU), ratio(rt, "1-1e-4", "base", CPU)
        m4u, m4t = ratio(ml, "0-1e-4", "base", CPU), ratio(ml, "1-1e-4", "base", CPU)
        r2t, m2t = ratio(rt, "1-1e-2", "base", CPU), ratio(ml, "1-1e-2", "base", CPU)
        if r4u is None and m4u is None:
            out.append(f"The {kind} workload was not measured.")
            continue
        s = (f"{kind.capitalize()}-lived records at 1e-4: the runtime's sampling costs "
             f"{cost(r4u)} untracked and {cost(r4t)} tracked; OCaml's Gc.Memprof costs "
             f"{cost(m4u)} and {cost(m4t)} on the same workload.")
        if r2t and m2t:
            s += (f" At 1e-2 (tracked) the runtime is at {r2t[0]:.2f}x and OCaml at "
                  f"{m2t[0]:.2f}x.")
        irs = [(rate, ir_ratio(work, kind, f"1-{rate}")) for rate in ("1e-4", "1e-3", "1e-2")]
        irs = [(rate, v) for rate, v in irs if v is not None]
        if irs:
            s += (" In instructions, free of noise, tracked sampling adds " +
                  ", ".join(f"{(v - 1) * 100:.1f}% at {rate}" for rate, v in irs) + ".")
        # Lowest rate at which the runtime's tracked cost is clearly measurable.
        # ... and confirmed by the instruction count (a CPU-time range above 1
        # with an unchanged Ir is drift on a shared machine, not sampling).
        for rate in ("1e-5", "1e-4", "1e-3", "1e-2"):
            r = ratio(rt, f"1-{rate}", "base", CPU)
            ir = ir_ratio(work, kind, f"1-{rate}")
            if r and r[1] > 1.0 + NOISE / 3 and (ir is None or ir > 1.0 + NOISE / 3):
                s += (f" The lowest rate where tracked sampling costs more than the"
                      f" round-to-round spread in CPU time" +
                      (" and in instructions" if ir else "") + f" is {rate}.")
                break
        hook = ratio(rt, "base", "nohook", CPU)
        nohook_ir = ir_ratio(work, kind, "nohook")  # no hook / hook
        hook_ir = 1 / nohook_ir if nohook_ir else None
        if hook:
            s += (f" The hook itself (core linked in, not sampling, against the runtime built "
                  f"without it) is {cost(hook)} in CPU time")
            per = hook_ir_per_record(work, kind)
            s += (f" and {(hook_ir - 1) * 100:+.1f}% in instructions" if hook_ir else "")
            s += (f" ({per:.1f} Ir per record)." if per is not None else ".")
        out.append(s)
    return " ".join(out)


def t2(work):
    out = []
    rt = os.path.join(work, "t2-rt.jsonl")
    mm = os.path.join(work, "t2-mm.jsonl")
    parts = []
    for rate in ("1e-5", "1e-4", "1e-3"):
        r = ratio(rt, f"attached-{rate}", "detached", "values.target_cpu_s")
        if r:
            parts.append(f"{cost(r)} at {rate}")
    if parts:
        out.append("On the runtime, the traced run's CPU time against the detached one is " +
                   "; ".join(parts) + ".")
    ns, ns_rounds = [], []
    for path, metric, per in ((rt, "values.target_cpu_s", "values.memprof_ctl_samples"),
                              (mm, "values.work_cpu_ns", "values.memprof_samples")):
        c = per_sample_ns(path, "attached-1e-3", metric, per)
        ns.append(c[0] if c else None)
        ns_rounds.append(c[1:] if c else None)
    if ns[0] is not None:
        out.append(f"At 1e-3, where samples dominate the difference, each traced sample costs"
                   f" about {ns[0]:,.0f} ns of CPU on the runtime")
        if ns[1] is not None:
            out[-1] += f" and {ns[1]:,.0f} ns in the malloc preload"
        out[-1] += (" (call-stack capture, the in-process sampling, the sample's record and"
                    " its share of the batch's uprobe hit, the BPF programs and the stack copy"
                    " together). One uprobe hit with a BPF program measured about"
                    f" {INT3_UPROBE_NS:,} ns on a 1-byte nop site and about {OPT_UPROBE_NS:,} ns"
                    " on the 5-byte nop sites memprof uses (the kernel optimises those); a"
                    " traced sample no longer takes one of its own: samples, promotions and"
                    " deaths go in batches (memprof:sample and memprof:events, one hit per"
                    " collection, epoch or 256 of them).")
        out.append(f"Against one optimised uprobe hit ({OPT_UPROBE_NS:,} ns):"
                   f" {ns[0] / OPT_UPROBE_NS:.1f}x on the runtime"
                   + (f", {ns[1] / OPT_UPROBE_NS:.1f}x in the malloc preload" if ns[1] else "")
                   + ".")
    elif ns[1] is not None:
        out.append(f"At 1e-3 each sample costs about {ns[1]:,.0f} ns in the malloc preload.")
    pre = ratio(mm, "detached", "glibc", "values.work_cpu_ns")
    if pre:
        out.append(f"Loading the preload without a tracer costs {cost(pre)} on the malloc "
                   "workload.")
    pair = pair_sentence(work)
    if pair:
        out.append(pair)
    low = ratio(rt, "attached-1e-5", "detached", "values.target_cpu_s")
    if low:
        out.append(f"At the default rate 1e-5 the traced runtime runs at {cost(low)}.")
    targets = t2_targets(mm, ns, ns_rounds)
    if targets:
        out.append(targets)
    if not out:
        return "Nothing in this table was measured in this run."
    return " ".join(out)


def rounds_against_detached(path, label, metric, per):
    """Per-round label, detached and per values, and the metric's scale to
    ns (a, b, n, scale), or None when the runs are missing."""
    if not os.path.exists(path):
        return None
    runs = load(path)
    a = by_round(runs, label, metric)
    b = by_round(runs, "detached", metric)
    n = by_round(runs, label, per)
    if any(isinstance(x, str) or not x for x in (a, b, n)):
        return None
    return a, b, n, 1e9 if metric == "values.target_cpu_s" else 1.0


def per_sample_ns(path, label, metric, per):
    """CPU ns per sample of label against detached, round by round:
    (median, lowest, highest), or None when a round looked free (the noise
    swamps the figure) or the runs are missing."""
    got = rounds_against_detached(path, label, metric, per)
    if not got:
        return None
    a, b, n, scale = got
    v = [(a[r] - b[r]) / n[r] * scale for r in set(a) & set(b) & set(n) if n[r]]
    if not v or min(v) <= 0:
        return None
    return statistics.median(v), min(v), max(v)


def per_sample_ns_fastest(path, label, metric, per):
    """CPU ns per sample of label against detached, from the fastest round
    of each: this machine's vCPU runs at two speeds about 1.8x apart for
    minutes at a time, and the fastest runs of both are at the faster one.
    None when the runs are missing."""
    got = rounds_against_detached(path, label, metric, per)
    if not got:
        return None
    a, b, n, scale = got
    samples = statistics.median(n.values())
    if samples <= 0:
        return None
    return (min(a.values()) - min(b.values())) / samples * scale


def fake_tracer_ir_rt(work):
    """Instructions of the in-process part of a traced runtime sample
    (t2-rt-fake-ir.txt, written by t2-attach.sh), or None."""
    try:
        return float(open(os.path.join(work, "t2-rt-fake-ir.txt")).read())
    except (OSError, ValueError):
        return None


def fake_tracer_ir(work):
    """Instructions of the in-process part of a traced malloc sample (the
    "in all" line of sample_split.py's table, t2-fake-split.md), or None."""
    import re
    try:
        text = open(os.path.join(work, "t2-fake-split.md")).read()
    except OSError:
        return None
    m = re.search(r"\*\*in all\*\*[^|]*\| \*\*([\d,]+)\*\*", text)
    return float(m.group(1).replace(",", "")) if m else None


# Issue 24's targets, stated against this run's figures.
TARGET_SAMPLE_NS = {"runtime": 400, "malloc preload": 500}
TARGET_MALLOC_1E4 = 1.10


def bpf_split(work, label):
    """The kernel side of one untimed run (t2-bpf-LABEL.err, the loader's -v):
    (ns a sample, ns an event, events a sample), or None."""
    import re
    try:
        text = open(os.path.join(work, f"t2-bpf-{label}.err")).read()
    except OSError:
        return None
    line = re.search(r"BPF run time in process \d+ \(kernel.bpf_stats_enabled\): (.*)", text)
    sample = line and re.search(r"memprof_samples? [^;]*\((\d+) ns a sample\)", line.group(1))
    event = line and re.search(r"memprof_events [^;]*\((\d+) ns an event\)", line.group(1))

    def stat(k):
        m = re.search(r"\b%s (\d+)" % k, text)
        return int(m.group(1)) if m else 0
    if not sample or not event or not stat("samples"):
        return None
    return (float(sample.group(1)), float(event.group(1)),
            (stat("promotes") + stat("deallocs")) / stat("samples"))


def uprobe_hits_per_sample(work, label):
    """Runs of the sample and events programs (one uprobe hit each) per
    sample, from the loader's -v line (t2-bpf-LABEL.err), or None."""
    import re
    try:
        text = open(os.path.join(work, f"t2-bpf-{label}.err")).read()
    except OSError:
        return None
    runs = [int(m) for m in re.findall(r"memprof_(?:samples?|events) [\d.]+ ms in (\d+) runs",
                                        text)]
    samples = re.search(r"\bsamples (\d+)", text)
    if not runs or not samples or not int(samples.group(1)):
        return None
    return sum(runs) / int(samples.group(1))


def t2_targets(mm, ns, ns_rounds):
    """Which of the cost targets this run meets, and for a missed one why:
    the kernel's share (its own accounting), the process's share (timed
    alone with a fake tracer, and in instructions), and what is left."""
    def verdict(ok):
        return "met" if ok else "missed"
    work = os.path.dirname(mm)
    rt = os.path.join(work, "t2-rt.jsonl")
    parts, why = [], []
    hosts = (("runtime", "rt", ns[0], ns_rounds[0], rt, "values.target_cpu_s",
              "values.tracer_samples", "the draws, the call stack, the entry and its record",
              fake_tracer_ir_rt(work), "workload-seed"),
             ("malloc preload", "mm", ns[1], ns_rounds[1], mm, "values.work_cpu_ns",
              "values.memprof_samples", "the draws, the call stack, the record, the"
              " sampled-block table, the free of a sampled block", fake_tracer_ir(work),
              "mallocmix"))
    for host, label, v, rr, path, metric, per, what, ir, prog in hosts:
        target = TARGET_SAMPLE_NS[host]
        split = bpf_split(work, label)
        inproc = per_sample_ns(path, "inprocess-1e-3", metric, per)
        kernel = split[0] + split[1] * split[2] if split else None
        fast = per_sample_ns_fastest(path, "attached-1e-3", metric,
                                     "values.memprof_ctl_samples" if label == "rt" else per)
        fast_ip = per_sample_ns_fastest(path, "inprocess-1e-3", metric, per)
        fast_part = None
        if fast is not None and fast_ip is not None:
            fast_part = (f"by the fastest round of each (the vCPU's faster speed)"
                         f" {fast:,.0f} ns against {target:,} ({verdict(fast <= target)}),"
                         f" {fast_ip:,.0f} of them in the process")
        if v is None:
            parts.append(f"the traced sample on the {host} against {target:,} ns: not"
                         f" measurable in this run (the rounds' spread hides it)")
            if kernel is not None and inproc:
                parts[-1] += (f"; its parts measured alone add up to {kernel + inproc[0]:,.0f}"
                              f" ns ({kernel:,.0f} in the kernel, {inproc[0]:,.0f} in the"
                              f" process, below)")
            if fast_part:
                parts[-1] += "; " + fast_part
        else:
            lo, hi = rr
            if hi <= target:
                how = "met in every round"
            elif lo > target:
                how = "missed in every round"
            else:
                how = (f"{verdict(v <= target)} by the median; the rounds"
                       f" ({lo:,.0f} to {hi:,.0f} ns) straddle the target")
            parts.append(f"{v:,.0f} ns per traced sample on the {host} at 1e-3 against"
                         f" {target:,} ({how})")
            if fast_part:
                parts[-1] += "; " + fast_part
            if hi <= target:
                continue
        if split is None:
            continue
        per_sample, per_event, events = split
        w = (f"on the {host}, the BPF programs take {kernel:,.0f} ns of each sample by the"
             f" kernel's own accounting ({per_sample:,.0f} ns for the sample, {per_event:,.0f}"
             f" ns an event, {events:.2f} events a sample)")
        if inproc:
            ip, ip_lo, ip_hi = inproc
            w += (f"; the process's own work for the sample ({what}), timed alone with a"
                  f" fake tracer ({prog} --fake-tracer, the last column), takes {ip:,.0f} ns"
                  f" (rounds {ip_lo:,.0f} to {ip_hi:,.0f})")
            if ir is not None:
                w += f", {ir:,.0f} instructions by callgrind"
            if ip > target:
                w += f": above the {target:,} ns target by itself, before any kernel work"
            elif ip + kernel > target:
                w += (f": with the kernel's share, {ip + kernel:,.0f} ns, above the"
                      f" {target:,} ns target")
            if label == "mm":
                thr = ratio(mm, "idle-thread", "detached", "values.work_cpu_ns")
                det = median(mm, "detached", "values.work_cpu_ns")
                smp = median(mm, "attached-1e-3", "values.memprof_samples")
                if thr and det and smp:
                    w += (f" (of it, glibc's multi-threaded mode, which the preload's flusher"
                          f" thread switches on for a single-threaded program and glibc never"
                          f" switches off: mallocmix --idle-thread against detached,"
                          f" {cost(thr)}")
                    if thr[1] > 1:
                        w += f", {(thr[0] - 1) * det / smp:,.0f} ns a sample at 1e-3"
                    w += ")"
            if v is not None and v - kernel - ip > 0:
                hits = uprobe_hits_per_sample(work, label)
                w += f"; the other {v - kernel - ip:,.0f} ns are what neither side measures alone:"
                if hits is not None:
                    w += (f" the batches' uprobe hits ({hits:.3f} a sample, about"
                          f" {hits * OPT_UPROBE_NS:,.0f} ns at {OPT_UPROBE_NS:,} ns a hit)")
                else:
                    w += " the batches' uprobe hits"
                w += (", the caches each side leaves cold for the other (the BPF programs"
                      " touch the loader's maps, the program its heap, between two samples),"
                      " and the difference of two medians of noisy rounds")
        elif v is not None:
            w += (f", and the other {v - kernel:,.0f} ns are the process's own work for the"
                  f" sample ({what}), the batches' uprobe hits and the cache misses")
        why.append(w)
    r4 = ratio(mm, "attached-1e-4", "detached", "values.work_cpu_ns")
    if r4:
        parts.append(f"mallocmix attached at 1e-4 {r4[0]:.2f}x against"
                     f" {TARGET_MALLOC_1E4:.2f}x ({verdict(r4[0] <= TARGET_MALLOC_1E4)})")
    if not parts:
        return ""
    s = "Targets (issue 24): " + "; ".join(parts) + "."
    if why:
        s += " Where the time goes: " + "; ".join(why) + "."
    if r4 and r4[0] > TARGET_MALLOC_1E4 and os.path.exists(mm):
        runs = load(mm)
        n = by_round(runs, "attached-1e-4", "values.memprof_samples")
        w = by_round(runs, "detached", "values.work_cpu_ns")
        if not isinstance(n, str) and not isinstance(w, str):
            keys = sorted(set(n) & set(w))
            if keys:
                samples = statistics.median(n[k] for k in keys)
                work_ns = statistics.median(w[k] for k in keys)
                s += (f" Why 1e-4 is missed: mallocmix allocates so fast that at 1e-4 it takes"
                      f" {samples:,.0f} samples in {work_ns / 1e6:,.0f} ms of work"
                      f" ({samples / work_ns * 1e9:,.0f} per second of CPU); within"
                      f" {TARGET_MALLOC_1E4:.2f}x a traced sample would have to cost under"
                      f" {(TARGET_MALLOC_1E4 - 1) * work_ns / samples:,.0f} ns in all,"
                      f" and at 1e-4 a sample finds its caches colder than at 1e-3.")
    return s


def pair_n(work):
    """N of the pair measurements (written by t2-attach.sh), or None."""
    try:
        return int(open(os.path.join(work, "t2-pair-n.txt")).read())
    except (OSError, ValueError):
        return None


def pair_sentence(work):
    """The malloc+free pair counts in words: what the preload and sampling add."""
    import pairs
    try:
        rows = pairs.load(os.path.join(work, "t2-pair.txt"))
    except (OSError, ValueError):
        return None
    full = {s: r for s, r in rows.items()
            if all(k in r for k in ("glibc", "detached", "inprocess-1e-4"))}
    if not full:
        return None
    added = [r["detached"][0] - r["glibc"][0] for r in full.values()]
    ratios = [r["detached"][0] / r["glibc"][0] for r in full.values()]
    samp = [r["inprocess-1e-4"][0] / r["detached"][0] for r in full.values()]
    span = (lambda v, f: f(min(v)) if f(min(v)) == f(max(v)) else
            f"{f(min(v))} to {f(max(v))}")
    sizes = ", ".join(f"{s:,}" for s in full)
    n = pair_n(work)
    per = [x for x in (pairs.ir_per_sample(r, "1e-4", n) for r in full.values())
           if x is not None] if n else []
    return (f"In instructions, the detached preload adds {span(added, lambda x: f'{x:.0f}')} Ir"
            f" to each malloc+free pair ({span(ratios, lambda x: f'{x:.2f}')}x plain glibc,"
            f" blocks of {sizes} B); in-process sampling at 1e-4 then takes a pair to"
            f" {span(samp, lambda x: f'{x:.3f}')}x the detached count" +
            (" (more for larger blocks, which span more sample points)"
             if len(samp) > 1 and samp == sorted(samp) and samp[0] < samp[-1] else "") +
            (f", about {span(per, lambda x: f'{x:,.0f}')} Ir per sample" if per else "") +
            "; the uprobe hit and BPF program of a traced sample are not in these counts.")


def t3(work):
    path = os.path.join(work, "t3", "t3.jsonl")
    if not os.path.exists(path):
        return "Nothing in this table was measured in this run."
    tools = ["bpftrace", "memleak", "heaptrack", "jemalloc", "memprof-1e-5", "memprof-1e-4"]
    got = {t: ratio(path, t, "glibc", "values.work_cpu_ns") for t in tools}
    got = {t: r for t, r in got.items() if r}
    wall = {t: ratio(path, t, "glibc", "values.work_ns") for t in tools}
    if not got:
        return "No tool completed a run."
    order = sorted(got, key=lambda t: got[t][0])
    s = "Ordered by CPU-time slowdown: " + ", ".join(
        f"{t} {got[t][0]:.2f}x" + (f" (wall {wall[t][0]:.2f}x)" if wall.get(t) else "")
        for t in order) + "."
    exact = [t for t in ("bpftrace", "memleak", "heaptrack") if t in got]
    if exact:
        s += (f" {', '.join(exact)} see every call, so their per-site figures are exact when"
              " their probes were all in place before the work began; they pay for it on"
              " every malloc and free.")
    zs = memprof_max_sd(work)
    if zs:
        worst = max(zs, key=lambda t: zs[t])
        s += (" memprof-bpf's per-site estimates are at most "
              f"{zs[worst]:.1f} standard deviations from the exact bytes ({worst} in this"
              " run's last round), " +
              ("inside the 5.7 sd bound OCaml's statistical tests use." if zs[worst] < 5.7
               else "beyond the 5.7 sd bound: a sign of bias worth investigating."))
    mp = [t for t in ("memprof-1e-5", "memprof-1e-4") if t in got]
    if mp and "bpftrace" in got:
        s += (f" memprof-bpf at {mp[0][8:]} costs {got['bpftrace'][0] / got[mp[0]][0]:.0f} times"
              " less CPU than bpftrace here, trading exact counts for Poisson estimates.")
    return s


def memprof_max_sd(work):
    """{label: largest |estimate - exact| / sd over the sites} for memprof-bpf."""
    import accuracy
    out = {}
    try:
        sites = accuracy.exact_totals(os.path.join(work, "t3", "exact.txt"))
    except (OSError, ValueError):
        return out
    for rate in ("1e-5", "1e-4"):
        try:
            with open(os.path.join(work, "t3", f"memprof-{rate}.folded")) as f:
                est, _ = accuracy.parse_memprof(f.read(), sites)
        except (OSError, ValueError):
            continue
        r = float(rate)
        out[f"memprof-{rate}"] = max(
            abs(est[s] - sites[s]["bytes"]) / (8 * (sites[s]["bytes"] / 8 / r) ** 0.5)
            for s in sites if sites[s]["bytes"])
    return out


def t4(work):
    out = []
    gc = os.path.join(work, "t4-gc.txt")
    if os.path.exists(gc):
        rows = [tuple(map(int, l.split())) for l in open(gc) if l.strip()]
        if len(rows) >= 2:
            first = rows[0][1]
            dev = max(abs(ir / first - 1) for _, ir, _ in rows)
            s = (f"From {rows[0][0]:,} to {rows[-1][0]:,} tracked old blocks the minor"
                 f" collections' instruction count moves by at most {dev * 100:.4f}%")
            s += (": flat, as the young-suffix design intends." if dev < 0.05 else
                  ": not flat; the minor collection depends on the number of old entries.")
            out.append(s)
    lj = os.path.join(work, "t4-loader.jsonl")
    if os.path.exists(lj):
        c = median(lj, "100000", "values.loader_run_cpu_pct")
        r = median(lj, "100000", "values.loader_rss_kb")
        if c is not None:
            out.append(f"At about 100k samples per second the loader itself uses {c:.1f}% of a"
                       f" CPU" + (f" and {r / 1024:.1f} MiB resident" if r else "") + "; the"
                       " per-sample work is in the target's uprobe handler, so it shows up as"
                       " target slowdown instead.")
    return " ".join(out) if out else "Nothing in this table was measured in this run."


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("t1", "t2", "t3", "t4"):
        sys.exit(__doc__)
    text = globals()[sys.argv[1]](sys.argv[2])
    print(f"**What this means.** {text}")


if __name__ == "__main__":
    main()
