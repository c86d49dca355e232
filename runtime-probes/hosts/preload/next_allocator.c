/*
 * The allocator we delegate to: the next definition of each function after
 * this library in the lookup order (glibc's, or another preloaded one).
 * Injected into a running process, this library comes after the program's
 * allocator in the lookup order: then that allocator, the first definition,
 * is the one to delegate to.
 */
#include <dlfcn.h>
#include <string.h>
#include <unistd.h>

#include "preload.h"

/* Before the lookup only free(NULL) can reach next.free (the free gate). */
static void free_nothing(void *p)
{
	(void)p;
}

struct next_allocator next = {.free = free_nothing};

static void *next_symbol(void *where, const char *name, int *missing)
{
	/* Injected: the program's own definition, never a canonical PLT entry. */
	void *f = where == RTLD_DEFAULT ? (void *)got_first_definition(name, 1, NULL)
					: dlsym(where, name);

	if (!f)
		*missing = 1;
	return f;
}

int next_allocator_resolve(void)
{
	int missing = 0;
	struct next_allocator n;
	/* Is ours the malloc symbol lookup finds first?  dlsym may also answer
	 * with a non-PIE executable's canonical PLT entry: then look closer. */
	int first_is_ours = dlsym(RTLD_DEFAULT, "malloc") == (void *)preload_malloc;
	if (!first_is_ours)
		got_first_definition("malloc", 0, &first_is_ours);
	int injected = !first_is_ours;
	void *where = injected ? RTLD_DEFAULT : RTLD_NEXT;

	atomic_store_explicit(&preload_injected, injected, memory_order_relaxed);

	n.malloc = (void *(*)(size_t))next_symbol(where, "malloc", &missing);
	n.calloc = (void *(*)(size_t, size_t))next_symbol(where, "calloc", &missing);
	n.realloc = (void *(*)(void *, size_t))next_symbol(where, "realloc", &missing);
	n.free = (void (*)(void *))next_symbol(where, "free", &missing);
	n.posix_memalign =
	    (int (*)(void **, size_t, size_t))next_symbol(where, "posix_memalign", &missing);
	n.aligned_alloc = (void *(*)(size_t, size_t))next_symbol(where, "aligned_alloc", &missing);
	n.memalign = (void *(*)(size_t, size_t))next_symbol(where, "memalign", &missing);
	n.valloc = (void *(*)(size_t))next_symbol(where, "valloc", &missing);
	n.pvalloc = (void *(*)(size_t))next_symbol(where, "pvalloc", &missing);
	n.malloc_usable_size =
	    (size_t(*)(void *))next_symbol(where, "malloc_usable_size", &missing);
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
