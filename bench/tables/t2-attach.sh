#!/usr/bin/env bash
# Table 2: attached vs detached.  The memprof USDT probes feeding BPF maps
# through build/memprof-bpf, on the reference runtime and on a malloc
# workload under the preload host; and the price of a detached probe site.
set -uo pipefail
. bench/lib/common.sh
S="python3 bench/lib/summarize.py"
RATES="1e-5 1e-4 1e-3"
SEED=$BUILD/workload-seed
LOADER=$BUILD/memprof-bpf
PRELOAD=$BUILD/libmemprof-preload.so
MM=$BUILD/bench/mallocmix
AR="python3 bench/lib/attach_run.py"

if [ "$BENCH_QUICK" = 1 ]; then
	RT_N=5000000 MM_N=200000 LOOP_N=1000000 PAIR_N=100000
else
	RT_N=30000000 MM_N=1000000 LOOP_N=10000000 PAIR_N=1000000
fi
PAIR_SIZES="16 256 4096"
PAIR_RATES="1e-5 1e-4"

missing() { # files...: the reason the first one is unusable, or nothing
	local f
	for f in "$@"; do
		[ -e "$f" ] || { echo "$f is not built"; return; }
	done
}

# ---- rt under attach ----
rt_missing=$(missing "$SEED" "$LOADER")
spec=$WORK/t2-rt.spec
{
	printf 'detached\t%s --stop-until-attached -- %s --kind short --tracked 0 --rate 0 --iterations %s\n' \
		"$AR" "$SEED" $RT_N
	for r in $RATES; do
		printf 'attached-%s\t%s --loader %s --rate %s --out %s --stop-until-attached -- %s --kind short --tracked 0 --rate 0 --iterations %s\n' \
			$r "$AR" "$LOADER" $r "$WORK/t2-rt-$r.folded" "$SEED" $RT_N
		printf 'inprocess-%s\t%s --stop-until-attached -- %s --kind short --tracked 0 --rate 0 --fake-tracer %s --iterations %s\n' \
			$r "$AR" "$SEED" $r $RT_N
	done
} >"$spec"
if [ -z "$rt_missing" ]; then
	log "table 2: rt attached/detached ($RT_N records, $REPS rounds)"
	python3 bench/lib/abrun.py "$spec" "$WORK/t2-rt.jsonl" --reps "$REPS"
fi

# ---- malloc workload under the preload ----
mm_missing=$(missing "$MM" "$PRELOAD" "$LOADER")
spec=$WORK/t2-mm.spec
{
	printf 'glibc\t%s -- %s --iterations %s\n' "$AR" "$MM" $MM_N
	printf 'detached\t%s --preload %s -- %s --iterations %s\n' "$AR" "$PRELOAD" "$MM" $MM_N
	printf 'idle-thread\t%s --preload %s -- %s --idle-thread --iterations %s\n' "$AR" "$PRELOAD" "$MM" $MM_N
	for r in $RATES; do
		printf 'attached-%s\t%s --loader %s --rate %s --out %s --preload %s -- %s --wait-tracer --iterations %s\n' \
			$r "$AR" "$LOADER" $r "$WORK/t2-mm-$r.folded" "$PRELOAD" "$MM" $MM_N
		printf 'inprocess-%s\t%s --preload %s -- %s --fake-tracer %s --iterations %s\n' \
			$r "$AR" "$PRELOAD" "$MM" $r $MM_N
	done
} >"$spec"
if [ -z "$mm_missing" ]; then
	log "table 2: mallocmix under the preload ($MM_N iterations, $REPS rounds)"
	python3 bench/lib/abrun.py "$spec" "$WORK/t2-mm.jsonl" --reps "$REPS"
fi

