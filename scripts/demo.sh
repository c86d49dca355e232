#!/usr/bin/env bash
# make demo: run the bundled workload (build/workload-sites), attach
# memprof-bpf to it for a few seconds, write the five views as
# build/demo/<view>.folded (peak.folded among them), the alloc view as an
# interactive flame graph (build/demo/alloc.svg), every view as pprof
# (build/demo/profile.pb.gz) and as JSON (build/demo/profile.json), the text
# report (build/demo/report.txt), the lifetimes per site
# (build/demo/lifetimes.csv) and the timeline of live memory
# (build/demo/timeline.svg), and print the top
# allocation sites of each view; then the same with the bundled OCaml
# program, into build/demo/ocaml/<view>.folded.
set -euo pipefail

BUILD=${BUILD:-build}
TRACE_SECONDS=${TRACE_SECONDS:-3}
RATE=${RATE:-1e-4}
OUT="$BUILD/demo"
WORKLOAD="$BUILD/workload-sites"
LOADER="$BUILD/memprof-bpf"
TOP=5

die() {
	echo "demo: $*" >&2
	exit 1
}

[ "$(id -u)" -eq 0 ] || die "run as root (the profiler loads BPF programs)"
[ -x "$WORKLOAD" ] || die "$WORKLOAD is not built"
[ -x "$LOADER" ] || die "$LOADER is not built"

mkdir -p "$OUT"
rm -f "$OUT"/*.folded "$OUT/ready" "$OUT/alloc.svg" "$OUT/report.txt" "$OUT/profile.pb.gz" \
	"$OUT/profile.json" "$OUT/lifetimes.csv" "$OUT/timeline.svg"
"$WORKLOAD" --seconds "$((TRACE_SECONDS + 30))" --ready-file "$OUT/ready" >"$OUT/workload.txt" &
workload=$!
trap 'kill "$workload" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
	[ -s "$OUT/ready" ] && break
	sleep 0.1
done
[ -s "$OUT/ready" ] || die "the workload did not start"

echo "demo: tracing workload-sites (pid $workload) for ${TRACE_SECONDS}s at rate $RATE"
"$LOADER" attach "$workload" -d "$TRACE_SECONDS" --rate "$RATE" --all-views "$OUT" \
	-o "$OUT/alloc.svg" -o "$OUT/report.txt" -o "$OUT/profile.pb.gz" -o "$OUT/profile.json" \
	--lifetimes "$OUT/lifetimes.csv" --timeline "$OUT/timeline.svg" \
	2>"$OUT/memprof-bpf.log" || die "memprof-bpf failed: $(tail -n 1 "$OUT/memprof-bpf.log")"
kill -TERM "$workload"
wait "$workload" || true
trap - EXIT
grep -E 'warning:|note:' "$OUT/memprof-bpf.log" | sed 's/^memprof-bpf: /demo: /' || true

# Sum a folded file by allocation site: the innermost frame named site_*,
# else the innermost frame.
top_sites() {
	awk -v top="$TOP" '
	{
		w = $NF
		sub(/ [0-9]+$/, "")
		n = split($0, f, ";")
		site = f[n]
		for (i = n; i >= 1; i--)
			if (f[i] ~ /^site_/) {
				site = f[i]
				break
			}
		sum[site] += w
		total += w
	}
	END {
		if (total == 0) {
			print "    (empty)"
			exit
		}
		for (s in sum)
			printf "%.0f %s\n", sum[s], s
	}' "$1" | sort -rn | head -n "$TOP" | awk '
		NF == 2 { printf "    %12.1f KiB  %s\n", $1 / 1024, $2 }
		NF != 2 { print }'
}

for view in alloc live promoted short peak; do
	file="$OUT/$view.folded"
	echo
	echo "== $view: $file"
	top_sites "$file"
done
echo
echo "== flame graph of the alloc view: $OUT/alloc.svg (open it in a browser: click to zoom, Search; the view buttons or number keys switch views)"
echo "== text report with 95% intervals: $OUT/report.txt; every view as pprof: $OUT/profile.pb.gz"
echo "   (go tool pprof -sample_index=inuse_space -top $OUT/profile.pb.gz)"
echo "== the whole profile as JSON (every view, stack, frame, interval, the lifetimes): $OUT/profile.json"
echo
echo "== lifetimes per site (ms; bound_from: the first percentile that is only a lower bound,"
echo "   because blocks were still alive at the end): $OUT/lifetimes.csv"
cut -d, -f1-9 "$OUT/lifetimes.csv" | column -t -s, | sed 's/^/    /'
echo "== live memory over the attach, by site: $OUT/timeline.svg"
echo
echo "== what the workload itself counted (words, headers included; all its run):"
sed 's/^/    /' "$OUT/workload.txt"

# The OCaml host: the bundled OCaml program (tests/ocaml/progs/sites.ml,
# linked with the memprof_probe findlib package), into $OUT/ocaml/.
OCAML_PROG="$BUILD/tests/ocaml/progs/sites"
OCAML_OUT="$OUT/ocaml"
[ -x "$OCAML_PROG" ] || die "$OCAML_PROG is not built"
mkdir -p "$OCAML_OUT"
rm -f "$OCAML_OUT"/*.folded "$OCAML_OUT/ready"
# It starts at once: its go file (tests/ocaml/progs/gate.ml) is there already.
touch "$OCAML_OUT/ready.go"
"$OCAML_PROG" 1000000000 "$OCAML_OUT/ready" 5e6 >"$OCAML_OUT/program.txt" &
ocaml_pid=$!
trap 'kill "$ocaml_pid" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
	[ -s "$OCAML_OUT/ready" ] && break
	sleep 0.1
done
[ -s "$OCAML_OUT/ready" ] || die "the OCaml program did not start"
echo
echo "demo: tracing the OCaml program sites (pid $ocaml_pid) for ${TRACE_SECONDS}s at rate $RATE"
"$LOADER" attach "$ocaml_pid" -d "$TRACE_SECONDS" --rate "$RATE" --all-views "$OCAML_OUT" \
	2>"$OCAML_OUT/memprof-bpf.log" || die "memprof-bpf failed: $(tail -n 1 "$OCAML_OUT/memprof-bpf.log")"
kill -TERM "$ocaml_pid"
wait "$ocaml_pid" || true
trap - EXIT
grep -E 'warning:|note:' "$OCAML_OUT/memprof-bpf.log" | sed 's/^memprof-bpf: /demo: /' || true
for view in alloc live promoted short peak; do
	file="$OCAML_OUT/$view.folded"
	echo
	echo "== OCaml $view: $file"
	top_sites "$file"
done
echo
echo "== the OCaml program's words per iteration, by site (headers included):"
echo "    Work.make_point 16 (dies young), Work.make_record 6 (kept in a ring),"
echo "    Work.make_entry 4 (kept to the end), Sites.entry 1.5 (list cells, kept)"
