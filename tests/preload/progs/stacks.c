/*
 * Stacks and units under the preload, for tests/preload/test_stacks.c.
 *
 *   stacks many READY ROUNDS [PATHS [PAUSE_MS]]
 *                              65,536 (or PATHS, at most that) distinct call
 *                              stacks: 16 levels of two functions each (a
 *                              path's bits choose), the 16th calling
 *                              leaf_alloc, which mallocs 8 KiB and frees it;
 *                              ROUNDS passes over every path, pausing
 *                              PAUSE_MS after each 1,000 paths
 *   stacks deep READY ROUNDS   ROUNDS times, for every depth d in 1..200, a
 *                              recursion of d frames of recurse() whose
 *                              innermost mallocs 4 KiB and frees it
 *   stacks sizes READY         blocks of 1 B to 1 MiB, one noinline function
 *                              per size (size_<i>); prints
 *                              "size <i> bytes <B> allocated <total>"
 *   stacks seed N              in process: samples N 64-byte blocks at rate
 *                              1e-2 with the preload's memprof_start and
 *                              prints "sampled=<hash of the sampled indices>"
 *                              and "samples=<count>"
 *
 * The first three write READY (their pid) once started and wait until a
 * tracer turned sampling on (the control block says so).
 */
#include <linux/types.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "memprof.h"
#include "memprof_probe_abi.h"
#include "tracer_wait.h"

#define MANY_LEVELS 16
#define MANY_BYTES 8192
#define DEEP_MAX 200
#define DEEP_BYTES 4096

static void *volatile sink;
static volatile unsigned long side;

/* ---- many: 2^16 distinct stacks ---- */

__attribute__((noinline)) void leaf_alloc(void)
{
	sink = malloc(MANY_BYTES);
	free(sink);
	side++;
}

/* Level i, variants a and b (bodies differ, so they are never folded into
 * one): bit i of the path picks the variant of level i + 1. */
#define LEVEL(i, next)                                                                             \
	__attribute__((noinline)) void lv##i##a(unsigned path)                                     \
	{                                                                                          \
		if (path >> (i)&1)                                                                 \
			lv##next##a(path);                                                         \
		else                                                                               \
			lv##next##b(path);                                                         \
		side += 1;                                                                         \
	}                                                                                          \
	__attribute__((noinline)) void lv##i##b(unsigned path)                                     \
	{                                                                                          \
		if (path >> (i)&1)                                                                 \
			lv##next##a(path);                                                         \
		else                                                                               \
			lv##next##b(path);                                                         \
		side += 2;                                                                         \
	}

__attribute__((noinline)) void lv16a(unsigned path)
{
	(void)path;
	leaf_alloc();
	side += 1;
}
__attribute__((noinline)) void lv16b(unsigned path)
{
	(void)path;
	leaf_alloc();
	side += 2;
}
LEVEL(15, 16)
LEVEL(14, 15)
LEVEL(13, 14)
LEVEL(12, 13)
LEVEL(11, 12)
LEVEL(10, 11)
LEVEL(9, 10)
LEVEL(8, 9)
LEVEL(7, 8)
LEVEL(6, 7)
LEVEL(5, 6)
LEVEL(4, 5)
LEVEL(3, 4)
LEVEL(2, 3)
LEVEL(1, 2)

static void run_many(unsigned long rounds, unsigned long paths, unsigned long pause_ms)
{
	struct timespec pause = {(time_t)(pause_ms / 1000), (long)(pause_ms % 1000) * 1000000L};

	if (!paths || paths > 1u << MANY_LEVELS)
		paths = 1u << MANY_LEVELS;
	for (unsigned long r = 0; r < rounds; r++)
		for (unsigned path = 0; path < paths; path++) {
			if (path & 1)
				lv1a(path);
			else
				lv1b(path);
			if (pause_ms && path % 1000 == 999)
				nanosleep(&pause, NULL);
		}
	printf("paths=%lu\n", paths);
}

