#!/usr/bin/env bash
# bcc's memleak (memleak-bpfcc) attached with -p to a waiting mallocmix; its
# last report of outstanding allocations goes to DIR/memleak.out.
# usage: memleak.sh MALLOCMIX DIR ITERATIONS KERNEL_HEADERS_DIR
set -uo pipefail
set -m # background tools get the default SIGINT action, so kill -INT stops them
here=$(dirname "$0")
. "$here/../lib/common.sh"
mm=$1 dir=$2 iters=$3 headers=$4
command -v memleak-bpfcc >/dev/null || { echo "memleak-bpfcc is not installed" >&2; exit 1; }
# Truncate here, not in the background job: a stale line from the previous
# run must not be mistaken for this run's.
: >"$dir/memleak.workload"
: >"$dir/memleak.out"
"$mm" --wait-signal --hold 4 --iterations "$iters" >"$dir/memleak.workload" &
mp=$!
wait_for_line "$dir/memleak.workload" '^ready' 10 || { echo "mallocmix did not start" >&2; kill $mp; exit 1; }
BCC_KERNEL_SOURCE=$headers memleak-bpfcc -p $mp -T 20 1 >"$dir/memleak.out" 2>"$dir/memleak.err" &
bp=$!
# memleak prints "Attaching" before it attaches; its first report comes after.
if ! wait_for_line "$dir/memleak.out" 'stacks with outstanding allocations' 120; then
	echo "memleak: $(grep -v '^\s' "$dir/memleak.err" | tail -n 1)" >&2
	kill $bp $mp 2>/dev/null
	exit 1
fi
kill -USR1 $mp
wait_for_line "$dir/memleak.workload" '^site ' 600
sleep 2.5 # one more report after the work, while the live set is held
kill -INT $bp
# memleak's exit (detaching its uprobes) has been seen to sit in the kernel
# for minutes: give it 30 s, then kill it.
for _ in $(seq 60); do
	kill -0 $bp 2>/dev/null || break
	sleep 0.5
done
if kill -0 $bp 2>/dev/null; then
	kill -KILL $bp 2>/dev/null
	# A task stuck in the kernel is not reaped until it leaves it: do not
	# wait for it, or the whole table waits with it.
	disown $bp
	echo "memleak_killed 1"
else
	wait $bp
fi
wait $mp
cat "$dir/memleak.workload"
