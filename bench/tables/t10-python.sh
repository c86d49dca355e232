#!/usr/bin/env bash
# Table 10: the Python host (runtime-probes/hosts/python, injected into
# Debian's /usr/bin/python3 3.11) on a dict, json.dumps, json.loads loop
# (bench/python/json_loop.py, which times its loop itself: getrusage, every
# thread of the process).  Configurations, run once per round in alternating
# order: plain; detached (the library injected by an attach, then detached:
# loaded, hooks put back, no tracer); attached at 1e-5 and 1e-4 (the hooks
# in for the whole loop); `python3 -X tracemalloc`.  Two more split the
# attached cost without a kernel: the library preloaded with a fake tracer
# (its semaphores raised and its rate written from inside, probe sites
# nops): at a rate that never samples (the wrappers alone) and at 1e-4
# (everything but the uprobe and the BPF programs).  Then callgrind counts
# the same split in instructions (plain, wrappers alone, fake tracer at
# 1e-4), with the per-sample cost of the native unwind, the Python frame
# walk and the rest (core, probe batch).
set -uo pipefail
. bench/lib/common.sh
PY=/usr/bin/python3
PROG=bench/python/json_loop.py
HOST=$BUILD/libmemprof-python.so
LOADER=$BUILD/memprof-bpf
AR="python3 bench/lib/attach_run.py"
if [ "$BENCH_QUICK" = 1 ]; then
	N=2000 IR_N=200
else
	N=8000 IR_N=1000
fi
# A rate that never samples in N rounds: the hooks run, the countdown polls.
NEVER=1e-12

echo "## Table 10: the Python host (CPython 3.11, pymalloc domains)"
echo
for f in "$PY" "$HOST" "$LOADER"; do
	if [ ! -e "$f" ]; then
		na "$f is not built (or not installed)"
		exit 0
	fi
done
HOST=$(realpath "$HOST")

runs=$WORK/t10-runs.txt
: >"$runs"
confs=(plain detached 1e-5 1e-4 tracemalloc fake-hooks fake-1e-4)
one() { # conf round: one run, one line "conf round user sys samples" in $runs
	local conf=$1 r=$2 gate=$WORK/t10-gate-$1-$2 res
	rm -f "$gate" "$gate".go "$gate".loader
	case $conf in
	plain) res=$($PY "$PROG" "$N" 2>/dev/null) ;;
	tracemalloc) res=$($PY -X tracemalloc "$PROG" "$N" 2>/dev/null) ;;
	detached)
		res=$($AR --loader "$LOADER" --rate 1e-4 --gate "$gate" --detach-first \
			--probe-object "$HOST" --out /dev/null -- $PY "$PROG" "$N" --gate "$gate" \
			--hooks off 2>/dev/null)
		;;
	fake-hooks | fake-1e-4)
		res=$(LD_PRELOAD=$HOST $PY "$PROG" "$N" --fake-tracer \
			"$([ "$conf" = fake-hooks ] && echo $NEVER || echo 1e-4)" "$HOST" 2>/dev/null)
		;;
	*)
		res=$($AR --loader "$LOADER" --rate "$conf" --gate "$gate" --probe-object "$HOST" \
			--out /dev/null -- $PY "$PROG" "$N" --gate "$gate" --hooks on 2>/dev/null)
		;;
	esac
	local u s n
	u=$(awk '$1 == "user_s" {print $2}' <<<"$res")
	s=$(awk '$1 == "sys_s" {print $2}' <<<"$res")
	n=$(awk '$1 == "memprof_ctl_samples" || $1 == "samples" {print $2}' <<<"$res" | tail -n 1)
	echo "$conf $r ${u:-nan} ${s:-nan} ${n:-0}" >>"$runs"
}
for ((r = 0; r < REPS; r++)); do
	if ((r % 2 == 0)); then
		order=("${confs[@]}")
	else
		order=()
		for ((i = ${#confs[@]} - 1; i >= 0; i--)); do order+=("${confs[i]}"); done
	fi
	for conf in "${order[@]}"; do
		one "$conf" "$r"
	done
done

# Callgrind: whole process, the same program with fewer rounds.
# ir TAG ENV... COMMAND...: the Ir total; the program's output and the
# annotations (inclusive, self) go to $WORK/t10-TAG.{out,txt,self.txt}.
ir() {
	local tag=$1 out=$WORK/t10-cg-$1
	shift
	env "$@" >"$WORK/t10-$tag.out" 2>/dev/null || return 1
	callgrind_annotate --threshold=100 --inclusive=yes "$out" >"$WORK/t10-$tag.txt" 2>/dev/null
	callgrind_annotate --threshold=100 "$out" >"$WORK/t10-$tag.self.txt" 2>/dev/null
	awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}' "$WORK/t10-$tag.txt"
}
VG="valgrind --tool=callgrind"
ir_plain=$(ir plain PYTHONHASHSEED=0 $VG --callgrind-out-file=$WORK/t10-cg-plain $PY "$PROG" "$IR_N")
ir_hooks=$(ir hooks PYTHONHASHSEED=0 LD_PRELOAD=$HOST $VG --callgrind-out-file=$WORK/t10-cg-hooks \
	$PY "$PROG" "$IR_N" --fake-tracer $NEVER "$HOST")
ir_r4=$(ir r4 PYTHONHASHSEED=0 LD_PRELOAD=$HOST $VG --callgrind-out-file=$WORK/t10-cg-r4 \
	$PY "$PROG" "$IR_N" --fake-tracer 1e-4 "$HOST")

# Detached: the library loaded, no tracer ever (the watcher polls, the hooks stay out).
ir_det=$(ir detached PYTHONHASHSEED=0 LD_PRELOAD=$HOST $VG --callgrind-out-file=$WORK/t10-cg-detached \
	$PY "$PROG" "$IR_N")

python3 bench/lib/t10_summary.py "$runs" "$N" "$IR_N" "$WORK" "${ir_plain:-}" "${ir_hooks:-}" "${ir_r4:-}" \
	"${ir_det:-}"
echo
echo "What this means: attached, every allocation of the MEM and OBJ domains pays a countdown"
echo "and a tail call to pymalloc, and CPython its devirtualised call to pymalloc (its PGO build"
echo "calls pymalloc itself while a domain's allocator is the default); free stays CPython's own"
echo "(a sampled block comes from the RAW domain, whose free is watched: a filter look-up)."
echo "Detached, the hooks are out: only the watcher's look at the semaphore every 20 ms is left."
echo "Each sample unwinds the native stack (libunwind), walks the Python frames (one index"
echo "look-up per frame), queues the sample, and once per batch hits the uprobe (the kernel's"
echo "side: attached against the fake tracer). docs/python-host.md, \"Cost\"."
