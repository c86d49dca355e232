/*
 * mallocpair: the instruction cost of one malloc+free pair, for callgrind.
 *
 * A loop of ITERATIONS times { p = malloc(SIZE); touch p; free(p); } in
 * one non-inlined function, pair_loop.  Run under
 *   valgrind --tool=callgrind --collect-atstart=no --toggle-collect=pair_loop
 * plain, or with LD_PRELOAD=libmemprof-preload.so (the malloc host).  With
 * RATE, the program first starts an in-process profile at RATE (no call
 * stack, a tracker whose callbacks are all NULL) through the memprof_start
 * the preload exports, found with dlsym: the sampling path without a
 * tracer, which callgrind can run (a process with live uprobes it cannot).
 * Two iteration counts and the difference of their Ir give the price of
 * one pair without the one-off costs (lazy binding, first arena).
 *
 * Before the loop a small block is kept allocated above the loop's block,
 * so free never merges it into the heap's top chunk: otherwise glibc trims
 * the top on every free of a large block, and whether that happens would
 * depend on where the sampler's own first allocations landed.
 *
 * usage: mallocpair SIZE ITERATIONS [RATE]
 * Output: "samples N" when RATE is given (the profile's sample count).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memprof.h"

#define NOINLINE __attribute__((noinline))

/* Fixed seed: the same sample points, so the same Ir, run after run. */
enum { SAMPLER_SEED = 20200101 };
enum { MAX_SIZE = 1 << 30 };
enum { PIN_BYTES = 16 };

typedef int (*start_fn)(double, size_t, const memprof_tracker *);
typedef void (*seed_fn)(uint64_t);
typedef void (*stats_fn)(memprof_stats *);

static unsigned char *volatile sink;

NOINLINE static void pair_loop(size_t size, unsigned long long n)
{
	for (unsigned long long i = 0; i < n; i++) {
		unsigned char *p = malloc(size);

		if (!p)
			abort();
		p[0] = (unsigned char)i;
		p[size - 1] = (unsigned char)i;
		sink = p;
		free(p);
	}
}

static int parse_count(const char *s, unsigned long long max, unsigned long long *out)
{
	char *end;

	errno = 0;
	*out = strtoull(s, &end, 10);
	return !errno && end != s && !*end && *out > 0 && *out <= max && s[0] != '-';
}

/* Start the in-process profile at `rate`; 0 or a reason on stderr and 1. */
static int profile_start(double rate)
{
	start_fn start = (start_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "memprof_start");
	seed_fn seed = (seed_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "memprof_set_seed");
	static const memprof_tracker null_tracker;

	if (!start || !seed) {
		fprintf(stderr, "mallocpair: memprof_start not found (run under "
				"LD_PRELOAD=libmemprof-preload.so)\n");
		return 1;
	}
	seed(SAMPLER_SEED);
	int err = start(rate, 0, &null_tracker);
	if (err) {
		fprintf(stderr, "mallocpair: memprof_start(%g) failed: %s\n", rate, strerror(err));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long long size, n;
	double rate = 0;
	char *end;

	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: mallocpair SIZE ITERATIONS [RATE]\n");
		return 2;
	}
	if (!parse_count(argv[1], MAX_SIZE, &size)) {
		fprintf(stderr, "mallocpair: bad SIZE '%s' (1 to %d bytes)\n", argv[1], MAX_SIZE);
		return 2;
	}
	if (!parse_count(argv[2], ~0ULL, &n)) {
		fprintf(stderr, "mallocpair: bad ITERATIONS '%s'\n", argv[2]);
		return 2;
	}
	if (argc == 4) {
		errno = 0;
		rate = strtod(argv[3], &end);
		if (errno || end == argv[3] || *end || !(rate > 0 && rate <= 1)) {
			fprintf(stderr, "mallocpair: bad RATE '%s' (in (0, 1])\n", argv[3]);
			return 2;
		}
		if (profile_start(rate))
			return 1;
	}
	void *first = malloc(size);
	void *pin = malloc(PIN_BYTES);

	if (!first || !pin) {
		fprintf(stderr, "mallocpair: out of memory\n");
		return 1;
	}
	free(first);
	pair_loop(size, n);
	free(pin);
	if (argc == 4) {
		stats_fn stats = (stats_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "memprof_get_stats");
		memprof_stats st = {0};

		if (stats)
			stats(&st);
		printf("samples %llu\n", (unsigned long long)st.samples);
	}
	return 0;
}
