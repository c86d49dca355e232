/*
 * Profile handles through the preloaded library (memprof_start_profile and
 * memprof_discard_profile, as exported by it), at rate 1: profile A tracks
 * blocks, is stopped, and is discarded while profile B samples; A's blocks
 * get callbacks until then, none after.  Return codes are printed as
 * numbers, counts as "key=value", once both profiles are gone (stdio
 * allocates).
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "memprof.h"

#define BLOCKS 200
#define BLOCK_BYTES 512 /* sampled at 1/8 per byte (rate 1): missed with probability (7/8)^512 */
/* Allocated after a discard: several young epochs (the test sets small
 * ones), so that promotions would come for blocks still tracked. */
#define CHURN_BLOCKS 4000
#define CHURN_BYTES 256

struct counts {
	atomic_ulong alloc, promote, dealloc;
};

static struct counts count_a, count_b;

static int on_alloc(void *arg, const memprof_allocation *info, memprof_value *out)
{
	struct counts *c = arg;
	(void)info;
	atomic_fetch_add(&c->alloc, 1);
	*out = 1;
	return 0;
}

static int on_promote(void *arg, memprof_value minor, memprof_value *major)
{
	struct counts *c = arg;
	atomic_fetch_add(&c->promote, 1);
	*major = minor;
	return 0;
}

static int on_dealloc(void *arg, memprof_value v)
{
	struct counts *c = arg;
	(void)v;
	atomic_fetch_add(&c->dealloc, 1);
	return 0;
}

static unsigned long total(struct counts *c)
{
	return atomic_load(&c->alloc) + atomic_load(&c->promote) + atomic_load(&c->dealloc);
}

static void churn(void)
{
	for (int i = 0; i < CHURN_BLOCKS; i++) {
		char *volatile p = malloc(CHURN_BYTES);
		free(p);
	}
}

static unsigned long long tracked(void)
{
	memprof_stats st;
	memprof_get_stats(&st);
	return (unsigned long long)st.tracked;
}

int main(void)
{
	memprof_tracker ta = {.alloc_minor = on_alloc,
			      .alloc_major = on_alloc,
			      .promote = on_promote,
			      .dealloc_minor = on_dealloc,
			      .dealloc_major = on_dealloc,
			      .arg = &count_a};
	memprof_tracker tb = ta;
	tb.arg = &count_b;
	static char *a_blocks[BLOCKS], *b_blocks[BLOCKS];
	memprof_profile pa = 0, pb = 0;

	int start_a = memprof_start_profile(1.0, 0, &ta, &pa);
	for (int i = 0; i < BLOCKS; i++)
		a_blocks[i] = malloc(BLOCK_BYTES);
	unsigned long a_alloc = atomic_load(&count_a.alloc);
	int discard_a_sampling = memprof_discard_profile(pa);
	int stop_a = memprof_stop();

	/* Stopped, not discarded: A's blocks still get their callbacks. */
	unsigned long a_dealloc_before = atomic_load(&count_a.dealloc);
	for (int i = 0; i < BLOCKS / 2; i++)
		free(a_blocks[i]);
	unsigned long a_dealloc_stopped = atomic_load(&count_a.dealloc) - a_dealloc_before;

	int start_b = memprof_start_profile(1.0, 0, &tb, &pb);
	for (int i = 0; i < BLOCKS; i++)
		b_blocks[i] = malloc(BLOCK_BYTES);
	int discard_a = memprof_discard_profile(pa);
	unsigned long long tracked_after_discard_a = tracked();
	unsigned long b_live = atomic_load(&count_b.alloc) - atomic_load(&count_b.dealloc);
	int discard_a_again = memprof_discard_profile(pa);

	/* A is gone: its other half dies, epochs end; no callback of A. */
	unsigned long a_before = total(&count_a);
	for (int i = BLOCKS / 2; i < BLOCKS; i++)
		free(a_blocks[i]);
	churn();
	unsigned long a_after_discard = total(&count_a) - a_before;

	/* B goes on sampling and following its blocks. */
	unsigned long b_dealloc_before = atomic_load(&count_b.dealloc);
	for (int i = 0; i < BLOCKS; i++)
		free(b_blocks[i]);
	unsigned long b_dealloc = atomic_load(&count_b.dealloc) - b_dealloc_before;
	int discard_b_sampling = memprof_discard_profile(pb);
	int stop_b = memprof_stop();
	int discard_b = memprof_discard_profile(pb);
	int discard_b_again = memprof_discard_profile(pb);
	int discard_zero = memprof_discard_profile(0);
	unsigned long long tracked_end = tracked();

	printf("start_a=%d\nhandle_a=%llu\na_alloc=%lu\ndiscard_a_sampling=%d\nstop_a=%d\n",
	       start_a, (unsigned long long)pa, a_alloc, discard_a_sampling, stop_a);
	printf("a_dealloc_stopped=%lu\na_promote=%lu\n", a_dealloc_stopped,
	       atomic_load(&count_a.promote));
	printf("start_b=%d\nhandle_b=%llu\ndiscard_a=%d\ndiscard_a_again=%d\n", start_b,
	       (unsigned long long)pb, discard_a, discard_a_again);
	printf("tracked_after_discard_a=%llu\nb_live=%lu\n", tracked_after_discard_a, b_live);
	printf("a_after_discard=%lu\nb_alloc=%lu\nb_promote=%lu\nb_dealloc=%lu\n", a_after_discard,
	       atomic_load(&count_b.alloc), atomic_load(&count_b.promote), b_dealloc);
	printf("discard_b_sampling=%d\nstop_b=%d\ndiscard_b=%d\ndiscard_b_again=%d\n",
	       discard_b_sampling, stop_b, discard_b, discard_b_again);
	printf("discard_zero=%d\ntracked_end=%llu\n", discard_zero, tracked_end);
	return 0;
}
