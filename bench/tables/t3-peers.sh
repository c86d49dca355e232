#!/usr/bin/env bash
# Table 3: peers on the same malloc workload (build/bench/mallocmix, exact
# per-site totals known): slowdown and per-site accuracy.
set -uo pipefail
. bench/lib/common.sh
S="python3 bench/lib/summarize.py"
MM=$BUILD/bench/mallocmix
LOADER=$BUILD/memprof-bpf
PRELOAD=$BUILD/libmemprof-preload.so
DIR=$WORK/t3
mkdir -p "$DIR"

if [ "$BENCH_QUICK" = 1 ]; then
	N=50000
else
	N=200000
fi

# bcc needs the running kernel's headers; there are none for this kernel,
# so Debian's linux-headers-amd64 (common and arch parts merged into one
# folder) stand in, which is enough for memleak's uprobes.
headers=""
arch_dir=$(ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -n 1)
if [ -n "$arch_dir" ] && [ -d "${arch_dir%-amd64}-common" ]; then
	headers=$(pwd)/$WORK/kernel-headers
	rm -rf "$headers"
	mkdir -p "$headers"
	cp -as "${arch_dir%-amd64}-common/." "$headers/" 2>/dev/null
	cp -as "$arch_dir/." "$headers/" 2>/dev/null
fi

spec=$DIR/t3.spec
{
	printf 'glibc\t%s --iterations %s\n' "$MM" $N
	printf 'bpftrace\tbench/peers/bpftrace.sh %s %s %s\n' "$MM" "$DIR" $N
	if [ -n "$headers" ]; then
		printf 'memleak\tbench/peers/memleak.sh %s %s %s %s\n' "$MM" "$DIR" $N "$headers"
	fi
	printf 'heaptrack\tbench/peers/heaptrack.sh %s %s %s\n' "$MM" "$DIR" $N
	printf 'jemalloc-off\tbench/peers/jemalloc.sh %s %s %s off\n' "$MM" "$DIR" $N
	printf 'jemalloc\tbench/peers/jemalloc.sh %s %s %s\n' "$MM" "$DIR" $N
	for r in 1e-5 1e-4; do
		printf 'memprof-inject-%s\tbench/peers/memprof_inject.sh %s %s %s %s %s\n' \
			$r "$MM" "$LOADER" "$DIR" $N $r
		printf 'memprof-%s\tpython3 bench/lib/attach_run.py --loader %s --rate %s --out %s --preload %s -- %s --wait-tracer --iterations %s\n' \
			$r "$LOADER" $r "$DIR/memprof-$r.folded" "$PRELOAD" "$MM" $N
	done
} >"$spec"
if [ ! -x "$MM" ]; then
	mm_missing="$MM is not built"
else
	mm_missing=""
	log "table 3: peers on mallocmix ($N iterations, $REPS rounds)"
	python3 bench/lib/abrun.py "$spec" "$DIR/t3.jsonl" --reps "$REPS" --timeout 900
	"$MM" --iterations $N >"$DIR/exact.txt"
fi

slow() { # label [base]: CPU-time ratio | wall-time ratio
	if [ -n "$mm_missing" ]; then echo "$(na "$mm_missing") |"; return; fi
	echo "$($S ratio "$DIR/t3.jsonl" "$1" "${2:-glibc}" --metric values.work_cpu_ns) | $($S ratio "$DIR/t3.jsonl" "$1" "${2:-glibc}" --metric values.work_ns)"
}
acc() { # tool output [rate]: the accuracy cells, or n/a cells
	local cells
	if [ -n "$mm_missing" ]; then cells=$(na "$mm_missing"); else
		cells=$(python3 bench/lib/accuracy.py "$1" "$2" "$DIR/exact.txt" ${3:+"$3"} | tail -n 1)
	fi
	case $cells in
	"not available"*) echo "$cells | | | | | |" ;;
	*) echo "$cells" ;;
	esac
}
failed() { # label: the first error of that tool's runs, if any
	[ -n "$mm_missing" ] && return 1
	$S check "$DIR/t3.jsonl" "$1" >/dev/null && return 1
	$S check "$DIR/t3.jsonl" "$1"
}
row() { # name label accuracy-args...
	local name=$1 label=$2 err
	shift 2
	if err=$(failed "$label"); then
		echo "| $name | $err | | | | | | | |"
	else
		echo "| $name | $(slow "$label") | $(acc "$@") |"
	fi
}

