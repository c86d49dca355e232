#!/usr/bin/env bash
# memprof-bpf injected into a running mallocmix (no LD_PRELOAD): the loader
# loads the malloc host into it, attaches, and the workload then runs.  The
# folded output goes to DIR/memprof-inject-RATE.folded; prints the
# workload's lines and the injection's pause of the thread it used
# (inject_pause_ms, from the loader's note) and interruptions.
# usage: memprof_inject.sh MALLOCMIX LOADER DIR ITERATIONS RATE
set -uo pipefail
. bench/lib/common.sh
mm=$1 loader=$2 dir=$3 iters=$4 rate=$5
out=$dir/inject-$rate.workload err=$dir/inject-$rate.err
"$mm" --wait-signal --iterations "$iters" >"$out" &
pid=$!
wait_for_line "$out" '^ready ' 30 || { echo "mallocmix never got ready" >&2; kill -9 $pid; exit 1; }
"$loader" attach $pid --rate "$rate" -o "$dir/memprof-inject-$rate.folded" -v 2>"$err" &
lpid=$!
if ! wait_for_line "$err" 'attached to [0-9]+ probe file' 60; then
	echo "memprof-bpf: $(grep '^memprof-bpf' "$err" | tail -n 1)" >&2
	kill -9 $pid $lpid 2>/dev/null
	exit 1
fi
kill -USR1 $pid
wait $pid || { echo "mallocmix failed" >&2; exit 1; }
wait $lpid || { echo "memprof-bpf: $(grep '^memprof-bpf' "$err" | tail -n 1)" >&2; exit 1; }
grep -v '^ready' "$out"
sed -n 's/.*paused \([0-9.]*\) ms.*/inject_pause_ms \1/p' "$err"
sed -n 's/.*injection: \([0-9]*\) interruption.*/inject_interruptions \1/p' "$err"
