/*
 * arrays_in_minor, arrays_in_major: arrays of every size in a range, in the
 * minor heap (1..250 fields) or directly in the major heap (>= 300 fields).
 * Checks the sample distribution against a 5.7-sigma binomial bound, that
 * rate 0 samples nothing, that every tracked block gets promote and dealloc
 * exactly once and in order, and that callbacks never nest.
 */
#include <criterion/criterion.h>
#include <stdio.h>

#include "harness.h"

#define MINOR_LO 1
#define MINOR_HI 250
#define MAJOR_LO 300
#define MAJOR_HI 3000
#define COUNTS_RATE 0.01
/* A minor GC every this many tracked allocations, and promotions. */
#define GC_EVERY_ALLOC 100
#define GC_EVERY_PROMOTE 1097

static keeper roots;

static void setup(void)
{
	harness_setup();
	keeper_init(&roots, 40000);
}

static void teardown(void)
{
	keeper_free(&roots);
	harness_teardown();
}

/* Allocate cnt times one array of each size in [lo, hi].  Exported: the
 * callstack checks look its address range up. */
__attribute__((noinline)) void allocate_arrays(size_t lo, size_t hi, size_t cnt, int keep)
{
	for (size_t j = 0; j < cnt; j++) {
		for (size_t i = lo; i <= hi; i++) {
			rt_value v;
			int err = rt_alloc(i, 0, &v);
			cr_assert_eq(err, 0, "rt_alloc(%zu) returned %d", i, err);
			if (keep)
				keeper_push(&roots, v);
		}
		if (!keep)
			keeper_clear(&roots);
		harness_settle();
	}
}

static uint64_t tot_words(size_t lo, size_t hi, size_t cnt)
{
	return (uint64_t)cnt * (lo + hi + 2) * (hi - lo + 1) / 2;
}

/* ---- rate 0 ---- */

static int never_alloc(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)info;
	(*(int *)arg)++;
	*out = MEMPROF_NONE;
	return 0;
}

static void check_nosample(size_t lo, size_t hi, size_t cnt)
{
	int called = 0;
	memprof_tracker t = {
	    .alloc_minor = never_alloc, .alloc_major = never_alloc, .arg = &called};
	cr_assert_eq(memprof_start(0.0, HARNESS_CALLSTACK_SIZE, &t), 0);
	allocate_arrays(lo, hi, cnt, 0);
	cr_assert_eq(memprof_stop(), 0);
	cr_assert_eq(called, 0, "%d callbacks at rate 0", called);
}

/* ---- lifecycle counts ---- */

typedef struct counts_ctx {
	int enable;
	uint64_t tracked;
	int major;
} counts_ctx;

static int counts_filter(lifecycle *lc, const memprof_allocation *info, int major)
{
	counts_ctx *c = lc->ctx;
	(void)info;
	if (!c->enable) {
		/* Allocations made by a callback are not sampled. */
		size_t lo = c->major ? MAJOR_LO : MINOR_LO;
		size_t hi = c->major ? MAJOR_LO + 1 : MINOR_HI;
		for (size_t i = lo; i <= hi; i++) {
			rt_value v;
			if (rt_alloc(i, 0, &v) != 0)
				lifecycle_fail(lc, "rt_alloc in a callback failed");
		}
		return 0;
	}
	if (!c->major && major)
		lifecycle_fail(lc, "alloc_major for a minor array");
	if (++c->tracked % GC_EVERY_ALLOC == 0)
		rt_minor_gc();
	return 1;
}

static void full_major(void)
{
	rt_major_gc();
	harness_settle();
}

static void check_counts_full_major(int major, int force_promote)
{
	lifecycle lc;
	counts_ctx c = {.enable = 1, .major = major};
	lifecycle_init(&lc);
	lc.filter = counts_filter;
	lc.ctx = &c;
	memprof_tracker t = lifecycle_tracker(&lc);

	cr_assert_eq(memprof_start(COUNTS_RATE, HARNESS_CALLSTACK_SIZE, &t), 0);
	if (major)
		allocate_arrays(MAJOR_LO, MAJOR_HI, 1, 1);
	else
		allocate_arrays(MINOR_LO, MINOR_HI, 100, 1);
	c.enable = 0;
	lifecycle_assert_ok(&lc);
	cr_assert_gt(lc.len, 0, "nothing was sampled");
	cr_assert_eq(lc.n_dealloc_minor + lc.n_dealloc_major, 0, "a kept array died");

	size_t born_minor =
	    lc.len - lifecycle_count(&lc, BLOCK_MAJOR) - lifecycle_count(&lc, BLOCK_DEAD_MAJOR);
	if (force_promote) {
		full_major();
		if (!major)
			allocate_arrays(MINOR_LO, MINOR_HI, 10, 1);
		full_major();
		lifecycle_assert_ok(&lc);
		cr_assert_eq(lc.n_dealloc_minor + lc.n_dealloc_major, 0, "a kept array died");
		cr_assert_eq(lc.n_promote, born_minor, "%llu promotions for %zu minor blocks",
			     (unsigned long long)lc.n_promote, born_minor);
		keeper_clear(&roots);
		full_major();
		cr_assert_eq(lc.n_dealloc_minor, 0);
		cr_assert_eq(lc.n_dealloc_major, lc.len);
	} else {
		keeper_clear(&roots);
		rt_minor_gc();
		harness_settle();
		full_major();
		full_major();
		cr_assert_eq(lc.n_dealloc_minor + lc.n_promote, born_minor);
		cr_assert_eq(lc.n_dealloc_major, lc.n_promote + (lc.len - born_minor));
	}
	lifecycle_assert_all_dead(&lc);
	cr_assert_eq(memprof_stop(), 0);
	lifecycle_free(&lc);
}