# ---- real programs under the preload: plain, detached, attached ----
# Each waits at start-up for the tracer (MEMPROF_WAIT_TRACER_MS, sleeping)
# when attached, so the whole run is traced; CPU time of the whole process.
REAL_RATES="1e-5 1e-4"
PY_REAL=$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))' 2>/dev/null)
CXX_SRC=tests/preload/progs/cxx.cpp
if [ "$BENCH_QUICK" = 1 ]; then GIT_N=50 PY_N=10000; else GIT_N=300 PY_N=60000; fi
real_cmd() { # name -> command line (words)
	case $1 in
	git) echo "$(command -v git) -C $PWD log -p -n $GIT_N HEAD" ;;
	python3) echo "$PY_REAL -c 'import json; d = [{str(i): [str(j) for j in range(20)]} for i in range($PY_N)]; s = json.dumps(d); [json.loads(s) for _ in range(3)]'" ;;
	clang++) echo "$(command -v clang++) -O2 -Iruntime-probes/include -c $CXX_SRC -o $WORK/real-cxx.o" ;;
	esac
}
REAL_PROGS="git python3 clang++"
real_missing=""
[ -e "$PRELOAD" ] && [ -e "$LOADER" ] || real_missing="the preload or the loader is not built"
for prog in $REAL_PROGS; do
	[ -n "$real_missing" ] && break
	set -- $(real_cmd $prog)
	command -v "$1" >/dev/null || { real_missing="$prog is not installed"; break; }
	spec=$WORK/t2-real-$prog.spec
	{
		printf 'plain\t%s -- %s\n' "$AR" "$(real_cmd $prog)"
		printf 'detached\t%s --preload %s -- %s\n' "$AR" "$PRELOAD" "$(real_cmd $prog)"
		for r in $REAL_RATES; do
			printf 'attached-%s\tenv MEMPROF_WAIT_TRACER_MS=30000 %s --loader %s --rate %s --out %s --preload %s -- %s\n' \
				$r "$AR" "$LOADER" $r "$WORK/t2-real-$prog-$r.folded" "$PRELOAD" "$(real_cmd $prog)"
		done
	} >"$spec"
	log "table 2: $prog under the preload ($REPS rounds)"
	python3 bench/lib/abrun.py "$spec" "$WORK/t2-real-$prog.jsonl" --reps "$REPS"
done

