#!/usr/bin/env bash
# Table 7: what the lifetime histograms cost the events program.  The
# kernel's own accounting (sysctl kernel.bpf_stats_enabled: run_time_ns and
# run_cnt per BPF program) times memprof_events, which walks each batch of
# promotions and deaths, while the loader is attached to the bundled
# workload, with the histograms (the default) and without
# (MEMPROF_BPF_LIFETIME_HISTS=0: the loader sets a read-only flag before
# load, and the verifier drops the histogram code), in alternating rounds.
# The workload is stopped before the statistics are read, so they cover
# exactly the events the loader's final counts report.
# Standalone: BUILD=build REPS=5 bash bench/tables/t7-lifetimes.sh
set -uo pipefail
. bench/lib/common.sh
BUILD=${BUILD:-build}
REPS=${REPS:-5}
WORK=${WORK:-$BUILD/bench/work}
LOADER=$BUILD/memprof-bpf
WORKLOAD=$BUILD/workload-sites
RATE=1e-3
SECONDS_ATTACHED=$([ "${BENCH_QUICK:-0}" = 1 ] && echo 3 || echo 5)
mkdir -p "$WORK"

echo "## Table 7: lifetime histograms in the events program"
echo
command -v bpftool >/dev/null || { na "no bpftool"; exit 0; }
[ -x "$LOADER" ] && [ -x "$WORKLOAD" ] || { na "$LOADER or $WORKLOAD not built"; exit 0; }
old_stats=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null) || { na "no kernel.bpf_stats_enabled"; exit 0; }
sysctl -qw kernel.bpf_stats_enabled=1 || { na "cannot enable kernel.bpf_stats_enabled"; exit 0; }
trap 'sysctl -qw kernel.bpf_stats_enabled="$old_stats"' EXIT

# The id of the memprof_events program that process $1 holds (its fds'
# fdinfo give the program ids; other loaders may run at the same time).
events_id_of() {
	local f id
	for f in /proc/"$1"/fdinfo/*; do
		id=$(awk '/^prog_id:/ {print $2}' "$f" 2>/dev/null)
		[ -n "$id" ] || continue
		bpftool prog show id "$id" 2>/dev/null | grep -q ' name memprof_events ' && {
			echo "$id"
			return 0
		}
	done
	return 1
}

# one HISTS: "ns_per_event events deaths batches" of memprof_events over one attach.
one() {
	local hists=$1 ready=$WORK/t7.ready id lp wp stats
	rm -f "$ready"
	"$WORKLOAD" --seconds $((SECONDS_ATTACHED + 5)) --ready-file "$ready" >/dev/null &
	wp=$!
	wait_for_line "$ready" '[0-9]' 10 || { kill $wp; return 1; }
	MEMPROF_BPF_LIFETIME_HISTS=$hists "$LOADER" attach $wp -d "$SECONDS_ATTACHED" --rate $RATE \
		-o /dev/null -v 2>"$WORK/t7.err" &
	lp=$!
	wait_for_line "$WORK/t7.err" '^memprof-bpf: attached' 10
	sleep $((SECONDS_ATTACHED - 1))
	# No event after this: the statistics and the loader's counts agree.
	kill -STOP $wp
	sleep 0.1
	stats=""
	if id=$(events_id_of $lp); then
		stats=$(bpftool prog show id "$id" -j)
	fi
	wait $lp
	kill -CONT $wp 2>/dev/null
	kill $wp 2>/dev/null
	wait $wp 2>/dev/null
	[ -n "$stats" ] || return 1
	printf '%s\n' "$stats" | python3 -c 'import json,re,sys
p=json.load(sys.stdin)
err=open(sys.argv[1]).read()
def stat(k):
    m=re.search(r"\b%s (\d+)" % k, err)
    return int(m.group(1)) if m else 0
ev=stat("promotes")+stat("deallocs")
if ev and p.get("run_cnt"):
    print("%.1f %d %d %d" % (p.get("run_time_ns",0)/ev, ev, stat("deallocs"), p["run_cnt"]))' "$WORK/t7.err"
	return 0
}

on=() off=()
for ((r = 0; r < REPS; r++)); do
	if ((r % 2)); then order="0 1"; else order="1 0"; fi
	for h in $order; do
		v=$(one $h) || continue
		[ -n "$v" ] || continue
		if [ "$h" = 1 ]; then on+=("$v"); else off+=("$v"); fi
	done
done
[ ${#on[@]} -gt 0 ] && [ ${#off[@]} -gt 0 ] || { na "no measurement (another memprof loader running?)"; exit 0; }

summary() {
	printf '%s\n' "$@" | python3 -c 'import statistics,sys
rows=[l.split() for l in sys.stdin if l.strip()]
ns=[float(r[0]) for r in rows]
print("%.0f ns (%.0f..%.0f) | %d | %d | %d" % (statistics.median(ns), min(ns), max(ns),
      statistics.median(int(r[1]) for r in rows), statistics.median(int(r[2]) for r in rows),
      statistics.median(int(r[3]) for r in rows)))'
}
med() { printf '%s\n' "$@" | awk '{print $1}' | median; }
m_on=$(med "${on[@]}")
m_off=$(med "${off[@]}")
# Deaths per event (the histograms work on deaths only).
share=$(printf '%s\n' "${on[@]}" | awk '{ if ($2) print $3 / $2 }' | median)

echo "\`memprof_events\`' run time per event (a promotion or a death), from the kernel's BPF"
echo "statistics (its total run time over the events the loader counted), attached"
echo "${SECONDS_ATTACHED}s to \`workload-sites\` at rate $RATE; median over ${#on[@]}/${#off[@]} rounds (range)."
echo "One run walks a batch (bpf_loop); per death it finds the block (its home slot), clears it"
echo "and updates the aggregates, and with the histograms also takes the death's time stamp from"
echo "the batch, one inlined array lookup and one atomic add. Nothing changes in the sample program."
echo
echo "| events program | run time per event | events per attach | deaths | batches (runs) |"
echo "|---|---|---|---|---|"
echo "| with lifetime histograms (default) | $(summary "${on[@]}") |"
echo "| without (\`MEMPROF_BPF_LIFETIME_HISTS=0\`) | $(summary "${off[@]}") |"
echo
python3 -c "d = ($m_on - $m_off) / $share; print('Added per death: %.0f ns (%.0f%% of the events program\'s time per event; deaths are %.0f%% of the events).' % (d, 100 * ($m_on - $m_off) / $m_off, 100 * $share))"
