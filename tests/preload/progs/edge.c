/*
 * The malloc family's edge cases under the preload, as glibc gives them.
 * Prints "name=1" for each check that holds, "name=0" otherwise.
 *
 *   edge plain      no profile: every call takes the fast path
 *   edge sampled    an in-process profile at rate 1: every call is sampled
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tracker.h"

static void check(const char *name, int ok)
{
	printf("%s=%d\n", name, ok ? 1 : 0);
}

static int aligned(const void *p, size_t a)
{
	return p && ((uintptr_t)p & (a - 1)) == 0;
}

int main(int argc, char **argv)
{
	int sampled = argc == 2 && !strcmp(argv[1], "sampled");
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	/* volatile: the compiler must not see (and reject) the huge sizes. */
	volatile size_t huge = SIZE_MAX, half = SIZE_MAX / 2, big = (size_t)1 << 33;
	void *p;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (sampled && memprof_start(1.0, 0, &checking_tracker) != 0)
		return 1;

	errno = 0;
	p = calloc(half, 4);
	check("calloc_overflow", p == NULL && errno == ENOMEM);
	errno = 0;
	p = calloc(big, big);
	check("calloc_overflow_square", p == NULL && errno == ENOMEM);
	p = calloc(0, 0);
	check("calloc_zero", p != NULL);
	free(p);
	p = calloc(1000, 8);
	int zero = p != NULL;
	for (size_t i = 0; zero && i < 8000; i++)
		zero = ((unsigned char *)p)[i] == 0;
	check("calloc_zeroed", zero);
	free(p);

	errno = 0;
	p = malloc(huge);
	check("malloc_huge", p == NULL && errno == ENOMEM);
	p = malloc(0);
	check("malloc_zero", p != NULL);
	free(p);
	free(NULL);

	char *s = malloc(10);
	memcpy(s, "abcdefghi", 10);
	s = realloc(s, 100000);
	check("realloc_grow_keeps", s && !memcmp(s, "abcdefghi", 10));
	s = realloc(s, 5);
	check("realloc_shrink_keeps", s && !memcmp(s, "abcde", 5));
	char *volatile kept = s;
	errno = 0;
	void *q = realloc(s, half);
	check("realloc_fail_keeps", q == NULL && errno == ENOMEM && !memcmp(kept, "abcde", 5));
	check("realloc_zero_frees", realloc(kept, 0) == NULL);
	p = realloc(NULL, 24);
	check("realloc_null_mallocs", p != NULL && malloc_usable_size(p) >= 24);
	free(p);

	p = NULL;
	check("posix_memalign_bad", posix_memalign(&p, 3, 8) == EINVAL && p == NULL);
	check("posix_memalign_bad_small", posix_memalign(&p, 4, 8) == EINVAL);
	check("posix_memalign", posix_memalign(&p, 256, 100) == 0 && aligned(p, 256));
	free(p);
	check("posix_memalign_huge", posix_memalign(&p, 64, half) == ENOMEM);
	p = aligned_alloc(64, 128);
	check("aligned_alloc", aligned(p, 64));
	free(p);
	p = memalign(4096, 10);
	check("memalign", aligned(p, 4096));
	free(p);
	p = valloc(10);
	check("valloc", aligned(p, page));
	free(p);
	p = pvalloc(10);
	check("pvalloc", aligned(p, page) && malloc_usable_size(p) >= page);
	free(p);
	check("usable_size_null", malloc_usable_size(NULL) == 0);
	p = malloc(100);
	check("usable_size", malloc_usable_size(p) >= 100);
	free(p);

	if (sampled) {
		memprof_stop();
		check("order_ok", tracker_counts.order_errors == 0);
		/* Rate 1 per word, 1/8 per byte: small blocks may go unsampled. */
		check("saw_samples", tracker_counts.alloc_minor > 3);
		check("all_dead", tracker_live(0) == 0);
	}
	return 0;
}