# ---- detached probe site, callgrind ----
loop_ir() { # mode -> Ir of the loop function
	valgrind --tool=callgrind --callgrind-out-file="$WORK/probeloop.$1.cg" --collect-atstart=no \
		--toggle-collect='loop_*' "$BUILD/bench/probeloop" "$1" $LOOP_N 2>&1 |
		sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
probe_cell=""
if [ ! -x "$BUILD/bench/probeloop" ]; then
	probe_cell=$(na "$BUILD/bench/probeloop is not built")
elif ! command -v valgrind >/dev/null; then
	probe_cell=$(na "valgrind is not installed")
else
	ir_probe=$(loop_ir probe)
	ir_plain=$(loop_ir plain)
	if [ -n "$ir_probe" ] && [ -n "$ir_plain" ]; then
		probe_cell=$(python3 -c "p,q,n=$ir_probe,$ir_plain,$LOOP_N; print(f'{(p-q)/n:.2f} Ir per iteration ({p/n:.2f} with the site, {q/n:.2f} without)')")
	else
		probe_cell=$(na "callgrind gave no instruction count")
	fi
fi

# ---- one malloc+free pair, callgrind ----
# pair_ir CONFIG N SIZE [RATE] -> "IR SAMPLES": Ir of pair_loop over N pairs
# and the profile's sample count (0 without RATE).  CONFIG glibc runs the
# program plain; any other runs it under the preload.
pair_ir() {
	local config=$1 n=$2 size=$3 rate=${4:-} out ir samples
	local pre=()
	[ "$config" = glibc ] || pre=(env "LD_PRELOAD=$(realpath "$PRELOAD")")
	out=$("${pre[@]}" valgrind --tool=callgrind --trace-children=no \
		--callgrind-out-file="$WORK/mallocpair.cg" --collect-atstart=no \
		--toggle-collect=pair_loop "$BUILD/bench/mallocpair" "$size" "$n" $rate 2>&1)
	ir=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' <<<"$out")
	samples=$(sed -n 's/^samples \([0-9]*\)$/\1/p' <<<"$out")
	[ -n "$ir" ] && echo "$ir ${samples:-0}"
}
# pair_cost CONFIG SIZE [RATE]: "SIZE CONFIG IR_PER_PAIR SAMPLES_PER_N" from
# the difference between 2N and N pairs (one-off costs cancel), or nothing.
pair_cost() {
	local a b
	a=$(pair_ir "$1" $PAIR_N "$2" ${3:-}) && b=$(pair_ir "$1" $((2 * PAIR_N)) "$2" ${3:-}) || return 0
	python3 -c "
a, sa, b, sb = map(int, '$a $b'.split())
print('$2 $1', f'{(b - a) / $PAIR_N:.3f}', sb - sa)"
}
pair_missing=$(missing "$BUILD/bench/mallocpair" "$PRELOAD")
command -v valgrind >/dev/null || pair_missing=${pair_missing:-valgrind is not installed}
: >"$WORK/t2-pair.txt"
echo "$PAIR_N" >"$WORK/t2-pair-n.txt"
if [ -z "$pair_missing" ]; then
	log "table 2: malloc+free pairs under callgrind ($PAIR_N and $((2 * PAIR_N)) pairs)"
	for size in $PAIR_SIZES; do
		pair_cost glibc "$size" >>"$WORK/t2-pair.txt"
		pair_cost detached "$size" >>"$WORK/t2-pair.txt"
		for r in $PAIR_RATES; do
			pair_cost "inprocess-$r" "$size" "$r" >>"$WORK/t2-pair.txt"
		done
	done
fi

# The preload's own micro-benchmark (runtime-probes/hosts/preload/bench): in-process
# cost of one sample in the malloc host, without and with its call stack.
PSC=$BUILD/bench/preload-sample-cost
[ -x "$PSC" ] || PSC=build/bench/preload-sample-cost
psc_line=""
if [ -x "$PSC" ] && [ -e "$PRELOAD" ]; then
	LD_PRELOAD=$(realpath "$PRELOAD") "$PSC" >"$WORK/t2-psc.out" 2>&1
	psc_without=$(sed -n 's/^sample_ns_without_stack //p' "$WORK/t2-psc.out")
	psc_with=$(sed -n 's/^sample_ns_with_stack //p' "$WORK/t2-psc.out")
	psc_depth=$(sed -n 's/^depth \([0-9]*\).*/\1/p' "$WORK/t2-psc.out")
	if [ -n "$psc_without" ] && [ -n "$psc_with" ]; then
		psc_line="In-process part in the malloc host, from the preload's own micro-benchmark (build/bench/preload-sample-cost: fastest of 5 interleaved rounds of its own timing, a call stack $psc_depth frames deep): $psc_without ns per sample without a call stack, $psc_with ns with one (an in-process profile's sample: its entry and callbacks included; a traced sample with no profile takes neither)."
	else
		psc_line="In-process part in the malloc host: $(na "preload-sample-cost printed no figures: $(tail -n 1 "$WORK/t2-psc.out")")."
	fi
else
	psc_line="In-process part in the malloc host: $(na "build/bench/preload-sample-cost or the preload is not built")."
fi

# The in-process part of a traced malloc sample, in instructions: mallocmix
# with --fake-tracer (the host samples, unwinds and queues as when traced;
# its probe sites are bare nops) against detached, both under callgrind
# (bench/lib/sample_split.py; fixed seed, so both runs draw the same points).
SPLIT_N=200000
split_md=$WORK/t2-fake-split.md
rm -f "$split_md"
split_cell=""
if [ -n "$mm_missing" ]; then
	split_cell=$(na "$mm_missing")
elif ! command -v valgrind >/dev/null; then
	split_cell=$(na "valgrind is not installed")
else
	log "table 2: the in-process part of a traced sample under callgrind"
	for m in detached fake; do
		extra=""
		[ $m = fake ] && extra="--fake-tracer 1e-3"
		MEMPROF_SEED=1 LD_PRELOAD=$(realpath "$PRELOAD") valgrind --tool=callgrind \
			--callgrind-out-file="$WORK/t2-split-$m.cg" --collect-atstart=no \
			--toggle-collect=run_work "$MM" --iterations $SPLIT_N $extra >/dev/null 2>&1
	done
	python3 bench/lib/sample_split.py "$WORK/t2-split-detached.cg" "$WORK/t2-split-fake.cg" \
		>"$split_md" 2>"$WORK/t2-split.err" ||
		{ split_cell=$(na "sample_split.py: $(tail -n 1 "$WORK/t2-split.err")"); rm -f "$split_md"; }
fi

# The same for the runtime: workload-seed --fake-tracer 1e-3 against
# --rate 0, whole program under callgrind (fixed seed: same draws every
# run); Ir per sample handed to the sites, for explain.py.
rm -f "$WORK/t2-rt-fake-ir.txt"
if [ -z "$rt_missing" ] && command -v valgrind >/dev/null; then
	log "table 2: the in-process part of a traced runtime sample under callgrind"
	rt_ir() { # [ARGS]: the total Ir of a run with ARGS; its stdout in t2-rt-split.out
		valgrind --tool=callgrind --callgrind-out-file="$WORK/t2-rt-split.cg" \
			"$SEED" --kind short --tracked 0 --rate 0 --iterations $SPLIT_RT_N "$@" \
			>"$WORK/t2-rt-split.out" 2>/dev/null &&
			callgrind_annotate "$WORK/t2-rt-split.cg" 2>/dev/null |
			awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }'
	}
	SPLIT_RT_N=3000000
	ir_det=$(rt_ir)
	ir_fake=$(rt_ir --fake-tracer 1e-3)
	smp=$(awk '$1 == "tracer_samples" { print $2 }' "$WORK/t2-rt-split.out")
	if [ -n "$ir_det" ] && [ -n "$ir_fake" ] && [ "${smp:-0}" -gt 0 ]; then
		python3 -c "print(round(($ir_fake - $ir_det) / $smp))" >"$WORK/t2-rt-fake-ir.txt"
	fi
