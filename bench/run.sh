#!/usr/bin/env bash
# make bench: measure, write bench/results/latest.md, print it.
#
# Every figure is a ratio (or a difference) between configurations run side
# by side in one session: interleaved rounds (bench/lib/abrun.py), the median
# of at least 5 rounds, with the range of the per-round figures.  Exact
# per-operation costs are callgrind instruction counts.  Nothing here passes
# or fails: a figure that cannot be measured says "not available: <reason>".
#
# REPS=N: rounds per table (default 5; at least 5 for quoting).
# BENCH_QUICK=1: a fast smoke run (3 rounds, smaller iteration counts);
# its figures are marked as such and are not for quoting.
# BENCH_TABLES="1 3": run only some tables; latest.md keeps the others from
# its previous version, each table stamped with its own date and commit.
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/lib/common.sh

export BENCH_QUICK=${BENCH_QUICK:-0}
if [ "$BENCH_QUICK" = 1 ]; then
	export REPS=${REPS:-3}
else
	export REPS=${REPS:-5}
fi
export WORK=build/bench/work
rm -rf "$WORK"
mkdir -p "$WORK" bench/results
out=$WORK/latest.md

# Measure copies of the inputs: the tree may be rebuilt while this runs.
INPUTS="workload-seed workload-seed-nohook workload-sites memprof-bpf libmemprof-preload.so
	libmemprof.a bench/mallocmix bench/mallocpair bench/probeloop bench/gcscale bench/preload-sample-cost
	tests/ocaml/progs/sites bench/ocaml-sites-plain tests/ocaml5/progs/sites bench/ocaml5-sites-domains
	tests/ocaml5/progs/sites-plain libmemprof-ocaml4-attach.so libmemprof-ocaml5-attach.so
	tests/inject/progs/hammer tests/inject/progs/stale_words tests/preload/progs/stacks
	libmemprof-python.so"
# shellcheck disable=SC2086
./bench/lib/snapshot.sh build "$WORK/inputs" $INPUTS
export BUILD=$WORK/inputs

tables=${BENCH_TABLES:-1 2 3 4 5 6 7 8 9 10}
cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
{
	echo "# memprof-bpf benchmarks"
	echo
	echo "| machine | |"
	echo "|---|---|"
	echo "| date (UTC) | $(date -u '+%Y-%m-%d %H:%M') |"
	echo "| nproc | $(nproc) |"
	echo "| CPU | ${cpu:-unknown} |"
	echo "| kernel | $(uname -r) |"
	echo "| commit | $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- 2>/dev/null || echo ' (with uncommitted changes)') |"
	echo "| mode | $([ "$BENCH_QUICK" = 1 ] && echo 'BENCH_QUICK=1: smoke run, 3 rounds, small iteration counts; not for quoting' || echo 'full') |"
	echo
	echo "**Method.** Every figure compares configurations measured side by side in this one run:"
	echo "each round runs every configuration of a table once (the order alternates A B C ... C B A"
	echo "between rounds to cancel drift), $REPS rounds; a ratio is the median of the per-round ratios,"
	echo "with their range in parentheses. The measure is CPU time (user+system) of the measured"
	echo "process, which on a shared machine swings far less than wall time; uprobe traps and BPF"
	echo "programs run in the traced task and are charged to it. For traced runs only the target's"
	echo "own work counts (tracer start-up excluded). Table 3 adds wall time, because some tools work"
	echo "in another process. Exact per-operation costs are valgrind callgrind instruction counts"
	echo "(Ir), which do not depend on machine noise. The binaries measured are copies taken at the"
	echo "start of the run. No figure here is a pass/fail test."
	echo
} >"$out"

for t in $tables; do
	script=$(ls bench/tables/t$t-*.sh 2>/dev/null | head -n 1)
	if [ -z "$script" ]; then
		log "no script for table $t"
		continue
	fi
	log "table $t: $script"
	part=$WORK/table$t.md
	if ! bash "$script" >"$part"; then
		echo "(table $t stopped early: $(basename "$script") failed; figures above are what it measured)" >>"$part"
	fi
	cat "$part" >>"$out"
	echo >>"$out"
done

# Tables not run this time (BENCH_TABLES) keep their sections of the previous
# latest.md; each section says when and on which commit it was measured.
python3 bench/lib/splice_latest.py "$out" bench/results/latest.md "$WORK/latest-spliced.md" &&
	cp "$WORK/latest-spliced.md" bench/results/latest.md
cat bench/results/latest.md
