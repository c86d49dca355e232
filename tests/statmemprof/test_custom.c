/*
 * custom: custom blocks holding out-of-heap memory are sampled by their
 * virtual size (mem_bytes / 8 words, source MEMPROF_SRC_CUSTOM).  Samples
 * and survivors follow binomial laws (5.7 sigma); every tracked block gets
 * its promote and dealloc callbacks once; every finalizer runs exactly once,
 * when its block dies.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"

#define ITERS 100000
#define KEEP_EVERY 10
#define MEM_BYTES 256
#define MEM_WORDS (MEM_BYTES / 8)

static keeper roots;
static unsigned char *finalized; /* one counter per custom block */
static uint64_t n_finalized;

static void setup(void)
{
	harness_setup();
	keeper_init(&roots, ITERS / KEEP_EVERY);
	finalized = calloc(ITERS, 1);
	cr_assert_not_null(finalized);
	n_finalized = 0;
}

static void teardown(void)
{
	keeper_free(&roots);
	harness_teardown();
	free(finalized);
}

static void finalize(void *data)
{
	unsigned char *flag = data;
	if (*flag < 255)
		(*flag)++;
	n_finalized++;
}

typedef struct custom_stats {
	uint64_t alloc, alloc_major, promote, dealloc_minor, dealloc_major;
	uint64_t n_tracked, n_dead;
	unsigned bad;
} custom_stats;

static int custom_alloc(custom_stats *s, const memprof_allocation *info, int major,
			memprof_value *out)
{
	*out = MEMPROF_NONE;
	if (info->source != MEMPROF_SRC_CUSTOM)
		return 0;
	if (info->n_samples == 0 || info->n_samples > MEM_WORDS)
		s->bad++;
	s->alloc += info->n_samples;
	if (major)
		s->alloc_major += info->n_samples;
	s->n_tracked++;
	*out = RT_VAL_INT(info->n_samples);
	return 0;
}

static int custom_alloc_minor(void *arg, const memprof_allocation *info, memprof_value *out)
{
	return custom_alloc(arg, info, 0, out);
}

static int custom_alloc_major(void *arg, const memprof_allocation *info, memprof_value *out)
{
	return custom_alloc(arg, info, 1, out);
}

static int custom_promote(void *arg, memprof_value data, memprof_value *out)
{
	custom_stats *s = arg;
	s->promote += (uint64_t)RT_INT_VAL(data);
	*out = data;
	return 0;
}

static int custom_dealloc_minor(void *arg, memprof_value data)
{
	custom_stats *s = arg;
	s->dealloc_minor += (uint64_t)RT_INT_VAL(data);
	s->n_dead++;
	return 0;
}

static int custom_dealloc_major(void *arg, memprof_value data)
{
	custom_stats *s = arg;
	s->dealloc_major += (uint64_t)RT_INT_VAL(data);
	s->n_dead++;
	return 0;
}

static void full_major(void)
{
	rt_major_gc();
	harness_settle();
}

static void test_rate(double rate)
{
	custom_stats s = {0};
	memprof_tracker t = {.alloc_minor = custom_alloc_minor,
			     .alloc_major = custom_alloc_major,
			     .promote = custom_promote,
			     .dealloc_minor = custom_dealloc_minor,
			     .dealloc_major = custom_dealloc_major,
			     .arg = &s};
	cr_assert_eq(memprof_start(rate, HARNESS_CALLSTACK_SIZE, &t), 0);
	for (size_t i = 0; i < ITERS; i++) {
		rt_value v;
		int err = rt_alloc_custom(&finalized[i], MEM_BYTES, finalize, &v);
		cr_assert_eq(err, 0, "rt_alloc_custom returned %d", err);
		cr_assert_eq(rt_custom_data(v), &finalized[i]);
		if (i % KEEP_EVERY == 0)
			keeper_push(&roots, v);
		harness_settle();
	}
	full_major();
	cr_assert_eq(n_finalized, ITERS - ITERS / KEEP_EVERY, "finalizers of the dead blocks");
	for (size_t i = 0; i < ITERS; i++)
		cr_assert_eq(finalized[i], i % KEEP_EVERY != 0,
			     "finalizer of block %zu ran %d times", i, finalized[i]);
	for (size_t i = 0; i < roots.len; i++)
		cr_assert_eq(rt_custom_data(rt_field(roots.array, i)), &finalized[i * KEEP_EVERY]);
	uint64_t alive = s.alloc - s.dealloc_minor - s.dealloc_major;

	keeper_clear(&roots);
	full_major();
	cr_assert_eq(memprof_stop(), 0);
	cr_assert_eq(n_finalized, ITERS, "every finalizer ran once");
	cr_assert_eq(s.bad, 0);
	cr_assert_eq(s.n_dead, s.n_tracked, "every tracked custom block got a dealloc");
	cr_assert_eq(s.alloc - s.alloc_major, s.promote + s.dealloc_minor);
	cr_assert_eq(s.dealloc_major, s.promote + s.alloc_major);

	char what[64];
	snprintf(what, sizeof(what), "custom blocks at %g", rate);
	harness_assert_binomial(what, s.alloc, (double)ITERS * MEM_WORDS, rate);
	snprintf(what, sizeof(what), "kept custom blocks at %g", rate);
	harness_assert_binomial(what, alive, (double)(ITERS / KEEP_EVERY) * MEM_WORDS, rate);
}

TestSuite(custom, .init = setup, .fini = teardown);

Test(custom, rate_0_01)
{
	test_rate(0.01);
}

Test(custom, rate_0_5)
{
	test_rate(0.5);
}

Test(custom, rate_0_17)
{
	test_rate(0.17);
}

Test(custom, finalizers_without_sampling)
{
	for (size_t i = 0; i < ITERS / 10; i++) {
		rt_value v;
		cr_assert_eq(rt_alloc_custom(&finalized[i], MEM_BYTES, finalize, &v), 0);
	}
	full_major();
	cr_assert_eq(n_finalized, ITERS / 10);
}