/* ---- no nesting ---- */

static void check_no_nested(int major)
{
	lifecycle lc;
	lifecycle_init(&lc);
	lc.alloc_in_callback = 20;
	memprof_tracker t = lifecycle_tracker(&lc);
	cr_assert_eq(memprof_start(1.0, HARNESS_CALLSTACK_SIZE, &t), 0);
	if (major)
		allocate_arrays(MAJOR_LO, MAJOR_LO, 100, 0);
	else
		allocate_arrays(MINOR_LO, MINOR_HI, 5, 0);
	full_major();
	cr_assert_eq(memprof_stop(), 0);
	lifecycle_assert_all_dead(&lc);
	cr_assert_gt(lc.len, 0);
	lifecycle_free(&lc);
}

/* ---- distribution ---- */

typedef struct distrib_ctx {
	size_t lo, hi;
	int major;
	uint64_t samples;
	unsigned bad;
	unsigned bad_stack;
	fn_range allocator;
} distrib_ctx;

static int distrib_alloc(distrib_ctx *d, const memprof_allocation *info, int major)
{
	if (major != d->major || info->size < d->lo || info->size > d->hi || info->n_samples == 0 ||
	    info->source != MEMPROF_SRC_NORMAL)
		d->bad++;
	if (!harness_stack_has(info, d->allocator))
		d->bad_stack++;
	d->samples += info->n_samples;
	return 0;
}

static int distrib_minor(void *arg, const memprof_allocation *info, memprof_value *out)
{
	*out = MEMPROF_NONE;
	return distrib_alloc(arg, info, 0);
}

static int distrib_major(void *arg, const memprof_allocation *info, memprof_value *out)
{
	*out = MEMPROF_NONE;
	return distrib_alloc(arg, info, 1);
}

static void check_distrib(int major, size_t lo, size_t hi, size_t cnt, double rate)
{
	distrib_ctx d = {.lo = lo, .hi = hi, .major = major};
	d.allocator = harness_fn_range((void *)allocate_arrays);
	memprof_tracker t = {.alloc_minor = distrib_minor, .alloc_major = distrib_major, .arg = &d};
	cr_assert_eq(memprof_start(rate, HARNESS_CALLSTACK_SIZE, &t), 0);
	allocate_arrays(lo, hi, cnt, 0);
	harness_settle();
	cr_assert_eq(memprof_stop(), 0);
	cr_assert_eq(d.bad, 0, "%u samples with a wrong kind, size or source", d.bad);
	cr_assert_eq(d.bad_stack, 0, "%u callstacks without allocate_arrays", d.bad_stack);
	char what[96];
	snprintf(what, sizeof(what), "arrays %zu..%zu x%zu at %g", lo, hi, cnt, rate);
	harness_assert_binomial(what, d.samples, (double)tot_words(lo, hi, cnt), rate);
}

TestSuite(arrays_in_minor, .init = setup, .fini = teardown);

Test(arrays_in_minor, nosample)
{
	check_nosample(MINOR_LO, MINOR_HI, 100);
}

Test(arrays_in_minor, counts_full_major)
{
	check_counts_full_major(0, 0);
}

Test(arrays_in_minor, counts_full_major_force_promote)
{
	check_counts_full_major(0, 1);
}

Test(arrays_in_minor, no_nested)
{
	check_no_nested(0);
}

Test(arrays_in_minor, distrib)
{
	check_distrib(0, MINOR_LO, MINOR_HI, 1000, 0.00001);
	check_distrib(0, MINOR_LO, MINOR_HI, 1000, 0.0001);
	check_distrib(0, MINOR_LO, MINOR_HI, 1000, 0.01);
	check_distrib(0, MINOR_LO, MINOR_HI, 100, 0.9);
	check_distrib(0, 1, 1, 1000000, 0.01);
	check_distrib(0, MINOR_HI, MINOR_HI, 20000, 0.1);
}

TestSuite(arrays_in_major, .init = setup, .fini = teardown);

Test(arrays_in_major, nosample)
{
	check_nosample(MAJOR_LO, MAJOR_HI, 1);
}

Test(arrays_in_major, counts_full_major)
{
	check_counts_full_major(1, 0);
}

Test(arrays_in_major, counts_full_major_force_promote)
{
	check_counts_full_major(1, 1);
}

Test(arrays_in_major, no_nested)
{
	check_no_nested(1);
}

Test(arrays_in_major, distrib)
{
	check_distrib(1, MAJOR_LO, MAJOR_HI, 3, 0.00001);
	check_distrib(1, MAJOR_LO, MAJOR_HI, 1, 0.0001);
	check_distrib(1, MAJOR_LO, MAJOR_HI, 1, 0.01);
	check_distrib(1, MAJOR_LO, MAJOR_HI, 1, 0.9);
	check_distrib(1, MAJOR_LO, MAJOR_LO, 10000, 0.1);
	check_distrib(1, 300000, 300000, 30, 0.1);
}
