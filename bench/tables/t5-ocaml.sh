#!/usr/bin/env bash
# Table 5: the OCaml host (runtime-probes/hosts/ocaml) on the OCaml sites
# program (tests/ocaml/progs/sites.ml, unpaced): the adapter linked in and
# detached against the same program without it (callgrind Ir, 4.13), then,
# for 4.13, 5.3 and 5.3 with four domains (bench/ocaml/sites_domains.ml),
# attached at 1e-5 and 1e-4 against detached (CPU time of the whole
# process) and the cost of one traced sample (extra CPU time over the
# samples the control block counted).  The same sites program never linked
# with the package (4.13 and 5.3, "unmodified") is attached by injecting
# the OCaml host (attach_run.py --gate: attached while it waits at its
# gate, CPU time counted from the go), and also run detached after a
# detach (the host loaded and its hooks put back).
set -uo pipefail
. bench/lib/common.sh
PROG=$BUILD/tests/ocaml/progs/sites
PLAIN=$BUILD/bench/ocaml-sites-plain
PROG5=$BUILD/tests/ocaml5/progs/sites
DOMAINS5=$BUILD/bench/ocaml5-sites-domains
PLAIN5=$BUILD/tests/ocaml5/progs/sites-plain
HOST4=$BUILD/libmemprof-ocaml4-attach.so
HOST5=$BUILD/libmemprof-ocaml5-attach.so
LOADER=$BUILD/memprof-bpf
AR="python3 bench/lib/attach_run.py"
if [ "$BENCH_QUICK" = 1 ]; then
	IR_N=300000 CPU_N=3000000
else
	IR_N=2000000 CPU_N=10000000
fi

echo "## Table 5: the OCaml host (OCaml 4.13 and 5.3, Gc.Memprof)"
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

# CPU time of N iterations: detached, or traced for the whole run.  Each
# program is a row: name, then its command (READY stands for the go file's
# prefix); a program that is not built is left out, and said so.
cpu_runs=$WORK/t5-cpu.txt
: >"$cpu_runs"
# name|program|arguments|host library ("-": linked with the package)
rows=("4.13|$PROG|$CPU_N READY 0|-" "5.3|$PROG5|$CPU_N READY 0|-"
	"5.3, 4 domains|$DOMAINS5|$CPU_N READY 4|-"
	"4.13 unmodified|$PLAIN|$CPU_N READY 0|$HOST4" "5.3 unmodified|$PLAIN5|$CPU_N READY 0|$HOST5")