fi

# The kernel side alone, from the kernel's own accounting: one more run
# each of the runtime and mallocmix at 1e-3, not timed, with
# kernel.bpf_stats_enabled on and the loader's -v (its "BPF run time" line:
# each program's run time per sample or event).
bpf_line=""
bpf_run_time() { # label: the loader's run time line of one attached run, or nothing
	local wrap=$WORK/t2-bpf-loader.sh err=$WORK/t2-bpf-$1.err
	shift
	rm -f "$err"
	printf '#!/bin/sh\nexec %s "$@" -v 2>>%s\n' "$(realpath "$LOADER")" "$err" >"$wrap"
	chmod +x "$wrap"
	python3 bench/lib/attach_run.py --loader "$wrap" --rate 1e-3 --out /dev/null "$@" >/dev/null 2>&1
	python3 - "$err" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
line = re.search(r"BPF run time in process \d+ \(kernel.bpf_stats_enabled\): (.*)", text)
stat = lambda k: int((re.search(r"\b%s (\d+)" % k, text) or [0, 0])[1])
if line and stat("samples"):
    print("%s (%.2f events a sample)" % (line.group(1), (stat("promotes") + stat("deallocs")) / stat("samples")))
PY
}
if [ -z "$rt_missing" ] && [ -z "$mm_missing" ] &&
	old_stats=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null) &&
	sysctl -qw kernel.bpf_stats_enabled=1 2>/dev/null; then
	bpf_rt=$(bpf_run_time rt --stop-until-attached -- "$SEED" --kind short --tracked 0 --rate 0 --iterations $RT_N)
	bpf_mm=$(bpf_run_time mm --preload "$PRELOAD" -- "$MM" --wait-tracer --iterations $MM_N)
	sysctl -qw kernel.bpf_stats_enabled="$old_stats"
	bpf_line="The kernel side alone, from the kernel's own accounting (one more run each at 1e-3, not timed, with kernel.bpf_stats_enabled on; the loader's -v line): runtime: ${bpf_rt:-$(na "no run time line")}; malloc host: ${bpf_mm:-$(na "no run time line")}. An event is a promotion or a death."
else
	bpf_line="The kernel side alone: $(na "kernel.bpf_stats_enabled cannot be set, or the runtime or mallocmix is missing")."
