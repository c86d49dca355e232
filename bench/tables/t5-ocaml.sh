#!/usr/bin/env bash
# Table 5: the OCaml host (runtime-probes/hosts/ocaml) on the OCaml sites
# program (tests/ocaml/progs/sites.ml, unpaced): the adapter linked in and
# detached against the same program without it (callgrind Ir), attached at
# 1e-5 and 1e-4 against detached (CPU time), and the cost of one traced
# sample (extra CPU time over the samples the control block counted).
set -uo pipefail
. bench/lib/common.sh
PROG=$BUILD/tests/ocaml/progs/sites
PLAIN=$BUILD/bench/ocaml-sites-plain
LOADER=$BUILD/memprof-bpf
AR="python3 bench/lib/attach_run.py"
if [ "$BENCH_QUICK" = 1 ]; then
	IR_N=300000 CPU_N=3000000
else
	IR_N=2000000 CPU_N=10000000
fi

echo "## Table 5: the OCaml host (OCaml 4.13, Gc.Memprof)"
echo
for f in "$PROG" "$PLAIN" "$LOADER"; do
	if [ ! -x "$f" ]; then
		echo "not available: $f is not built"
		exit 0
	fi
done

# The program waits for its go file (tests/ocaml/progs/gate.ml): there at once.
touch "$WORK/t5-ready.go"

ir() { # prog: Ir of the whole program (every thread), N iterations, unpaced
	local out=$WORK/t5-cg.$$
	valgrind --tool=callgrind --callgrind-out-file="$out" "$1" "$IR_N" "$WORK/t5-ready" 0 \
		>/dev/null 2>&1 || return 1
	callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}'
	rm -f "$out"
}
ir_plain=$(ir "$PLAIN") ir_adapter=$(ir "$PROG")

# CPU time of N iterations: detached, or traced for the whole run.
cpu_runs=$WORK/t5-cpu.txt
: >"$cpu_runs"
for ((r = 0; r < REPS; r++)); do
	for conf in detached 1e-5 1e-4; do
		if [ "$conf" = detached ]; then
			res=$($AR -- "$PROG" "$CPU_N" "$WORK/t5-ready" 0 2>/dev/null)
		else
			res=$($AR --loader "$LOADER" --rate "$conf" --stop-until-attached \
				--out /dev/null -- "$PROG" "$CPU_N" "$WORK/t5-ready" 0 2>/dev/null)
		fi
		cpu=$(awk '$1 == "target_cpu_s" {print $2}' <<<"$res")
		n=$(awk '$1 == "memprof_ctl_samples" {print $2}' <<<"$res")
		echo "$r $conf ${cpu:-nan} ${n:-0}" >>"$cpu_runs"
	done
done

python3 - "$cpu_runs" "$ir_plain" "$ir_adapter" "$IR_N" "$CPU_N" <<'PY'
import statistics, sys
path, ir_plain, ir_adapter, ir_n, cpu_n = sys.argv[1:]
runs = {}
for line in open(path):
    r, conf, cpu, n = line.split()
    runs.setdefault(int(r), {})[conf] = (float(cpu), int(n))
def med(xs):
    xs = [x for x in xs if x == x]
    return (statistics.median(xs), min(xs), max(xs)) if xs else None
print("| figure | value |")
print("|---|---|")
try:
    a, b = int(ir_plain), int(ir_adapter)
    print(f"| detached, adapter linked in vs without it ({int(ir_n):,} iterations, callgrind Ir, every thread) | {b:,} vs {a:,} Ir: {100 * (b - a) / a:+.3f}% |")
except ValueError:
    print("| detached Ir | not available: callgrind failed |")
det = med([runs[r]["detached"][0] for r in runs if "detached" in runs[r]])
if det:
    print(f"| detached CPU, {int(cpu_n):,} iterations (median, range) | {det[0]:.3f} s ({det[1]:.3f}-{det[2]:.3f}) |")
for rate in ("1e-5", "1e-4"):
    ratios, per = [], []
    samples = []
    for r in runs:
        if rate in runs[r] and "detached" in runs[r]:
            c, n = runs[r][rate]
            d = runs[r]["detached"][0]
            ratios.append(c / d)
            samples.append(n)
            if n:
                per.append((c - d) / n * 1e6)
    m = med(ratios)
    if m:
        print(f"| attached at {rate} vs detached, CPU (median ratio, range) | {m[0]:.3f} ({m[1]:.3f}-{m[2]:.3f}), {statistics.median(samples):,.0f} samples |")
    p = med(per)
    if p:
        print(f"| cost per traced sample at {rate} (extra CPU / samples) | {p[0]:.2f} us ({p[1]:.2f}-{p[2]:.2f}) |")
PY
echo
echo "What this means: detached, the adapter costs its helper thread's wake-ups (one every 50 ms)"
echo "and one load per minor collection; attached, each sample runs an OCaml callback, captures"
echo "the OCaml call stack (Gc.Memprof) and hits a uprobe. Compare the per-sample cost with the"
echo "rt and malloc hosts' in Table 2."