/* ---- deep: recursions of 1..200 frames ---- */

__attribute__((noinline)) void recurse(unsigned depth, unsigned target)
{
	if (depth == target) {
		sink = malloc(DEEP_BYTES);
		free(sink);
	} else {
		recurse(depth + 1, target);
	}
	side++;
}

static void run_deep(unsigned long rounds)
{
	for (unsigned long r = 0; r < rounds; r++)
		for (unsigned d = 1; d <= DEEP_MAX; d++)
			recurse(1, d);
	printf("deep_max=%u\n", DEEP_MAX);
}

/* ---- sizes: 1 B to 1 MiB ---- */

#define N_SIZES 9
static const size_t sizes[N_SIZES] = {1, 3, 8, 13, 100, 1000, 4101, 65536, 1 << 20};
/* Blocks per size: about 4 MiB (and at least 2,000,000 small blocks) each. */
static const unsigned long counts[N_SIZES] = {2000000, 1000000, 500000, 400000, 50000,
					      5000,    1000,	64,	4};

#define SIZE_SITE(i)                                                                               \
	__attribute__((noinline)) void size_##i(unsigned long n)                                   \
	{                                                                                          \
		for (unsigned long k = 0; k < n; k++) {                                            \
			sink = malloc(sizes[i]);                                                   \
			free(sink);                                                                \
		}                                                                                  \
		side += i;                                                                         \
	}
SIZE_SITE(0)
SIZE_SITE(1)
SIZE_SITE(2)
SIZE_SITE(3)
SIZE_SITE(4)
SIZE_SITE(5)
SIZE_SITE(6)
SIZE_SITE(7)
SIZE_SITE(8)

static void run_sizes(void)
{
	void (*const site[N_SIZES])(unsigned long) = {size_0, size_1, size_2, size_3, size_4,
						      size_5, size_6, size_7, size_8};

	for (int i = 0; i < N_SIZES; i++) {
		site[i](counts[i]);
		printf("size %d bytes %zu allocated %llu\n", i, sizes[i],
		       (unsigned long long)sizes[i] * counts[i]);
	}
}

/* ---- seed: which blocks the in-process profile samples ---- */

static uint64_t current_index, sampled_hash, n_sampled;

static int seed_alloc(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	(void)info;
	sampled_hash = (sampled_hash ^ current_index) * 0x100000001b3ull;
	n_sampled++;
	*out = MEMPROF_NONE;
	return 0;
}

static int run_seed(unsigned long n)
{
	memprof_tracker t = {.alloc_minor = seed_alloc, .alloc_major = seed_alloc};

	sampled_hash = 0xcbf29ce484222325ull;
	if (memprof_start(1e-2, 0, &t))
		return 1;
	for (current_index = 0; current_index < n; current_index++) {
		sink = malloc(64);
		free(sink);
	}
	memprof_stop();
	memprof_discard();
	printf("sampled=%016llx\nsamples=%llu\n", (unsigned long long)sampled_hash,
	       (unsigned long long)n_sampled);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "seed"))
		return run_seed(strtoul(argv[2], NULL, 0));
	if (argc < 3) {
		fprintf(stderr, "usage: stacks many|deep READY ROUNDS | sizes READY | seed N\n");
		return 2;
	}
	if (tracer_ready_and_wait("stacks", argv[2]))
		return 3;
	if (!strcmp(argv[1], "many") && argc >= 4 && argc <= 6)
		run_many(strtoul(argv[3], NULL, 0), argc >= 5 ? strtoul(argv[4], NULL, 0) : 0,
			 argc == 6 ? strtoul(argv[5], NULL, 0) : 0);
	else if (!strcmp(argv[1], "deep") && argc == 4)
		run_deep(strtoul(argv[3], NULL, 0));
	else if (!strcmp(argv[1], "sizes"))
		run_sizes();
	else
		return 2;
	fflush(stdout);
	return 0;
}