fi

rt_ratio() { [ -n "$rt_missing" ] && na "$rt_missing" || $S ratio "$WORK/t2-rt.jsonl" "$1" detached --metric values.target_cpu_s; }
rt_ns() { [ -n "$rt_missing" ] && na "$rt_missing" || $S perunit "$WORK/t2-rt.jsonl" "$1" detached --metric values.target_cpu_s --per values.memprof_ctl_samples --scale 1e9; }
# In-process part alone: workload-seed --fake-tracer, per sample it handed
# to its (bare) probe sites.
rt_inproc_ns() {
	[ -n "$rt_missing" ] && { na "$rt_missing"; return; }
	$S perunit "$WORK/t2-rt.jsonl" "inprocess-$1" detached --metric values.target_cpu_s \
		--per values.tracer_samples --scale 1e9
}
rt_samples() { [ -n "$rt_missing" ] && na "$rt_missing" || $S median "$WORK/t2-rt.jsonl" "$1" --metric values.memprof_ctl_samples --fmt %.0f; }
mm_ratio() { [ -n "$mm_missing" ] && na "$mm_missing" || $S ratio "$WORK/t2-mm.jsonl" "$1" "${2:-detached}" --metric values.work_cpu_ns; }
mm_ns() { [ -n "$mm_missing" ] && na "$mm_missing" || $S perunit "$WORK/t2-mm.jsonl" "$1" detached --metric values.work_cpu_ns --per values.memprof_samples; }
# In-process part alone: mallocmix --fake-tracer, per sample it queued.
mm_inproc_ns() { [ -n "$mm_missing" ] && na "$mm_missing" || $S perunit "$WORK/t2-mm.jsonl" "inprocess-$1" detached --metric values.work_cpu_ns --per values.memprof_samples; }
mm_samples() { [ -n "$mm_missing" ] && na "$mm_missing" || $S median "$WORK/t2-mm.jsonl" "$1" --metric values.memprof_samples --fmt %.0f; }

echo "## Table 2: attached vs detached (USDT probes to BPF maps)"
echo
echo "Attached: build/memprof-bpf attach PID --rate R, the target sampling for the tracer only"
echo "(no in-process profile). Detached: the same binary, no tracer. Runtime: workload-seed --kind"
echo "short --rate 0 ($RT_N records); the target is stopped right after exec and resumed once the"
echo "kernel has raised the memprof:sample semaphore; the figure is the target's CPU time"
echo "(user+system, where the uprobe traps and BPF programs are charged). Malloc: build/bench/mallocmix"
echo "($MM_N iterations, five sites, sizes 16 B-64 KiB, short and long lifetimes) under"
echo "LD_PRELOAD=libmemprof-preload.so; the figure is the CPU time of its work phase, which starts once"
echo "the tracer's sampling is on. Cost per sample = (attached - detached) / samples, the samples read"
echo "from the target's control block: it includes the in-process sampling, the call-stack capture"
echo "for the probe, the uprobe trap, the BPF program and its stack copy. The last column is the"
echo "in-process part alone: workload-seed --fake-tracer R and mallocmix --fake-tracer R raise their"
echo "own probe semaphores and ask for the rate, as a tracer does, so the host samples, unwinds and"
echo "queues its records as when traced, and its probe sites are bare nops (no uprobe, no BPF);"
echo "against detached, divided by the samples handed to the sites."
echo
echo "| target | rate | CPU time attached / detached | samples | CPU ns per sample | in-process sampling alone: CPU ns per sample |"
echo "|---|---|---|---|---|---|"
for r in $RATES; do
	echo "| rt (workload-seed short) | $r | $(rt_ratio attached-$r) | $(rt_samples attached-$r) | $(rt_ns attached-$r) | $(rt_inproc_ns $r) |"
done
for r in $RATES; do
	echo "| malloc (mallocmix, preload) | $r | $(mm_ratio attached-$r) | $(mm_samples attached-$r) | $(mm_ns attached-$r) | $(mm_inproc_ns $r) |"