sites=$(python3 bench/lib/accuracy.py sites "$DIR/exact.txt" 2>/dev/null | paste -sd ' ')
echo "## Table 3: peers on the same malloc workload"
echo
echo "build/bench/mallocmix, $N iterations: five allocation sites (largest exact bytes first:"
echo "${sites:-unknown}), fixed seed, so every run allocates the same sizes in the same order and"
echo "the program prints exact per-site totals. Slowdown: the workload's own work phase (each tool"
echo "attached or loaded before it starts) against plain glibc, interleaved rounds, in CPU time of"
echo "the workload process (where uprobe traps and BPF programs are charged) and in wall time"
echo "(which also sees work a tool does in another process, e.g. heaptrack's). Accuracy: the"
echo "tool's per-site figure divided by the exact one, from the last round. What is compared"
echo "depends on what the tool reports: bytes allocated (bpftrace, jemalloc, memprof-bpf), bytes"
echo "still live at the end (memleak; '-' where the exact live figure is 0), or allocation calls"
echo "(heaptrack, whose folded output has no allocated-bytes cost). For the Poisson-sampled"
echo "memprof-bpf each ratio has its distance from 1 in standard deviations. \"Injected\": mallocmix"
echo "started without the preload and waiting; \`memprof-bpf attach\` loads the malloc host into it"
echo "(ptrace, its own dlopen) and attaches, then the work starts; the pause is the time the one"
echo "thread the injector used was stopped (median over rounds), other threads keep running."
echo
printf '| tool | slowdown vs glibc (CPU) | (wall) | compared |'
for s in $sites; do printf ' %s |' "$s"; done
echo
echo "|---|---|---|---|---|---|---|---|---|"
row "bpftrace 0.17 (uprobes on malloc, free; @bytes[ustack])" bpftrace bpftrace "$DIR/bpftrace.out"
if [ -n "$headers" ]; then
	row "bcc memleak-bpfcc -p PID (outstanding allocations)" memleak memleak "$DIR/memleak.out"
else
	echo "| bcc memleak-bpfcc | $(na "no kernel headers (linux-headers-amd64) to give it") | | | | | | | |"
fi
row "heaptrack 1.4" heaptrack heaptrack "$DIR/heaptrack.folded"
row "jemalloc 5.3 prof, lg_prof_sample:19" jemalloc jemalloc "$DIR/jemalloc.out"
echo "| jemalloc 5.3 without profiling (allocator alone) | $(slow jemalloc-off) | - | | | | | |"
echo "| jemalloc prof / jemalloc without profiling | $(slow jemalloc jemalloc-off) | - | | | | | |"
for r in 1e-5 1e-4; do
	row "memprof-bpf $r (preload + attach)" memprof-$r memprof "$DIR/memprof-$r.folded" $r
done
# heaptrack's own injection (-p PID, through gdb), tried once on a waiting
# program: where gdb cannot inject, the row says why.
heaptrack_p_probe() {
	local dir log pid err
	dir=$(mktemp -d)
	log=$dir/heaptrack-p.log
	sleep 30 >/dev/null 2>&1 &
	pid=$!
	(cd "$dir" && timeout 60 heaptrack -p "$pid" >"$log" 2>&1)
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	if ls "$dir"/heaptrack.sleep.*.zst >/dev/null 2>&1 && ! grep -q "No symbol \"heaptrack_inject\"" "$log"; then
		echo "injects here; not measured in this table"
	else
		err=$(grep -m1 -E "Couldn't|No symbol|error|denied" "$log" | tr '|' '/')
		echo "not available: its gdb-based injection fails on this machine (${err:-no data file written})"
	fi
	rm -rf "$dir"
}
echo "| heaptrack 1.4 -p PID (injection through gdb) | $(heaptrack_p_probe) | | | | | | | |"
for r in 1e-5 1e-4; do
	pause=$($S median "$DIR/t3.jsonl" memprof-inject-$r --metric values.inject_pause_ms --fmt %.2f)
	row "memprof-bpf $r, injected into a running process (no LD_PRELOAD; the injection paused one thread $pause ms)" \
		memprof-inject-$r memprof "$DIR/memprof-inject-$r.folded" $r
done
echo
python3 bench/lib/explain.py t3 "$WORK" 2>/dev/null || true
