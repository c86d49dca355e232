/*
 * preload-sample-cost: what one sample costs in the malloc host, and how
 * much of it is the DWARF call stack.  Run it under the preload:
 *
 *   LD_PRELOAD=build/libmemprof-preload.so build/bench/preload-sample-cost [ITERS] [DEPTH]
 *
 * At DEPTH frames of recursion (built without frame pointers) it times
 * ITERS malloc+free pairs of 64 bytes three ways: with no profile, with an
 * in-process profile at RATE and no call stack, and with call stacks of up
 * to STACK frames.  The three runs are interleaved ROUNDS times and the
 * fastest of each kept (the machine's noise only ever adds time).  Prints ns per malloc+free
 * without a profile, then ns per sample for sampling (the tracker's callbacks included) and for the
 * call stack alone.  A benchmark, not a test: numbers vary with the machine.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "memprof.h"

#define RATE 0.01
#define STACK 64
#define DEFAULT_ITERS 2000000
#define DEFAULT_DEPTH 20
#define BLOCK_BYTES 64
#define ROUNDS 5

static void *volatile sink;

static int on_alloc(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	*out = (memprof_value)info->id;
	return 0;
}

static int on_promote(void *arg, memprof_value minor, memprof_value *major)
{
	(void)arg;
	*major = minor;
	return 0;
}

static int on_dealloc(void *arg, memprof_value v)
{
	(void)arg;
	(void)v;
	return 0;
}

static const memprof_tracker tracker = {
    .alloc_minor = on_alloc,
    .alloc_major = on_alloc,
    .promote = on_promote,
    .dealloc_minor = on_dealloc,
    .dealloc_major = on_dealloc,
};

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static __attribute__((noinline)) double loop(long iters)
{
	double t0 = now_ns();

	for (long i = 0; i < iters; i++) {
		sink = malloc(BLOCK_BYTES);
		free(sink);
	}
	return now_ns() - t0;
}

/* Recurse `depth` frames, then run the loop: the stacks to unwind. */
static __attribute__((noinline)) double at_depth(int depth, long iters)
{
	if (depth > 0) {
		double t = at_depth(depth - 1, iters);
		__asm__ volatile("" ::: "memory"); /* no tail call: a real frame */
		return t;
	}
	return loop(iters);
}

static double profiled(double rate, size_t stack, int depth, long iters, unsigned long long *n)
{
	memprof_stats before, after;

	memprof_set_seed(1);
	memprof_get_stats(&before);
	if (memprof_start(rate, stack, &tracker) != 0) {
		fprintf(stderr,
			"preload-sample-cost: memprof_start failed (run it under the preload)\n");
		exit(1);
	}
	double t = at_depth(depth, iters);
	memprof_stop();
	memprof_discard();
	memprof_get_stats(&after);
	*n = after.samples - before.samples;
	return t;
}

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : DEFAULT_ITERS;
	int depth = argc > 2 ? atoi(argv[2]) : DEFAULT_DEPTH;
	unsigned long long n_plain, n_stack;

	if (iters <= 0 || depth < 0) {
		fprintf(stderr, "usage: preload-sample-cost [ITERS > 0] [DEPTH >= 0]\n");
		return 1;
	}
	at_depth(depth, iters / 10); /* warm up */
	double base = 0, plain = 0, stacked = 0;
	for (int r = 0; r < ROUNDS; r++) {
		double b = at_depth(depth, iters);
		double p = profiled(RATE, 0, depth, iters, &n_plain);
		double s = profiled(RATE, STACK, depth, iters, &n_stack);
		if (r == 0 || b < base)
			base = b;
		if (r == 0 || p < plain)
			plain = p;
		if (r == 0 || s < stacked)
			stacked = s;
	}
	if (!n_plain || !n_stack) {
		fprintf(stderr, "preload-sample-cost: nothing was sampled\n");
		return 1;
	}
	printf("depth %d iterations %ld rate %g\n", depth, iters, RATE);
	printf("unprofiled_ns_per_malloc_free %.1f\n", base / iters);
	printf("samples %llu %llu\n", n_plain, n_stack);
	printf("sample_ns_without_stack %.0f\n", (plain - base) / n_plain);
	printf("sample_ns_with_stack %.0f\n", (stacked - base) / n_stack);
	printf("callstack_ns_per_sample %.0f\n",
	       (stacked - base) / n_stack - (plain - base) / n_plain);
	return 0;
}