done
echo "| malloc: preload loaded, detached / plain glibc | - | $(mm_ratio detached glibc) | - | - | - |"
echo "| malloc: detached with one idle thread / detached (glibc's multi-threaded mode alone) | - | $(mm_ratio idle-thread detached) | - | - | - |"
echo
echo "Real programs under the preload, CPU time (user+system) of the whole process against the"
echo "same command run plain (no preload): git (log -p -n $GIT_N of this repository), python3"
echo "(a JSON dump and three loads of a $PY_N-entry list), clang++ (-O2 -c of a C++ test program)."
echo "Attached: the program waits at start-up until the tracer's sampling is on"
echo "(MEMPROF_WAIT_TRACER_MS, asleep), so the whole run is traced; samples from its control block."
echo
echo "| program | detached / plain | attached 1e-5 / plain | attached 1e-4 / plain | samples at 1e-4 | CPU ns per sample at 1e-4 (vs detached) |"
echo "|---|---|---|---|---|---|"
for prog in $REAL_PROGS; do
	f=$WORK/t2-real-$prog.jsonl
	if [ -n "$real_missing" ] || [ ! -s "$f" ]; then
		echo "| $prog | $(na "${real_missing:-no runs}") | - | - | - | - |"
		continue
	fi
	echo "| $prog | $($S ratio "$f" detached plain --metric values.target_cpu_s) | $($S ratio "$f" attached-1e-5 plain --metric values.target_cpu_s) | $($S ratio "$f" attached-1e-4 plain --metric values.target_cpu_s) | $($S median "$f" attached-1e-4 --metric values.memprof_ctl_samples --fmt %.0f) | $($S perunit "$f" attached-1e-4 detached --metric values.target_cpu_s --per values.memprof_ctl_samples --scale 1e9) |"
done
echo
echo "$psc_line"
echo
echo "The in-process part of a traced malloc sample, in instructions (build/bench/mallocmix"
echo "--iterations $SPLIT_N --fake-tracer 1e-3 under the preload: it raises the preload's"
echo "semaphores itself, so the host samples, unwinds and queues its records as when traced and"
echo "its probe sites are bare nops; callgrind, collecting inside the work only, against the same"
echo "run detached; MEMPROF_SEED=1; bench/lib/sample_split.py):"
echo
if [ -s "$split_md" ]; then cat "$split_md"; else echo "$split_cell"; fi
echo
echo "$bpf_line"
echo
echo "Detached probe site (build/bench/probeloop under callgrind, $LOOP_N iterations of a loop with"
echo "one semaphore-guarded 7-argument USDT probe, the shape of memprof:sample, against the same"
echo "loop without it): $probe_cell."
echo
echo "### One malloc+free pair, in instructions"
echo
echo "build/bench/mallocpair SIZE N: N times { p = malloc(SIZE); touch its first and last byte;"
echo "free(p) } in one function, run under valgrind callgrind (--trace-children=no, collecting"
echo "only inside that function). Ir per pair = (Ir of 2N pairs - Ir of N pairs) / N, N = $PAIR_N,"
echo "so start-up and one-off costs (lazy binding, the first arena) cancel; a 16-byte block kept"
echo "above the loop's block stops glibc from trimming the heap top on each free. (a) plain glibc;"
echo "(b) under LD_PRELOAD=libmemprof-preload.so, detached (nothing sampling); (c) the same, with"
echo "an in-process profile started through the preload's memprof_start at the given rate (no"
echo "call stack, a tracker whose callbacks are all NULL, fixed seed); samples = those of the"
echo "last N pairs. Valgrind cannot run a process with live uprobes (the kernel patches the text"
echo "it translates), so (c) is the sampling path without a tracer: the kernel-side cost of a"
echo "traced sample (uprobe trap, BPF program, stack copy) and the call-stack capture for the"
echo "probe are not visible to callgrind; they are in the CPU ns per sample column above."
echo
if [ -n "$pair_missing" ]; then
	na "$pair_missing"
else
	python3 bench/lib/pairs.py table "$WORK/t2-pair.txt" "$PAIR_N"
fi
echo
python3 bench/lib/explain.py t2 "$WORK" 2>/dev/null || true
