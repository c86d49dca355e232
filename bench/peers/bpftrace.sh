#!/usr/bin/env bash
# bpftrace with uprobes on malloc and free, aggregating bytes by user stack,
# attached to a waiting mallocmix.  usage: bpftrace.sh MALLOCMIX DIR ITERATIONS
# Prints the workload's output; bpftrace's maps go to DIR/bpftrace.out.
set -uo pipefail
set -m # background tools get the default SIGINT action, so kill -INT stops them
here=$(dirname "$0")
. "$here/../lib/common.sh"
mm=$1 dir=$2 iters=$3
command -v bpftrace >/dev/null || { echo "bpftrace is not installed" >&2; exit 1; }
libc=$(libc_of "$mm")
sed "s|@LIBC@|$libc|g" "$here/malloc-stacks.bt" >"$dir/malloc-stacks.bt"
# Truncate here, not in the background job: a stale line from the previous
# run must not be mistaken for this run's.
: >"$dir/bpftrace.workload"
: >"$dir/bpftrace.out"
"$mm" --wait-signal --hold 3 --iterations "$iters" >"$dir/bpftrace.workload" &
mp=$!
wait_for_line "$dir/bpftrace.workload" '^ready' 10 || { echo "mallocmix did not start" >&2; kill $mp; exit 1; }
bpftrace "$dir/malloc-stacks.bt" $mp >"$dir/bpftrace.out" 2>"$dir/bpftrace.err" &
bp=$!
if ! wait_for_line "$dir/bpftrace.out" '^attached' 60; then
	echo "bpftrace: $(grep -m1 -i error "$dir/bpftrace.err" || echo 'did not attach')" >&2
	kill $bp $mp 2>/dev/null
	exit 1
fi
kill -USR1 $mp
wait_for_line "$dir/bpftrace.workload" '^site ' 600
kill -INT $bp
wait $bp
wait $mp
cat "$dir/bpftrace.workload"
