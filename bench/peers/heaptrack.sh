#!/usr/bin/env bash
# heaptrack running mallocmix; allocation counts by stack go to
# DIR/heaptrack.folded.  usage: heaptrack.sh MALLOCMIX DIR ITERATIONS
set -uo pipefail
mm=$1 dir=$2 iters=$3
command -v heaptrack >/dev/null || { echo "heaptrack is not installed" >&2; exit 1; }
rm -f "$dir"/heaptrack.data*
heaptrack -o "$dir/heaptrack.data" "$mm" --iterations "$iters" >"$dir/heaptrack.workload" 2>"$dir/heaptrack.err" ||
	{ echo "heaptrack: $(tail -n 1 "$dir/heaptrack.err")" >&2; exit 1; }
data=$(ls "$dir"/heaptrack.data* | head -n 1)
heaptrack_print -f "$data" -F "$dir/heaptrack.folded" --flamegraph-cost-type allocations >/dev/null 2>&1
grep -v '^heaptrack' "$dir/heaptrack.workload"
