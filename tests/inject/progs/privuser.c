/*
 * A library that allocates through its private allocator
 * (libprivalloc.so): loaded with RTLD_DEEPBIND, its GOT slots for malloc
 * and free are bound to that allocator, not to the process's.  The
 * injected malloc host must leave those slots alone.
 */
#include <stdlib.h>
#include <string.h>

#define KEPT 64

static void *kept[KEPT];

/* Replace one kept block: 0, or 1 when a block's bytes changed. */
int privuser_cycle(long i)
{
	int k = (int)(i % KEPT), bad = 0;
	size_t n = 32 + (size_t)(i % 200);

	if (kept[k]) {
		const unsigned char *c = kept[k];

		bad = c[0] != (unsigned char)k;
		free(kept[k]);
	}
	kept[k] = malloc(n);
	memset(kept[k], k, n);
	return bad;
}
