#!/usr/bin/env bash
# jemalloc's sampling heap profiler (lg_prof_sample:19, cumulative, dump at
# exit) on mallocmix; jeprof's per-function cumulative bytes go to
# DIR/jemalloc.out.  usage: jemalloc.sh MALLOCMIX DIR ITERATIONS [off]
# With "off", jemalloc without profiling (the allocator alone).
set -uo pipefail
mm=$1 dir=$2 iters=$3 mode=${4:-prof}
lib=$(ls /usr/lib/*/libjemalloc.so.2 2>/dev/null | head -n 1)
[ -n "$lib" ] || { echo "libjemalloc2 is not installed" >&2; exit 1; }
if [ "$mode" = off ]; then
	LD_PRELOAD=$lib "$mm" --iterations "$iters"
	exit
fi
rm -f "$dir"/jeprof.*.heap
LD_PRELOAD=$lib MALLOC_CONF="prof:true,prof_accum:true,lg_prof_sample:19,prof_final:true,prof_prefix:$dir/jeprof" \
	"$mm" --iterations "$iters" >"$dir/jemalloc.workload" || exit 1
heap=$(ls "$dir"/jeprof.*.heap 2>/dev/null | head -n 1)
if [ -n "$heap" ] && command -v jeprof >/dev/null; then
	jeprof --text --alloc_space --show_bytes "$mm" "$heap" >"$dir/jemalloc.out" 2>/dev/null
fi
cat "$dir/jemalloc.workload"
