#!/usr/bin/env python3
"""Figures from an abrun.py result file, formatted for a markdown cell.

usage:
  summarize.py ratio   RESULTS LABEL BASE [--metric M]
      median over rounds of M(LABEL) / M(BASE) in the same round, with the
      range of the per-round ratios:  "1.23 (1.20-1.27)"
  summarize.py median  RESULTS LABEL [--metric M] [--scale K] [--fmt F]
      median of M(LABEL) * K
  summarize.py perunit RESULTS LABEL BASE --per M2 [--metric M] [--scale K]
      median over rounds of (M(LABEL) - M(BASE)) / M2(LABEL) * K
      (e.g. the extra nanoseconds per sample); --per-count N divides by the
      constant N instead.  When some round's difference is not positive the
      figure is below the noise and is reported as not available.
  summarize.py check   RESULTS LABEL...
      prints nothing and exits 0 when every run of every LABEL succeeded;
      otherwise prints "not available: <first error>" and exits 1

M is wall_s, cpu_s or values.KEY (a "KEY NUMBER" line the command printed).
Any figure that cannot be computed prints "not available: <reason>".
"""
import json
import statistics
import sys

MIN_ROUNDS = 1


def load(path):
    runs = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                runs.append(json.loads(line))
    return runs


def metric_of(run, metric):
    if metric.startswith("values."):
        return run["values"].get(metric[len("values."):])
    return run.get(metric)


def by_round(runs, label, metric):
    """{round: value} for LABEL, or an error string."""
    out = {}
    errors = []
    for r in runs:
        if r["label"] != label:
            continue
        if r["rc"] != 0:
            errors.append(r.get("error", f"exit status {r['rc']}"))
            continue
        v = metric_of(r, metric)
        if v is None:
            errors.append(f"{label} printed no {metric[len('values.'):]}")
            continue
        out[r["round"]] = float(v)
    if not out:
        if errors:
            return errors[0]
        return f"no run labelled {label}"
    return out


def na(reason):
    print(f"not available: {reason}")
    sys.exit(0)


def fmt_num(x, fmt):
    return fmt % x


def main():
    args = sys.argv[1:]
    opts = {"--metric": "wall_s", "--scale": "1", "--fmt": None, "--per": None,
            "--per-count": None}
    pos = []
    i = 0
    while i < len(args):
        if args[i] in opts and i + 1 < len(args):
            opts[args[i]] = args[i + 1]
            i += 2
        else:
            pos.append(args[i])
            i += 1
    if len(pos) < 3:
        sys.exit(__doc__)
    cmd, path = pos[0], pos[1]
    runs = load(path)
    metric, scale = opts["--metric"], float(opts["--scale"])

    if cmd == "check":
        for label in pos[2:]:
            got = by_round(runs, label, "wall_s")
            if isinstance(got, str):
                print(f"not available: {got}")
                sys.exit(1)
            bad = [r for r in runs if r["label"] == label and r["rc"] != 0]
            if bad:
                print(f"not available: {bad[0].get('error')}")
                sys.exit(1)
        return

    if cmd == "median":
        got = by_round(runs, pos[2], metric)
        if isinstance(got, str):
            na(got)
        fmt = opts["--fmt"] or "%.3g"
        print(fmt_num(statistics.median(got.values()) * scale, fmt))
        return

    if len(pos) < 4:
        sys.exit(__doc__)
    a = by_round(runs, pos[2], metric)
    b = by_round(runs, pos[3], metric)
    if isinstance(a, str):
        na(a)
    if isinstance(b, str):
        na(b)
    rounds = sorted(set(a) & set(b))
    if len(rounds) < MIN_ROUNDS:
        na("no round where both ran")

    if cmd == "ratio":
        if any(b[r] <= 0 for r in rounds):
            na(f"{pos[3]} measured zero")
        ratios = [a[r] / b[r] for r in rounds]
        fmt = opts["--fmt"] or "%.2f"
        print(f"{fmt % statistics.median(ratios)} ({fmt % min(ratios)}-{fmt % max(ratios)})")
        return

    if cmd == "perunit":
        if opts["--per-count"]:
            per = {r: float(opts["--per-count"]) for r in rounds}
        elif opts["--per"]:
            per = by_round(runs, pos[2], opts["--per"])
        else:
            sys.exit("summarize: perunit needs --per or --per-count")
        if isinstance(per, str):
            na(per)
        vals = [(a[r] - b[r]) / per[r] * scale for r in rounds if per.get(r)]
        if not vals:
            na(f"{opts['--per']} was zero in every round")
        if min(vals) <= 0:
            na("the difference is within the round-to-round noise "
               f"(per-round {fmt_num(min(vals), '%.0f')} to {fmt_num(max(vals), '%.0f')})")
        fmt = opts["--fmt"] or "%.0f"
        print(fmt % statistics.median(vals))
        return

    sys.exit(__doc__)


if __name__ == "__main__":
    main()
