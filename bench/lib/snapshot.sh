#!/usr/bin/env bash
# snapshot.sh FROM TO FILE...: copy the bench's inputs (paths relative to
# FROM) into TO, so that a rebuild of FROM while the bench runs (another
# `make` in the same tree) cannot swap a binary under a measurement.  ELF
# files are checked after the copy and copied again if they were caught
# half-written.  A missing input is skipped: its figures will say so.
set -uo pipefail
from=$1 to=$2
shift 2
COPY_TRIES=5
for f in "$@"; do
	[ -e "$from/$f" ] || continue
	mkdir -p "$(dirname "$to/$f")"
	for ((i = 0; i < COPY_TRIES; i++)); do
		if cp -p "$from/$f" "$to/$f" 2>/dev/null && readelf -h "$to/$f" >/dev/null 2>&1; then
			break
		fi
		rm -f "$to/$f"
		sleep 2
	done
	[ -e "$to/$f" ] || echo "bench: could not copy $from/$f" >&2
done
