#!/usr/bin/env bash
# Table 6: the loader's symbolization on a large C++ binary.  clang (the
# compiler itself: clang, libclang-cpp and libLLVM, well over 100 MB of
# code) compiles a C++ file under the malloc host while memprof-bpf is
# attached; the loader then symbolizes every sampled stack, once with DWARF
# (libdwfl: debug files, lines, inline frames) and once with --no-dwarf
# (symbol tables only).  Its own -v line reports the time and memory.
set -uo pipefail
. bench/lib/common.sh
LOADER=$BUILD/memprof-bpf
PRELOAD=$PWD/$BUILD/libmemprof-preload.so
RATE=1e-4

./scripts/install-deps.sh clang >/dev/null || { na "cannot install clang"; exit 0; }
CLANG=$(command -v clang) || { na "no clang"; exit 0; }
CLANG=$(readlink -f "$CLANG")
src=$WORK/symbolize-input.cpp
cat >"$src" <<'CPP'
#include <algorithm>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>
template <int N> struct Gen {
	std::map<std::string, std::vector<int>> m;
	int run(const std::string &s)
	{
		std::regex re("[a-z]+" + std::to_string(N));
		std::smatch sm;
		std::regex_search(s, sm, re);
		m[s].push_back(N);
		return Gen<N - 1>().run(s) + (int)sm.size();
	}
};
template <> struct Gen<0> {
	int run(const std::string &) { return 0; }
};
int main() { std::cout << Gen<60>().run("abc") << "\n"; }
CPP

# run_one NAME [LOADER ARGS...]: one compile with the loader attached.
run_one() {
	local name=$1 ready=$WORK/sym.$1.ready err=$WORK/sym.$1.err
	shift
	rm -f "$ready"
	# clang runs cc1 in process (-fintegrated-cc1): the compiler is the target.
	(LD_PRELOAD=$PRELOAD "$CLANG" -O2 -c "$src" -o "$WORK/sym.$name.o" &
		echo $! >"$ready"
		wait) &
	wait_for_line "$ready" '[0-9]' 10 || { na "clang did not start"; return 1; }
	sleep 0.2
	"$LOADER" attach "$(cat "$ready")" --rate "$RATE" -v -o "$WORK/sym.$name.pb.gz" "$@" \
		2>"$err" >/dev/null
	wait
	grep 'symbolization:' "$err" | sed 's/^memprof-bpf: symbolization: //'
}

echo "## Table 6: symbolization of a large C++ binary"
echo
echo "The loader attached to \`$(basename "$CLANG")\` compiling a template-heavy C++ file under"
echo "the malloc host at rate $RATE, until it exits; then it symbolizes every sampled stack and"
echo "writes pprof. The figures are the loader's own (\`-v\`): wall and CPU time of the"
echo "symbolization and writing, and its peak RSS before and after."
echo
echo "| symbolization | what it reported |"
echo "|---|---|"
echo "| DWARF (libdwfl: debug files, lines, inline frames) | $(run_one dwarf) |"
echo "| symbol tables only (\`--no-dwarf\`) | $(run_one bare --no-dwarf) |"
echo
echo "Modules \"with DWARF\" are those whose debug information was found (the binary itself,"
echo "/usr/lib/debug by build-id or .gnu_debuglink, or debuginfod when DEBUGINFOD_URLS is set)."
