// C++ under the preload, at rate 1 with call stacks: new, delete and
// std::vector reach the interposed malloc and free through libstdc++, and
// the DWARF unwinder walks out of libstdc++ and glibc (no frame pointers)
// back to the functions below.  Prints "key=value" lines.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <vector>

#include "memprof.h"

namespace
{

constexpr size_t kStack = 64;

// What the tracker keeps: counts per callback and the stacks of a few sizes.
struct Seen {
	std::atomic<unsigned long long> allocs{0}, deallocs{0}, samples{0};
	uintptr_t stack[4][kStack];
	size_t stack_len[4] = {0, 0, 0, 0};
};
Seen seen;

int slot_of_size(size_t words)
{
	switch (words) {
	case 500: // new int[1000]
		return 0;
	case 1024: // the vector's buffer at 8192 bytes
		return 1;
	case 13: // strdup of 100 bytes
		return 2;
	default:
		return -1;
	}
}

int on_alloc(void *, const memprof_allocation *info, memprof_value *out)
{
	seen.allocs++;
	seen.samples += info->n_samples;
	int k = slot_of_size(info->size);
	if (k >= 0 && seen.stack_len[k] == 0) {
		size_t n = info->callstack_len < kStack ? info->callstack_len : kStack;
		std::memcpy(seen.stack[k], info->callstack, n * sizeof(uintptr_t));
		seen.stack_len[k] = n;
	}
	*out = 1;
	return 0;
}

int on_promote(void *, memprof_value minor, memprof_value *major)
{
	*major = minor;
	return 0;
}

int on_dealloc(void *, memprof_value)
{
	seen.deallocs++;
	return 0;
}

// Does the stack hold a return address inside `fn`?  And is its first frame
// in an object whose name contains `first_object`?
void report_stack(const char *name, int k, const void *fn, const char *first_object)
{
	Dl_info want, got;
	int found = 0, first_ok = 0;

	if (dladdr(fn, &want) && want.dli_saddr)
		for (size_t i = 0; i < seen.stack_len[k]; i++)
			if (dladdr(reinterpret_cast<void *>(seen.stack[k][i] - 1), &got) &&
			    got.dli_saddr == want.dli_saddr)
				found = 1;
	if (seen.stack_len[k] > 0 && dladdr(reinterpret_cast<void *>(seen.stack[k][0] - 1), &got) &&
	    got.dli_fname)
		first_ok = std::strstr(got.dli_fname, first_object) != nullptr;
	std::printf("%s_depth=%zu\n%s_has_caller=%d\n%s_first_in_%s=%d\n", name, seen.stack_len[k],
		    name, found, name, first_object, first_ok);
}

} // namespace

extern "C" {
__attribute__((noinline)) int *make_ints()
{
	int *a = new int[1000];
	a[999] = 1;
	return a;
}

__attribute__((noinline)) size_t fill_vector()
{
	std::vector<long> v;
	for (long i = 0; i < 1024; i++)
		v.push_back(i);
	return v.size();
}

__attribute__((noinline)) char *dup_string()
{
	static char text[100];
	std::memset(text, 'x', sizeof(text) - 1);
	return strdup(text);
}
}

int main()
{
	memprof_tracker tracker = {};
	tracker.alloc_minor = on_alloc;
	tracker.alloc_major = on_alloc;
	tracker.promote = on_promote;
	tracker.dealloc_minor = on_dealloc;
	tracker.dealloc_major = on_dealloc;

	std::setvbuf(stdout, nullptr, _IONBF, 0);
	if (memprof_start(1.0, kStack, &tracker) != 0)
		return 1;
	unsigned long long words = 0;
	int *a = make_ints();
	words += 500;
	size_t n = fill_vector();
	// push_back doubles the capacity: 1, 2, 4, ... 1024 longs.
	for (size_t c = 1; c <= 1024; c *= 2)
		words += c;
	char *s = dup_string();
	words += 13;
	{
		std::string big(1000, 'y'); // 1001 bytes: 126 words
		words += 126;
	}
	delete[] a;
	std::free(s);
	memprof_stop();

	std::printf("vector_size=%zu\n", n);
	std::printf("words=%llu\nsamples=%llu\n", words, seen.samples.load());
	std::printf("allocs=%llu\ndeallocs=%llu\n", seen.allocs.load(), seen.deallocs.load());
	report_stack("new", 0, reinterpret_cast<const void *>(make_ints), "libstdc++");
	report_stack("vector", 1, reinterpret_cast<const void *>(fill_vector), "libstdc++");
	report_stack("strdup", 2, reinterpret_cast<const void *>(dup_string), "libc.so");
	return 0;
}
