/*
 * A private allocator (libprivalloc.so): malloc, free, calloc and realloc
 * from an arena of its own, for the library that binds to it with
 * RTLD_DEEPBIND (privuser.c).  free of a block it did not make aborts, so
 * a block sent to the wrong allocator (a slot rewritten that should have
 * been left alone) ends the program.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_BYTES (64u << 20)
#define HEADER 16
#define MAGIC 0x707269766174656cull

static unsigned char arena[ARENA_BYTES] __attribute__((aligned(16)));
static size_t used;

static int ours(const void *p)
{
	const unsigned char *c = p;

	return c >= arena + HEADER && c < arena + ARENA_BYTES &&
	       *(const uint64_t *)(c - HEADER) == MAGIC;
}

void *malloc(size_t n)
{
	size_t need = HEADER + ((n + 15) & ~(size_t)15);
	unsigned char *p;

	/* A bump arena that starts over: the user keeps few blocks at once. */
	if (__atomic_add_fetch(&used, need, __ATOMIC_RELAXED) > ARENA_BYTES)
		__atomic_store_n(&used, need, __ATOMIC_RELAXED);
	p = arena + __atomic_load_n(&used, __ATOMIC_RELAXED) - need;
	*(uint64_t *)p = MAGIC;
	*(uint64_t *)(p + 8) = n;
	return p + HEADER;
}

void free(void *p)
{
	if (p && !ours(p))
		abort();
}

void *calloc(size_t k, size_t n)
{
	void *p = malloc(k * n);

	memset(p, 0, k * n);
	return p;
}

void *realloc(void *p, size_t n)
{
	void *q = malloc(n);

	if (p) {
		size_t old;

		if (!ours(p))
			abort();
		old = *(uint64_t *)((unsigned char *)p - 8);
		memcpy(q, p, old < n ? old : n);
	}
	return q;
}