missing=()
for ((r = 0; r < REPS; r++)); do
	for row in "${rows[@]}"; do
		IFS='|' read -r name prog args host <<<"$row"
		if [ ! -x "$prog" ] || { [ "$host" != - ] && [ ! -r "$host" ]; }; then
			((r == 0)) && missing+=("$name: $prog or $host is not built")
			continue
		fi
		confs="detached 1e-5 1e-4"
		[ "$host" != - ] && confs="detached after-detach 1e-5 1e-4"
		for conf in $confs; do
			# A gate of its own for each injected run: its go file must not exist yet.
			gate=$WORK/t5-gate-$r-$conf
			rm -f "$gate" "$gate".go "$gate".loader
			if [ "$host" = - ] || [ "$conf" = detached ]; then
				a=${args//READY/$WORK/t5-ready}
			else
				a=${args//READY/$gate}
			fi
			# shellcheck disable=SC2086 # args are words
			if [ "$conf" = detached ]; then
				res=$($AR -- "$prog" $a 2>/dev/null)
			elif [ "$host" = - ]; then
				res=$($AR --loader "$LOADER" --rate "$conf" --stop-until-attached \
					--out /dev/null -- "$prog" $a 2>/dev/null)
			elif [ "$conf" = after-detach ]; then
				res=$($AR --loader "$LOADER" --rate 1e-4 --gate "$gate" --detach-first \
					--probe-object "$host" --out /dev/null -- "$prog" $a 2>/dev/null)
			else
				res=$($AR --loader "$LOADER" --rate "$conf" --gate "$gate" \
					--probe-object "$host" --out /dev/null -- "$prog" $a 2>/dev/null)
			fi
			cpu=$(awk '$1 == "target_cpu_s" {print $2}' <<<"$res")
			n=$(awk '$1 == "memprof_ctl_samples" {print $2}' <<<"$res")
			echo "${name// /_} $r $conf ${cpu:-nan} ${n:-0}" >>"$cpu_runs"
		done
	done
done

python3 - "$cpu_runs" "$ir_plain" "$ir_adapter" "$IR_N" "$CPU_N" <<'PY'
import statistics, sys
path, ir_plain, ir_adapter, ir_n, cpu_n = sys.argv[1:]
runs = {}
order = []
for line in open(path):
    prog, r, conf, cpu, n = line.split()
    if prog not in runs:
        order.append(prog)
    runs.setdefault(prog, {}).setdefault(int(r), {})[conf] = (float(cpu), int(n))
def med(xs):
    xs = [x for x in xs if x == x]
    return (statistics.median(xs), min(xs), max(xs)) if xs else None
try:
    a, b = int(ir_plain), int(ir_adapter)
    print(f"Detached, adapter linked in vs without it (OCaml 4.13, {int(ir_n):,} iterations, callgrind Ir, every thread): {b:,} vs {a:,} Ir, {100 * (b - a) / a:+.3f}%.")
except ValueError:
    print("Detached Ir: not available (callgrind failed).")
print()
print(f"CPU time of the whole process for {int(cpu_n):,} iterations (median, range); ratios against detached in the same round.")
print()
print("| program | detached CPU s | detached after a detach / detached | attached 1e-5 / detached | samples | us per sample | attached 1e-4 / detached | samples | us per sample |")
print("|---|---|---|---|---|---|---|---|---|")
for prog in order:
    rr = runs[prog]
    det = med([rr[r]["detached"][0] for r in rr if "detached" in rr[r]])
    cells = [prog.replace("_", " "), f"{det[0]:.3f} ({det[1]:.3f}-{det[2]:.3f})" if det else "-"]
    after = med([rr[r]["after-detach"][0] / rr[r]["detached"][0] for r in rr
                 if "after-detach" in rr[r] and "detached" in rr[r] and rr[r]["detached"][0] > 0])
    cells.append(f"{after[0]:.3f} ({after[1]:.3f}-{after[2]:.3f})" if after else "-")
    for rate in ("1e-5", "1e-4"):
        ratios, per, samples = [], [], []
        for r in rr:
            if rate in rr[r] and "detached" in rr[r]:
                c, n = rr[r][rate]
                d = rr[r]["detached"][0]
                if c == c and d == d and d > 0:
                    ratios.append(c / d)
                    samples.append(n)
                    if n:
                        per.append((c - d) / n * 1e6)
        m, p = med(ratios), med(per)
        cells.append(f"{m[0]:.3f} ({m[1]:.3f}-{m[2]:.3f})" if m else "-")
        cells.append(f"{statistics.median(samples):,.0f}" if samples else "-")
        cells.append(f"{p[0]:.2f} ({p[1]:.2f}-{p[2]:.2f})" if p else "-")
    print("| " + " | ".join(cells) + " |")
PY
for m in "${missing[@]}"; do
	echo
	echo "not available: $m"
done
echo
echo "What this means: detached, the adapter costs its helper thread's wake-ups (one every 50 ms)"
echo "and one load per minor collection; attached, each sample runs an OCaml callback, captures"
echo "the OCaml call stack (Gc.Memprof) and hits a uprobe. With four domains on this 2-core"
echo "machine, the domains wait for each other at every minor collection (stop the world), with"
echo "or without the tracer; memprof:gc fires at minor collections only on 5.x (docs/ocaml-host.md,"
echo "\"The gc probe\": at every major slice it cost four domains 1.12-1.15x). Unmodified: the"
echo "same program without the package, its OCaml host injected; after a detach its hooks are"
echo "back and the library stays loaded, idle. Compare the per-sample cost with the rt and"
echo "malloc hosts' in Table 2."
