/*
 * attach-sizes: blocks of 1 to 300 fields on the reference runtime (rt),
 * one allocation site per size, for the estimated objects of
 * tests/attach/test_objects.c.
 *
 * site_wNNN (a real frame of its own) allocates blocks of NNN fields, NNN + 1
 * words with the header: in the minor heap up to RT_MAX_YOUNG_WOSIZE fields,
 * in the major heap above.  It allocates ceil(WORDS / (NNN + 1)) blocks, so
 * that every site allocates about WORDS words and gets about as many
 * samples as the others, and at least MIN_BLOCKS (default 1).  site_custom
 * allocates ceil(WORDS / 260) custom blocks (at least MIN_BLOCKS) of
 * CUSTOM_FIELDS fields, each holding CUSTOM_MEM_WORDS (256) words of
 * malloc'ed memory: memprof samples the block's 4 words (source normal) and
 * the 256 (source custom) apart, as OCaml does, two allocations of 260
 * words in all.  The blocks are garbage at once.
 *
 *   attach-sizes READY_FILE WORDS [MIN_BLOCKS]
 *
 * It writes its pid to READY_FILE, waits until a tracer samples (its control
 * block says so; exit 3 after two minutes), runs every site once, hands the
 * queued samples to the tracer and prints `site NAME blocks N` per site
 * (site_w000 exists for the macros only and never runs).
 */
#include <errno.h>
#include <linux/types.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "memprof_probe_abi.h"
#include "memprof_probes.h"
#include "rt.h"

#define SIZES_MAX 300
/* Fields of an rt custom block (rt_alloc_custom), and the memory it holds. */
#define CUSTOM_FIELDS 3
#define CUSTOM_MEM_WORDS 256
#define WAIT_TIMEOUT_MS 120000

/* Exported by the core linked into rt. */
extern struct memprof_probe_control memprof_probe_control;

static size_t blocks_of[SIZES_MAX + 1];

/* A macro, not a helper: the allocation is in site_wNNN's own frame. */
#define SITE(i)                                                                                    \
	__attribute__((noipa)) int site_w##i(size_t n)                                             \
	{                                                                                          \
		rt_value v;                                                                        \
		for (size_t k = 0; k < n; k++) {                                                   \
			int err = rt_alloc(1##i - 1000, 0, &v);                                    \
			if (err)                                                                   \
				return err;                                                        \
		}                                                                                  \
		__asm__ volatile("");                                                              \
		return 0;                                                                          \
	}
#define SITES10(d)                                                                                 \
	SITE(d##0)                                                                                 \
	SITE(d##1)                                                                                 \
	SITE(d##2) SITE(d##3) SITE(d##4) SITE(d##5) SITE(d##6) SITE(d##7) SITE(d##8) SITE(d##9)
#define SITES100(h)                                                                                \
	SITES10(h##0)                                                                              \
	SITES10(h##1)                                                                              \
	SITES10(h##2)                                                                              \
	SITES10(h##3)                                                                              \
	SITES10(h##4) SITES10(h##5) SITES10(h##6) SITES10(h##7) SITES10(h##8) SITES10(h##9)
SITES100(0)
SITES100(1)
SITES100(2)
SITE(300)

#undef SITE

/* Custom blocks, each holding CUSTOM_MEM_WORDS malloc'ed words. */
__attribute__((noipa)) int site_custom(size_t n)
{
	rt_value v;

	for (size_t k = 0; k < n; k++) {
		void *mem = malloc(CUSTOM_MEM_WORDS * sizeof(rt_value));
		int err = mem ? rt_alloc_custom(mem, CUSTOM_MEM_WORDS * sizeof(rt_value), free, &v)
			      : ENOMEM;

		if (err) {
			free(mem);
			return err;
		}
	}
	__asm__ volatile("");
	return 0;
}

#undef SITE
#define SITE(i) site_w##i,
/* sites[w] allocates blocks of w fields. */
static int (*const sites[SIZES_MAX + 1])(size_t) = {SITES100(0) SITES100(1) SITES100(2) SITE(300)};

/* 0 once a tracer samples; -1 after WAIT_TIMEOUT_MS. */
static int wait_for_tracer(void)
{
	const struct timespec pause = {0, 1000000};

	for (long i = 0; i < WAIT_TIMEOUT_MS; i++) {
		/* The safe point where the core sees the tracer's semaphore. */
		if (rt_poll())
			return -1;
		if (__atomic_load_n(&memprof_probe_control.flags, __ATOMIC_ACQUIRE) &
		    MEMPROF_PROBE_F_TRACER)
			return 0;
		nanosleep(&pause, NULL);
	}
	return -1;
}

int main(int argc, char **argv)
{
	char *end = "", *end_min = "", tmp[4096];
	unsigned long long words = argc >= 3 ? strtoull(argv[2], &end, 10) : 0;
	unsigned long long min_blocks = argc == 4 ? strtoull(argv[3], &end_min, 10) : 1;
	size_t custom_blocks;
	FILE *f;

	if (argc < 3 || argc > 4 || !words || *end || !min_blocks || *end_min) {
		fprintf(stderr, "usage: attach-sizes READY_FILE WORDS [MIN_BLOCKS]\n");
		return 2;
	}
	if (rt_init(NULL)) {
		fprintf(stderr, "attach-sizes: out of memory\n");
		return 1;
	}
	/* Whole, by a rename. */
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[1]);
	f = fopen(tmp, "w");
	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) || rename(tmp, argv[1])) {
		fprintf(stderr, "attach-sizes: cannot write %s\n", argv[1]);
		return 1;
	}
	if (wait_for_tracer()) {
		fprintf(stderr, "attach-sizes: no tracer within %d s\n", WAIT_TIMEOUT_MS / 1000);
		return 3;
	}
	for (size_t w = 1; w <= SIZES_MAX; w++) {
		blocks_of[w] = (words + w) / (w + 1);
		if (blocks_of[w] < min_blocks)
			blocks_of[w] = min_blocks;
		if (sites[w](blocks_of[w])) {
			fprintf(stderr, "attach-sizes: allocation failed\n");
			return 1;
		}
	}
	custom_blocks =
	    (words + CUSTOM_FIELDS + CUSTOM_MEM_WORDS) / (CUSTOM_FIELDS + 1 + CUSTOM_MEM_WORDS);
	if (custom_blocks < min_blocks)
		custom_blocks = min_blocks;
	if (site_custom(custom_blocks)) {
		fprintf(stderr, "attach-sizes: allocation failed\n");
		return 1;
	}
	/* Postponed callbacks and the samples still queued, before the exit. */
	if (rt_poll())
		return 1;
	memprof_probe_flush();
	for (size_t w = 1; w <= SIZES_MAX; w++)
		printf("site site_w%03zu blocks %zu\n", w, blocks_of[w]);
	printf("site site_custom blocks %zu fields %d mem_words %d\n", custom_blocks, CUSTOM_FIELDS,
	       CUSTOM_MEM_WORDS);
	return fflush(stdout) ? 1 : 0;
}
