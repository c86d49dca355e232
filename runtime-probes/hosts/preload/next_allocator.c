/*
 * The allocator we delegate to: the next definition of each function after
 * this library in the lookup order (glibc's, or another preloaded one).
 */
#include <dlfcn.h>
#include <string.h>
#include <unistd.h>

#include "preload.h"

struct next_allocator next;

static void *next_symbol(const char *name, int *missing)
{
	void *f = dlsym(RTLD_NEXT, name);

	if (!f)
		*missing = 1;
	return f;
}

int next_allocator_resolve(void)
{
	int missing = 0;
	struct next_allocator n;

	n.malloc = (void *(*)(size_t))next_symbol("malloc", &missing);
	n.calloc = (void *(*)(size_t, size_t))next_symbol("calloc", &missing);
	n.realloc = (void *(*)(void *, size_t))next_symbol("realloc", &missing);
	n.free = (void (*)(void *))next_symbol("free", &missing);
	n.posix_memalign =
	    (int (*)(void **, size_t, size_t))next_symbol("posix_memalign", &missing);
	n.aligned_alloc = (void *(*)(size_t, size_t))next_symbol("aligned_alloc", &missing);
	n.memalign = (void *(*)(size_t, size_t))next_symbol("memalign", &missing);
	n.valloc = (void *(*)(size_t))next_symbol("valloc", &missing);
	n.pvalloc = (void *(*)(size_t))next_symbol("pvalloc", &missing);
	n.malloc_usable_size = (size_t(*)(void *))next_symbol("malloc_usable_size", &missing);
	if (missing) {
		static const char msg[] =
		    "memprof-preload: the next allocator lacks part of the malloc family\n";
		/* write(2): stdio may allocate. */
		ssize_t unused = write(2, msg, sizeof(msg) - 1);
		(void)unused;
		return -1;
	}
	next = n;
	return 0;
}
