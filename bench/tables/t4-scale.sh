#!/usr/bin/env bash
# Table 4: scale.  Minor-GC cost against the number of tracked old blocks,
# the loader's CPU and memory at growing sample rates, and bytes per tracked
# entry in the runtime and in the BPF maps.
set -uo pipefail
. bench/lib/common.sh
S="python3 bench/lib/summarize.py"
GCSCALE=$BUILD/bench/gcscale
SEED=$BUILD/workload-seed
LOADER=$BUILD/memprof-bpf
AR="python3 bench/lib/attach_run.py"
WORDS_PER_RECORD=4 # workload-seed short: 3 fields + header
TARGET_RATES="1000 10000 100000" # samples per second asked of the loader

if [ "$BENCH_QUICK" = 1 ]; then
	SIZES="1000 10000 100000" RUN_S=1
else
	SIZES="1000 10000 100000 1000000" RUN_S=3
fi

# ---- (a) minor collections against tracked old blocks (callgrind) ----
minor_ir() { # n mode
	valgrind --tool=callgrind --callgrind-out-file="$WORK/gcscale.$1.$2.cg" --collect-atstart=no \
		--toggle-collect=minor_phase "$GCSCALE" "$1" "$2" >"$WORK/gcscale.$1.$2.out" 2>"$WORK/gcscale.$1.$2.err"
	sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$WORK/gcscale.$1.$2.err"
}
echo "## Table 4: scale"
echo
echo "### Minor collections against tracked old blocks"
echo
echo "build/bench/gcscale N: N one-field records sampled at rate 1 and kept (N table entries,"
echo "all old), sampling stopped, then 50 minor collections of 2,000 garbage records each. Cost:"
echo "callgrind instruction count (Ir) of that phase alone, exact and free of machine noise."
echo "'no entries' is the same heap built without memprof starting."
echo
if [ ! -x "$GCSCALE" ]; then
	echo "$(na "$GCSCALE is not built (it needs build/librt.a and build/libmemprof.a)")"
elif ! command -v valgrind >/dev/null; then
	echo "$(na "valgrind is not installed")"
else
	echo "| tracked old blocks | entries in the table | Ir, 50 minor GCs | / N=1e3 | Ir with no entries | tracked / no entries | entries visited by the last minor update |"
	echo "|---|---|---|---|---|---|---|"
	first=""
	for n in $SIZES; do
		log "table 4: gcscale $n"
		ir=$(minor_ir $n track)
		ir0=$(minor_ir $n notrack)
		tracked=$(sed -n 's/^tracked //p' "$WORK/gcscale.$n.track.out")
		scan=$(sed -n 's/^last_minor_scan //p' "$WORK/gcscale.$n.track.out")
		if [ -z "$ir" ] || [ -z "$ir0" ]; then
			echo "| $n | $(na "gcscale failed: $(tail -n 1 "$WORK/gcscale.$n.track.err")") | | | | | |"
			continue
		fi
		[ -n "$first" ] || first=$ir
		python3 -c "
n,ir,ir0,first='$n',$ir,$ir0,$first
print(f'| {int(n):,} | ${tracked:-?} | {ir:,} | {ir/first:.4f} | {ir0:,} | {ir/ir0:.4f} | ${scan:-?} |')"
		echo "$n $ir $ir0" >>"$WORK/t4-gc.txt"
	done
fi
echo

# ---- (b) the loader at ~1k, 10k, 100k samples per second ----
echo "### The loader under load"
echo
la_missing=""
for f in "$SEED" "$LOADER"; do
	[ -x "$f" ] || la_missing="$f is not built"
done
if [ -z "$la_missing" ]; then
	# Calibrate: the records per second workload-seed short allocates here.
	$AR --stop-until-attached -- "$SEED" --kind short --tracked 0 --rate 0 --iterations 10000000 >"$WORK/t4-cal.out" 2>&1
	secs=$(sed -n 's/^target_s //p' "$WORK/t4-cal.out")
	if [ -z "$secs" ]; then
		la_missing="calibration run failed: $(tail -n 1 "$WORK/t4-cal.out")"
	fi
