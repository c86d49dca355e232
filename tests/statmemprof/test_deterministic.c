/*
 * deterministic: with the same seed and the same allocations, the samples
 * are the same from run to run, even when the callbacks themselves allocate
 * (small and large blocks), since allocations made by callbacks are not
 * sampled and do not shift the mutator's samples.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "harness.h"

#define RATE 0.3
#define MAX_SAMPLES 4096
#define WORK_ITERS 200
#define BIG_WOSIZE 10000
#define SMALL_REFS 10
#define OTHER_SEED 12345

typedef struct recording {
	size_t size[MAX_SAMPLES];
	size_t n_samples[MAX_SAMPLES];
	size_t len;
	int allocate; /* the callback allocates */
} recording;

static int record_alloc(void *arg, const memprof_allocation *info, memprof_value *out)
{
	recording *r = arg;
	*out = MEMPROF_NONE;
	if (r->allocate) {
		rt_value big, v;
		if (rt_alloc(BIG_WOSIZE, 0, &big) != 0)
			return 0;
		for (int i = 0; i < SMALL_REFS; i++)
			if (rt_alloc(1, 0, &v) != 0)
				return 0;
	}
	if (r->len < MAX_SAMPLES) {
		r->size[r->len] = info->size;
		r->n_samples[r->len] = info->n_samples;
		r->len++;
	}
	return 0;
}

/* A fixed mix of small blocks, combined blocks and a sorted list. */
static void __attribute__((noinline)) work(void)
{
	static const size_t comb[] = {2, 1, 4};
	rt_value list = RT_UNIT, cell = RT_UNIT;
	RT_ROOTS(2, &list, &cell);
	for (intptr_t i = 0; i < WORK_ITERS; i++) {
		rt_value out[3];
		cr_assert_eq(rt_alloc_comb(3, comb, 0, out), 0);
		cr_assert_eq(rt_alloc(2, 0, &cell), 0);
		rt_store_field(cell, 0, RT_VAL_INT((i * 7) % 13));
		rt_store_field(cell, 1, list);
		list = cell;
		cr_assert_eq(rt_alloc(1 + (size_t)i % 20, 0, &cell), 0);
	}
	RT_ROOTS_END();
}

static void record(recording *r, uint64_t seed, int allocate)
{
	memset(r, 0, sizeof(*r));
	r->allocate = allocate;
	memprof_tracker t = {.alloc_minor = record_alloc, .arg = r};
	/* Same starting state: an empty minor heap. */
	rt_minor_gc();
	memprof_set_seed(seed);
	cr_assert_eq(memprof_start(RATE, HARNESS_CALLSTACK_SIZE, &t), 0);
	work();
	cr_assert_eq(memprof_stop(), 0);
	cr_assert_eq(rt_poll(), 0);
	cr_assert_gt(r->len, 100, "too few samples to compare");
	cr_assert_lt(r->len, MAX_SAMPLES);
}

static int same(const recording *a, const recording *b)
{
	return a->len == b->len && memcmp(a->size, b->size, a->len * sizeof(size_t)) == 0 &&
	       memcmp(a->n_samples, b->n_samples, a->len * sizeof(size_t)) == 0;
}

TestSuite(deterministic, .init = harness_setup, .fini = harness_teardown);

Test(deterministic, same_seed_same_samples)
{
	static recording r1, r2;
	record(&r1, HARNESS_SEED, 0);
	record(&r2, HARNESS_SEED, 0);
	cr_assert(same(&r1, &r2), "two runs with one seed differ (%zu and %zu samples)", r1.len,
		  r2.len);
}

Test(deterministic, allocating_callbacks_do_not_shift_samples)
{
	static recording r1, r2;
	record(&r1, HARNESS_SEED, 0);
	record(&r2, HARNESS_SEED, 1);
	cr_assert(same(&r1, &r2),
		  "callbacks that allocate changed the samples (%zu and %zu samples)", r1.len,
		  r2.len);
}

Test(deterministic, other_seed_other_samples)
{
	static recording r1, r2;
	record(&r1, HARNESS_SEED, 0);
	record(&r2, OTHER_SEED, 0);
	cr_assert(!same(&r1, &r2), "the seed has no effect");
}
