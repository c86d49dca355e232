// C++ whose allocating functions return values, not void, and grow std
// containers (tests/output/test_sites.c): the allocation site must be the
// program's function, whatever the demangled name's return type.  Each
// allocating statement is on a line marked LINE:<function>.
//
//   cxx_sites READY_FILE
#include <map>
#include <string>
#include <vector>

#include "wait_tracer.h"

namespace shop
{

// double& (the return type of the std::vector<double>::emplace_back it calls)
__attribute__((noinline)) double &grow_prices(std::vector<double> &v, int n)
{
	for (int i = 0; i < n; i++)
		v.emplace_back(i * 1.5); // LINE:grow_prices
	return v.back();
}

// A std::map of long strings, returned by value.
__attribute__((noinline)) std::map<int, std::string> index_names(int n)
{
	std::map<int, std::string> m;

	for (int i = 0; i < n; i++)
		m.emplace(i, std::string(40 + i % 8, 'n')); // LINE:index_names
	return m;
}

// A std::string grown by appends.
__attribute__((noinline)) std::string build_report(int n)
{
	std::string s;

	for (int i = 0; i < n; i++)
		s += "one line of the report, long enough to grow\n"; // LINE:build_report
	return s;
}

// A function template returning a std type: its demangled name starts with
// "std::vector<long, std::allocator<long> > ".
template <typename T> __attribute__((noinline)) std::vector<T> make_series(int n)
{
	std::vector<T> v;

	for (int i = 0; i < n; i++)
		v.push_back(T(i)); // LINE:make_series
	return v;
}

} // namespace shop

int main(int argc, char **argv)
{
	size_t total = 0;

	if (argc != 2 || wait_for_tracer(argv[1])) {
		fprintf(stderr, "usage: cxx_sites READY_FILE (and a tracer within 60 s)\n");
		return 2;
	}
	for (int r = 0; r < 300; r++) {
		std::vector<double> prices;

		total += (size_t)shop::grow_prices(prices, 3000);
		total += shop::index_names(300).size();
		total += shop::build_report(400).size();
		total += shop::make_series<long>(3000).size();
	}
	printf("total %zu\n", total);
	return 0;
}