fi
if [ -z "$la_missing" ]; then
	wps=$(python3 -c "print(10000000 * $WORDS_PER_RECORD / $secs)")
	n=$(python3 -c "print(int(10000000 / $secs * $RUN_S))")
	spec=$WORK/t4-loader.spec
	printf 'detached\t%s --stop-until-attached -- %s --kind short --tracked 0 --rate 0 --iterations %s\n' \
		"$AR" "$SEED" "$n" >"$spec"
	for k in $TARGET_RATES; do
		rate=$(python3 -c "print('%.3g' % min(1.0, $k / $wps))")
		echo "$k $rate" >>"$WORK/t4-rates.txt"
		printf '%s\t%s --loader %s --rate %s --out /dev/null --bpf-maps %s --stop-until-attached -- %s --kind short --tracked 0 --rate 0 --iterations %s\n' \
			"$k" "$AR" "$LOADER" "$rate" "$WORK/t4-maps-$k.json" "$SEED" "$n" >>"$spec"
	done
	log "table 4: loader load ($n records per run, $REPS rounds)"
	python3 bench/lib/abrun.py "$spec" "$WORK/t4-loader.jsonl" --reps "$REPS"
	echo "workload-seed short (--rate 0) traced by build/memprof-bpf for about $RUN_S s, at the rate"
	echo "that gives about 1k, 10k and 100k samples per second here (calibrated from a detached run:"
	printf '%.3g words per second). CPU%%: the loader'"'"'s CPU time (/proc/PID/task/*/schedstat) over the traced\n' "$wps"
	echo "run, divided by its wall time; the BPF programs themselves run in the target's context, on"
	echo "its CPU time. RSS: the loader's VmRSS during the run, and its peak (ru_maxrss, start-up"
	echo "included). Medians of $REPS rounds."
	echo
	echo "| asked samples/s | rate | achieved samples/s | loader CPU % | loader RSS (KiB) | loader peak RSS (KiB) | target CPU time vs detached |"
	echo "|---|---|---|---|---|---|---|"
	while read -r k rate; do
		ach=$(python3 - "$WORK/t4-loader.jsonl" "$k" <<'PY'
import json, statistics, sys
v = [r["values"] for r in map(json.loads, open(sys.argv[1])) if r["label"] == sys.argv[2] and r["rc"] == 0]
v = [x["memprof_ctl_samples"] / x["target_s"] for x in v if x.get("target_s") and "memprof_ctl_samples" in x]
print(f"{statistics.median(v):,.0f}" if v else "not available: no successful run")
PY
		)
		cpu=$($S median "$WORK/t4-loader.jsonl" "$k" --metric values.loader_run_cpu_pct --fmt %.2f)
		rss=$($S median "$WORK/t4-loader.jsonl" "$k" --metric values.loader_rss_kb --fmt %.0f)
		peak=$($S median "$WORK/t4-loader.jsonl" "$k" --metric values.loader_maxrss_kb --fmt %.0f)
		slow=$($S ratio "$WORK/t4-loader.jsonl" "$k" detached --metric values.target_cpu_s)
		echo "| $k | $rate | $ach | $cpu | $rss | $peak | $slow |"
	done <"$WORK/t4-rates.txt"
else
	echo "$(na "$la_missing")"
fi
echo

# ---- (c) bytes per tracked entry ----
echo "### Bytes per tracked entry"
echo
entry_size=$(llvm-dwarfdump --name=entry --show-children=false "$BUILD/libmemprof.a" 2>/dev/null |
	awk '/DW_TAG_structure_type/ {s=1} s && /DW_AT_byte_size/ {gsub(/[()]/, "", $2); print $2; exit}')
[ -n "$entry_size" ] && entry_size=$((entry_size))
amort=""
if [ -x "$GCSCALE" ]; then
	big=$(echo $SIZES | awk '{print $NF}')
	"$GCSCALE" $big track >"$WORK/mem.track.out" 2>&1
	"$GCSCALE" $big notrack >"$WORK/mem.notrack.out" 2>&1
	a=$(sed -n 's/^heap_bytes_in_use //p' "$WORK/mem.track.out")
	b=$(sed -n 's/^heap_bytes_in_use //p' "$WORK/mem.notrack.out")
	[ -n "$a" ] && [ -n "$b" ] && amort=$(python3 -c "print(f'{($a - $b) / $big:.1f} (malloc in use with {$big:,} entries minus without, / {$big:,})')")
fi
echo "| where | bytes per tracked block | how |"
echo "|---|---|---|"
echo "| runtime: struct entry | ${entry_size:-$(na "no DWARF for struct entry in $BUILD/libmemprof.a")} | sizeof, from the core's DWARF (llvm-dwarfdump) |"
echo "| runtime: table, amortised | ${amort:-$(na "gcscale did not run")} | build/bench/gcscale, mallinfo2 |"
maps=$(ls "$WORK"/t4-maps-*.json 2>/dev/null | head -n 1)
if [ -n "$maps" ]; then
	python3 - "$maps" <<'PY'
import json, sys
maps = json.load(open(sys.argv[1]))
if isinstance(maps, dict) or not maps:
    print(f"| BPF maps | not available: {maps.get('error') if isinstance(maps, dict) else 'no map found'} | |")
    sys.exit()
for m in maps:
    if m.get("name") == "block_slots":
        per = m["bytes_memlock"] / m["max_entries"]
        print(f"| BPF map `block_slots` ({m['type']}, the tracked blocks' home slots) | {per:.0f} | memlock {m['bytes_memlock']:,} B / {m['max_entries']:,} slots of {m['bytes_value']} B, allocated when the loader attaches |")
    if m.get("name") == "blocks_overflow":
        print(f"| BPF map `blocks_overflow` ({m['type']}, blocks whose home slot was taken) | key {m['bytes_key']} + value {m['bytes_value']} B and an element header, for overflowing blocks only | elements allocated on use (no preallocation), up to {m['max_entries']:,} |")
total = sum(m["bytes_memlock"] for m in maps)
print()
print("All maps of the loader (bpftool map show, while attached):")
print()
print("| map | type | key B | value B | max entries | memlock B | memlock / entry |")
print("|---|---|---|---|---|---|---|")
for m in maps:
    print(f"| {m.get('name')} | {m['type']} | {m['bytes_key']} | {m['bytes_value']} | {m['max_entries']:,} | {m['bytes_memlock']:,} | {m['bytes_memlock'] / m['max_entries']:.0f} |")
print(f"| total | | | | | {total:,} | |")
PY
else
	echo "| BPF maps | $(na "${la_missing:-no map listing was saved}") | |"
fi
echo
python3 bench/lib/explain.py t4 "$WORK" 2>/dev/null || true
