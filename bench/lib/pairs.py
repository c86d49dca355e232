#!/usr/bin/env python3
"""Table 2's malloc+free pair figures, from the callgrind counts.

usage: pairs.py table PAIRS_FILE N

PAIRS_FILE has one line per measurement, "SIZE CONFIG IR_PER_PAIR SAMPLES",
where CONFIG is glibc, detached or inprocess-RATE and SAMPLES is the number
of samples taken over N pairs (the 2N run's minus the N run's).  `table`
prints the markdown table; a missing figure reads "not available".
"""
import sys

RATES = ("1e-5", "1e-4")


def load(path):
    """{size: {config: (ir_per_pair, samples)}}, sizes in file order."""
    out = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) != 4:
                continue
            size, config, ir, samples = parts
            out.setdefault(int(size), {})[config] = (float(ir), int(samples))
    return out


def ir_per_sample(row, rate, n):
    """Ir one in-process sample adds, or None when there is too little to say."""
    got, base = row.get(f"inprocess-{rate}"), row.get("detached")
    if not got or not base or got[1] == 0:
        return None
    return (got[0] - base[0]) * n / got[1]


def table(path, n):
    rows = load(path)
    na = "not available"
    head = ("| size (B) | glibc: Ir per pair (a) | preload detached: Ir per pair (b) | (b)/(a) | " +
            " | ".join(f"sampling at {r} in process: Ir per pair (c) | (c)/(b) | samples"
                       for r in RATES) +
            " | Ir per in-process sample (at 1e-4) |")
    print(head)
    print("|" + "---|" * head.count(" | ") + "---|")
    for size, row in rows.items():
        a, b = row.get("glibc"), row.get("detached")
        cells = [f"{size:,}", f"{a[0]:.1f}" if a else na, f"{b[0]:.1f}" if b else na,
                 f"{b[0] / a[0]:.3f}" if a and b else na]
        for r in RATES:
            c = row.get(f"inprocess-{r}")
            cells += [f"{c[0]:.1f}" if c else na, f"{c[0] / b[0]:.3f}" if c and b else na,
                      f"{c[1]:,}" if c else na]
        per = ir_per_sample(row, "1e-4", n)
        cells.append(f"{per:,.0f}" if per is not None else na)
        print("| " + " | ".join(cells) + " |")


def main():
    if len(sys.argv) != 4 or sys.argv[1] != "table":
        sys.exit(__doc__)
    try:
        n = int(sys.argv[3])
        table(sys.argv[2], n)
    except (OSError, ValueError) as e:
        print(f"not available: {e}")


if __name__ == "__main__":
    main()
