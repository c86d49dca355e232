#!/usr/bin/env bash
# Runs every test program given as an argument (Criterion binaries), shows
# their output, and ends with one summary line: "N passed, N failed".
# Exits non-zero if any test failed or any program failed to run cleanly.
set -u

passed=0
failed=0
status=0
for bin in "$@"; do
	name=${bin#build/}
	echo "=== $name"
	log=$(mktemp)
	"$bin" --jobs 1 --verbose=0 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	line=$(grep -a 'Synthesis:' "$log" | tail -n 1)
	rm -f "$log"
	if [ -z "$line" ]; then
		echo "run-tests: $name printed no Criterion synthesis (exit $rc)" >&2
		failed=$((failed + 1))
		status=1
		continue
	fi
	p=$(sed -n 's/.*Passing: \([0-9]*\).*/\1/p' <<<"$line")
	f=$(sed -n 's/.*Failing: \([0-9]*\).*/\1/p' <<<"$line")
	c=$(sed -n 's/.*Crashing: \([0-9]*\).*/\1/p' <<<"$line")
	passed=$((passed + p))
	failed=$((failed + f + c))
	if [ "$rc" -ne 0 ] || [ "$((f + c))" -ne 0 ]; then
		status=1
	fi
done
echo "tests: $passed passed, $failed failed"
exit "$status"
