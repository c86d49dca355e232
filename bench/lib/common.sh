# Shared bash helpers for bench/run.sh and bench/tables/*.sh (sourced).

# Figures a table cell cannot have: one reason, never a made-up number.
na() {
	echo "not available: $*"
}

# wait_for_line FILE REGEX TIMEOUT_S: 0 once a line of FILE matches.
wait_for_line() {
	local file=$1 re=$2 timeout=$3 i
	for ((i = 0; i < timeout * 20; i++)); do
		grep -Eq -- "$re" "$file" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

# The path of the C library a program loads.
libc_of() {
	ldd "$1" | awk '/libc\.so/ {print $3; exit}'
}

# Median of numbers on stdin.
median() {
	python3 -c 'import statistics,sys; v=[float(x) for x in sys.stdin.read().split()]; print(statistics.median(v) if v else "")'
}

log() {
	echo "bench: $*" >&2
}
