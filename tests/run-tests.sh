#!/usr/bin/env bash
# Runs every test program given as an argument (Criterion binaries), shows
# their output, and ends with the failed tests (name, assertion lines and
# their messages),
# the slowest programs, and one summary line: "N passed, N failed".
# Exits non-zero if any test failed or any program failed to run cleanly.
set -u

passed=0
failed=0
status=0
failures=()
timings=()
for bin in "$@"; do
	name=${bin#build/}
	echo "=== $name"
	log=$(mktemp)
	start=$SECONDS
	"$bin" --jobs 1 --verbose=0 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	timings+=("$((SECONDS - start)) $name")
	line=$(grep -a 'Synthesis:' "$log" | tail -n 1)
	if [ -z "$line" ]; then
		echo "run-tests: $name printed no Criterion synthesis (exit $rc)" >&2
		failures+=("$name: no Criterion synthesis (exit $rc)")
		failures+=("$(tail -n 5 "$log" | sed 's/^/    /')")
		rm -f "$log"
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
		# Criterion marks a failed assertion "[----] file:line: Assertion
		# failed" and the test "[FAIL]"; a crash is "[CRASH]" or
		# "Warning! The test ... crashed".
		failures+=("$name (exit $rc):")
		# The two lines after an assertion carry its message.
		failures+=("$(grep -a -A 2 -E '\[FAIL\]|\[CRASH|crashed|Assertion|assertion|Timed out' "$log" |
			cut -c 1-400 | head -n 40 | sed 's/^/    /')")
	fi
	rm -f "$log"
done
echo "=== slowest programs (seconds)"
printf '%s\n' "${timings[@]}" | sort -rn | head -n 8
if [ "${#failures[@]}" -ne 0 ]; then
	echo "=== failed"
	printf '%s\n' "${failures[@]}"
fi
echo "tests: $passed passed, $failed failed"
exit "$status"
