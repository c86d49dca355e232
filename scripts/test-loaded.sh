#!/usr/bin/env bash
# make test-loaded: `make test` RUNS times in a row (default 3) while
# stress-ng keeps every core busy (one CPU hog per core), as on a loaded
# production machine.  Installs stress-ng when missing.  Exits non-zero at
# the first failing run; each run's summary line is printed with its number.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${RUNS:-3}
./scripts/install-deps.sh stress-ng
cores=$(nproc)
stress-ng --cpu "$cores" --timeout 0 --quiet &
hog=$!
trap 'kill "$hog" 2>/dev/null || true; wait "$hog" 2>/dev/null || true' EXIT
for ((r = 1; r <= runs; r++)); do
	log=$(mktemp)
	echo "test-loaded: run $r of $runs, $cores CPU hogs beside it"
	if ! make --no-print-directory test >"$log" 2>&1; then
		grep -a '^\[FAIL\]\|^tests:' "$log" || true
		echo "test-loaded: run $r failed (log: $log)"
		exit 1
	fi
	echo "test-loaded: run $r: $(grep -a '^tests:' "$log")"
	rm -f "$log"
done
