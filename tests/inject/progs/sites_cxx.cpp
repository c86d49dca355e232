// A C++ program for injection: new/delete, new[]/delete[] and std::vector
// growth, with containers built before the injection and grown after it.
//
//   inject-sites-cxx GO_FILE ROUNDS
//
// Output (deterministic): "site NAME words W" per site, "pre_containers=ok".
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

extern "C" {
#include "go_wait.h"
}

namespace
{
struct Node {
	long a[6]; // 48 bytes, trivially destructible: new[] adds no cookie
};
struct Big {
	char bytes[4096];
};
unsigned long long words[3];
} // namespace

extern "C" __attribute__((noinline)) void site_vector_growth(long n)
{
	std::vector<long> v;
	size_t cap = v.capacity();

	for (long i = 0; i < n; i++) {
		v.push_back(i);
		if (v.capacity() != cap) {
			cap = v.capacity();
			words[0] += cap; // sizeof(long) == 8: one word per element
		}
	}
}

extern "C" __attribute__((noinline)) void site_new_array(long n)
{
	Node *nodes = new Node[n];
	std::memset(static_cast<void *>(nodes), 0, sizeof(Node) * n);
	words[1] += (sizeof(Node) * n + 7) / 8;
	delete[] nodes;
}

extern "C" __attribute__((noinline)) void site_new_object()
{
	Big *b = new Big;
	b->bytes[0] = 1;
	words[2] += sizeof(Big) / 8;
	delete b;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		std::fprintf(stderr, "usage: inject-sites-cxx GO_FILE ROUNDS\n");
		return 2;
	}
	long rounds = std::atol(argv[2]);
	// Containers from before the injection, changed after it.
	std::vector<std::string> pre;
	std::map<int, std::string> pre_map;
	for (int i = 0; i < 2000; i++) {
		pre.push_back(std::string(50 + i % 200, char('a' + i % 26)));
		pre_map[i] = pre.back();
	}
	if (go_wait(argv[1])) {
		std::fprintf(stderr, "inject-sites-cxx: no %s\n", argv[1]);
		return 1;
	}
	bool ok = true;
	for (long i = 0; i < rounds; i++) {
		site_vector_growth(1 + i % 300);
		site_new_array(1 + i % 50);
		if (i % 8 == 0)
			site_new_object();
		if (i < 2000) {
			// Grow and free the containers from before.
			pre.push_back(pre[i] + "x");
			ok = ok && pre_map[int(i)] == pre[i];
			pre_map.erase(int(i));
			pre[i].clear();
			pre[i].shrink_to_fit();
		}
	}
	ok = ok && pre_map.empty() && pre.size() == 4000;
	const char *names[3] = {"site_vector_growth", "site_new_array", "site_new_object"};
	for (int s = 0; s < 3; s++)
		std::printf("site %s words %llu\n", names[s], words[s]);
	std::printf("pre_containers=%s\n", ok ? "ok" : "DAMAGED");
	return ok ? 0 : 1;
}
