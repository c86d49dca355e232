/*
 * lists_in_minor: linked lists of two-field cells built in the minor heap.
 * Every word is sampled independently at the rate, so the samples follow a
 * binomial law: checked at 5.7 sigma, with a fixed seed.
 */
#include <criterion/criterion.h>
#include <stdio.h>

#include "harness.h"

#define CELL_WOSIZE 2
/* A major collection every this many lists, to keep the heap small. */
#define LISTS_PER_MAJOR_GC 16

/* Exported: the callstack checks look its address range up. */
__attribute__((noinline)) void allocate_lists(size_t len, size_t cnt)
{
	for (size_t j = 0; j < cnt; j++) {
		rt_value accu = RT_UNIT, cell = RT_UNIT;
		RT_ROOTS(2, &accu, &cell);
		for (size_t n = len; n > 0; n--) {
			int err = rt_alloc(CELL_WOSIZE, 0, &cell);
			cr_assert_eq(err, 0, "rt_alloc returned %d", err);
			rt_store_field(cell, 0, RT_VAL_INT(n));
			rt_store_field(cell, 1, accu);
			accu = cell;
		}
		/* The list is intact: 1, 2, ..., len. */
		size_t n = 1;
		for (rt_value c = accu; !RT_IS_INT(c); c = rt_field(c, 1), n++)
			cr_assert_eq(rt_field(c, 0), RT_VAL_INT(n));
		cr_assert_eq(n, len + 1);
		RT_ROOTS_END();
		if ((j + 1) % LISTS_PER_MAJOR_GC == 0)
			rt_major_gc();
		cr_assert_eq(rt_poll(), 0);
	}
}

typedef struct distrib {
	uint64_t samples;
	unsigned bad;
	unsigned bad_stack;
	fn_range allocator;
} distrib;

static int count_minor(void *arg, const memprof_allocation *info, memprof_value *out)
{
	distrib *d = arg;
	if (info->size != CELL_WOSIZE || info->n_samples == 0 || info->source != MEMPROF_SRC_NORMAL)
		d->bad++;
	if (!harness_stack_has(info, d->allocator))
		d->bad_stack++;
	d->samples += info->n_samples;
	*out = MEMPROF_NONE;
	return 0;
}

static int count_major(void *arg, const memprof_allocation *info, memprof_value *out)
{
	distrib *d = arg;
	(void)info;
	d->bad++;
	*out = MEMPROF_NONE;
	return 0;
}

static void check_distrib(size_t len, size_t cnt, double rate)
{
	distrib d = {0};
	d.allocator = harness_fn_range((void *)allocate_lists);
	memprof_tracker t = {.alloc_minor = count_minor, .alloc_major = count_major, .arg = &d};
	memprof_set_seed(HARNESS_SEED);
	cr_assert_eq(memprof_start(rate, HARNESS_CALLSTACK_SIZE, &t), 0);
	allocate_lists(len, cnt);
	cr_assert_eq(memprof_stop(), 0);
	cr_assert_eq(d.bad, 0, "%u samples that are not list cells", d.bad);
	cr_assert_eq(d.bad_stack, 0, "%u callstacks without allocate_lists", d.bad_stack);
	char what[80];
	snprintf(what, sizeof(what), "lists %zu x%zu at %g", len, cnt, rate);
	harness_assert_binomial(what, d.samples, (double)len * cnt * (CELL_WOSIZE + 1), rate);
}

TestSuite(lists_in_minor, .init = harness_setup, .fini = harness_teardown);

/* OCaml's sizes and rates (lists_in_minor.ml), plus 0.9 as well as 1. */
Test(lists_in_minor, short_lists)
{
	check_distrib(10, 1000000, 0.01);
}

Test(lists_in_minor, long_lists_low_rates)
{
	check_distrib(1000000, 10, 0.00001);
	check_distrib(1000000, 10, 0.0001);
	check_distrib(1000000, 10, 0.001);
	check_distrib(1000000, 10, 0.01);
}

Test(lists_in_minor, long_lists_high_rates)
{
	check_distrib(100000, 10, 0.1);
	check_distrib(100000, 10, 0.9);
	check_distrib(100000, 10, 1.0);
}

Test(lists_in_minor, lists_outlive_minor_heap)
{
	/* 300 Ki words per list: each list spans several minor collections. */
	check_distrib(100000, 4, 0.01);
}
