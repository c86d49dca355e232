// C++ under the preload, for the demangling and inline-frame checks
// (tests/output/test_cxx.c): a class template in a namespace fills std
// containers, so operator new is reached through libstdc++ and through
// std::vector's members inlined (-O2) into app::Store<T>::add.
//
//   cxx_app READY_FILE
#include <map>
#include <string>
#include <vector>

#include "wait_tracer.h"

namespace app
{
namespace storage
{

template <typename T> class Store
{
      public:
	__attribute__((noinline)) void add(const T &v)
	{
		items_.push_back(v);
	}
	__attribute__((noinline)) void index(const std::string &key, const T &v)
	{
		by_name_[key].push_back(v);
	}
	size_t size() const
	{
		return items_.size() + by_name_.size();
	}

      private:
	std::vector<T> items_;
	std::map<std::string, std::vector<T>> by_name_;
};

} // namespace storage

struct Point {
	double x, y, z;
};

__attribute__((noinline)) size_t fill(int rounds)
{
	size_t total = 0;

	for (int r = 0; r < rounds; r++) {
		storage::Store<Point> points;
		storage::Store<long> numbers;

		for (int i = 0; i < 2000; i++) {
			points.add(Point{1.0 * i, 2.0, 3.0});
			numbers.add(i);
			if (i % 16 == 0)
				numbers.index("key-" + std::to_string(i % 257), i);
		}
		total += points.size() + numbers.size();
	}
	return total;
}

} // namespace app

int main(int argc, char **argv)
{
	if (argc != 2 || wait_for_tracer(argv[1])) {
		fprintf(stderr, "usage: cxx_app READY_FILE (and a tracer within 60 s)\n");
		return 2;
	}
	printf("total %zu\n", app::fill(200));
	return 0;
}
