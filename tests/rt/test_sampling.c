/*
 * rt as a memprof host, sampling on: the sample counts stay unbiased
 * whatever sends allocations down the slow path (requested safe points,
 * callbacks that allocate, thread switches), and the bundled workload's
 * in-process estimate matches its printed truth.  Bounds are 5.7 sigma, as
 * in OCaml's statmemprof tests; seeds are fixed.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <criterion/criterion.h>

#include "memprof.h"
#include "rt.h"
#include "testlib.h"

#define SEED 1234

static uint64_t samples;
static int allocate_in_callback;

static void setup(void)
{
	cr_assert_eq(rt_init(NULL), 0);
	memprof_set_seed(SEED);
	samples = 0;
	allocate_in_callback = 0;
}

static void teardown(void)
{
	memprof_stop();
	memprof_discard();
	rt_shutdown();
}

TestSuite(rt_sampling, .init = setup, .fini = teardown);

static int count_alloc(void *arg, const memprof_allocation *info, memprof_value *out)
{
	rt_value junk;

	(void)arg;
	samples += info->n_samples;
	/* Not sampled, and may cross the trigger or fill the minor heap. */
	for (int i = 0; i < allocate_in_callback; i++)
		if (rt_alloc(7, 0, &junk))
			return 1;
	*out = MEMPROF_NONE;
	return 0;
}

static const memprof_tracker counter = {.alloc_minor = count_alloc, .alloc_major = count_alloc};

static void assert_poisson(const char *what, uint64_t observed, double expected)
{
	cr_assert(within_poisson((double)observed, expected),
		  "%s: %llu samples, expected %.1f +- %.1f", what, (unsigned long long)observed,
		  expected, poisson_bound(expected));
}

/* Allocate `n` blocks of `wosize`, calling `between` after each one. */
static uint64_t allocate_words(size_t n, size_t wosize, void (*between)(size_t i))
{
	rt_value v = RT_UNIT;

	RT_ROOTS(1, &v);
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(rt_alloc(wosize, 0, &v), 0);
		if (between)
			between(i);
	}
	RT_ROOTS_END();
	cr_assert_eq(rt_poll(), 0);
	return (uint64_t)n * (wosize + 1);
}

Test(rt_sampling, plain_allocations)
{
	uint64_t words;

	cr_assert_eq(memprof_start(0.01, 0, &counter), 0);
	words = allocate_words(200000, 3, NULL);
	assert_poisson("plain", samples, 0.01 * (double)words);
}

static void blocking_section(size_t i)
{
	(void)i;
	rt_enter_blocking_section();
	rt_leave_blocking_section(); /* requests a safe point */
}

Test(rt_sampling, safe_point_requests_do_not_bias)
{
	uint64_t words;

	cr_assert_eq(memprof_start(0.02, 0, &counter), 0);
	words = allocate_words(200000, 2, blocking_section);
	assert_poisson("every allocation after a safe point request", samples,
		       0.02 * (double)words);
}

static void poll_each(size_t i)
{
	(void)i;
	cr_assert_eq(rt_poll(), 0);
}

Test(rt_sampling, callbacks_that_allocate_do_not_bias)
{
	uint64_t words;

	allocate_in_callback = 40; /* 320 words per callback, not sampled */
	cr_assert_eq(memprof_start(0.05, 0, &counter), 0);
	words = allocate_words(100000, 1, poll_each);
	assert_poisson("callbacks allocating", samples, 0.05 * (double)words);
}

static void *thread_allocate(void *arg)
{
	rt_value v = RT_UNIT;

	(void)arg;
	memprof_set_seed(SEED + 1);
	RT_ROOTS(1, &v);
	for (int i = 0; i < 100000; i++) {
		if (rt_alloc(3, 0, &v))
			return (void *)1;
		if (i % 100 == 0)
			rt_yield();
	}
	RT_ROOTS_END();
	return NULL;
}

static void yield_often(size_t i)
{
	if (i % 100 == 0)
		rt_yield();
}

Test(rt_sampling, thread_switches_do_not_bias)
{
	rt_thread *t;
	void *ret;
	uint64_t words;

	cr_assert_eq(memprof_start(0.01, 0, &counter), 0);
	cr_assert_eq(rt_thread_create(&t, thread_allocate, NULL), 0);
	words = allocate_words(100000, 3, yield_often);
	cr_assert_eq(rt_thread_join(t, &ret), 0);
	cr_assert_null(ret);
	cr_assert_eq(rt_poll(), 0);
	assert_poisson("two threads", samples, 0.01 * (double)(words + 100000 * 4));
}

Test(rt_sampling, every_allocation_path)
{
	rt_value v = RT_UNIT, tree = RT_UNIT;
	size_t sizes[3] = {1, 4, 9};
	uint64_t words = 0;
	void *data;
	size_t len;

	RT_ROOTS(2, &v, &tree);
	cr_assert_eq(rt_alloc(2, 0, &tree), 0);
	cr_assert_eq(rt_alloc(3, 0, &v), 0);
	rt_store_field(tree, 0, v);
	cr_assert_eq(rt_marshal(tree, &data, &len), 0);
	cr_assert_eq(memprof_start(0.01, 0, &counter), 0);
	for (int i = 0; i < 20000; i++) {
		rt_value out[3];

		cr_assert_eq(rt_alloc_comb(3, sizes, 0, out), 0);
		words += 1 + 1 + 4 + 1 + 9 + 1;
		cr_assert_eq(rt_alloc_major(300, 0, &v), 0);
		words += 301;
		cr_assert_eq(rt_alloc_custom(NULL, 800, NULL, &v), 0);
		words += rt_wosize(v) + 1 + 100;
		cr_assert_eq(rt_unmarshal(data, len, &v), 0);
		words += 3 + 4;
	}
	cr_assert_eq(rt_poll(), 0);
	free(data);
	RT_ROOTS_END();
	assert_poisson("comb, major, custom, unmarshal", samples, 0.01 * (double)words);
}

/*
 * The bundled workload: its in-process estimate against its own truth,
 * which for 30000 rounds follows from runtime-probes/workloads/sites.c's
 * header exactly (words and live words per site).
 */
Test(rt_sampling, workload_sites_estimate)
{
	static const struct {
		const char *name;
		unsigned long long words, live;
	} truth[] = {
	    {"site_short_lived", 30000 * 80, 0},       {"site_medium_lived", 30000 * 18, 8192 * 9},
	    {"site_long_lived", 7500 * 17, 7500 * 17}, {"site_major_blocks", 938 * 1001, 16 * 1001},
	    {"site_custom", 3750 * 260, 64 * 260},
	};
	const size_t n_sites = sizeof(truth) / sizeof(truth[0]);
	const double rate = 0.005;
	FILE *p = popen("./build/workload-sites --iterations 30000 --rate 0.005", "r");
	char line[256], name[64];
	unsigned long long words, live, inproc = 0, total = 0;
	size_t sites = 0;
	int have_inproc = 0;

	cr_assert_not_null(p);
	while (fgets(line, sizeof(line), p)) {
		if (sscanf(line, "site %63s words %llu live_words %llu", name, &words, &live) ==
		    3) {
			cr_assert_lt(sites, n_sites, "more sites than %zu", n_sites);
			cr_expect_str_eq(name, truth[sites].name);
			cr_expect_eq(words, truth[sites].words, "%s: words", name);
			cr_expect_eq(live, truth[sites].live, "%s: live words", name);
			total += words;
			sites++;
		}
		have_inproc |= sscanf(line, "inprocess samples %llu", &inproc) == 1;
	}
	cr_assert_eq(pclose(p), 0);
	cr_assert_eq(sites, n_sites);
	cr_assert(have_inproc, "no \"inprocess samples\" line");
	assert_poisson("workload-sites", inproc, rate * (double)total);
}

static int custom_error(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	*out = MEMPROF_NONE;
	return info->source == MEMPROF_SRC_CUSTOM ? 42 : 0;
}

static int finalized_count;

static void count_finalize(void *data)
{
	(void)data;
	finalized_count++;
}

Test(rt_sampling, failed_custom_allocation_keeps_data_with_caller)
{
	const memprof_tracker t = {.alloc_minor = custom_error, .alloc_major = custom_error};
	rt_value v = RT_UNIT;
	int data;

	cr_assert_eq(memprof_start(1.0, 0, &t), 0); /* every word sampled */
	cr_assert_eq(rt_alloc_custom(&data, 64, count_finalize, &v), 42);
	cr_assert_eq(v, RT_UNIT, "nothing returned");
	cr_assert_eq(memprof_stop(), 0);
	rt_major_gc();
	cr_assert_eq(rt_poll(), 0);
	cr_assert_eq(finalized_count, 0, "the failed block's finalizer must not run");
	cr_assert_eq(rt_alloc_custom(&data, 64, count_finalize, &v), 0);
	v = RT_UNIT;
	rt_major_gc();
	cr_assert_eq(finalized_count, 1);
}

static int shrink_heap(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg, (void)info;
	*out = MEMPROF_NONE;
	return rt_set_minor_heap_words(4096);
}

Test(rt_sampling, request_larger_than_a_shrunk_minor_heap_fails_cleanly)
{
	const memprof_tracker t = {.alloc_minor = shrink_heap};
	size_t sizes[24];
	rt_value out[24];

	for (size_t i = 0; i < 24; i++)
		sizes[i] = 249; /* 6000 words in all */
	cr_assert_eq(rt_set_minor_heap_words(8192), 0);
	cr_assert_eq(memprof_start(1.0, 0, &t), 0);
	cr_assert_eq(rt_alloc_comb(24, sizes, 0, out), ENOMEM);
	cr_assert_eq(memprof_stop(), 0);
	cr_assert_eq(rt_alloc_comb(24, sizes, 0, out), EINVAL, "too big for the new heap");
	cr_assert_eq(rt_alloc(3, 0, &out[0]), 0);
}

/* ---- Threads, heap values as user data, full lifecycle ---- */

static struct {
	uint64_t alloc_minor, alloc_major, promote, dealloc_minor, dealloc_major, bad;
} life;

#define USER_DATA_TAG 7

/* User data: a young block of the heap holding the sample's size. */
static int life_alloc(const memprof_allocation *info, memprof_value *out)
{
	rt_value d;

	if (rt_alloc(1, USER_DATA_TAG, &d))
		return 1;
	rt_store_field(d, 0, RT_VAL_INT((intptr_t)info->size));
	*out = d;
	return 0;
}

static void life_check(memprof_value d)
{
	if (RT_IS_INT(d) || rt_tag(d) != USER_DATA_TAG || rt_wosize(d) != 1 ||
	    !RT_IS_INT(rt_field(d, 0)))
		life.bad++;
}

static int life_alloc_minor(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	life.alloc_minor++;
	return life_alloc(info, out);
}

static int life_alloc_major(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	life.alloc_major++;
	return life_alloc(info, out);
}

static int life_promote(void *arg, memprof_value d, memprof_value *out)
{
	(void)arg;
	life.promote++;
	life_check(d);
	*out = d;
	return 0;
}

static int life_dealloc_minor(void *arg, memprof_value d)
{
	(void)arg;
	life.dealloc_minor++;
	life_check(d);
	return 0;
}

static int life_dealloc_major(void *arg, memprof_value d)
{
	(void)arg;
	life.dealloc_major++;
	life_check(d);
	return 0;
}

static void *life_worker(void *arg)
{
	rt_value list = RT_UNIT, cell = RT_UNIT;
	intptr_t id = (intptr_t)arg;

	memprof_set_seed(SEED + 10 + (uint64_t)id);
	RT_ROOTS(2, &list, &cell);
	for (int i = 0; i < 30000; i++) {
		if (rt_alloc(i % 7 + 1, 0, &cell))
			return (void *)1;
		rt_store_field(cell, 0, list);
		if (i % 3 == 0)
			list = cell; /* a third survive, the rest die young */
		if (i % 1000 == 0)
			rt_yield();
		if (i % 5000 == 0) {
			rt_enter_blocking_section();
			rt_leave_blocking_section();
			rt_major_gc();
		}
		if (i % 100 == 0 && rt_poll())
			return (void *)2;
	}
	RT_ROOTS_END();
	return NULL;
}

Test(rt_sampling, threads_heap_user_data_full_lifecycle)
{
	const memprof_tracker t = {
	    .alloc_minor = life_alloc_minor,
	    .alloc_major = life_alloc_major,
	    .promote = life_promote,
	    .dealloc_minor = life_dealloc_minor,
	    .dealloc_major = life_dealloc_major,
	};
	rt_thread *th[3];
	void *ret;

	cr_assert_eq(memprof_start(0.01, 0, &t), 0);
	for (intptr_t i = 0; i < 3; i++)
		cr_assert_eq(rt_thread_create(&th[i], life_worker, (void *)i), 0);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(rt_thread_join(th[i], &ret), 0);
		cr_assert_null(ret, "worker %d failed", i);
	}
	cr_assert_eq(memprof_stop(), 0);
	for (int i = 0; i < 3; i++) { /* everything the workers kept is dead now */
		rt_major_gc();
		cr_assert_eq(rt_poll(), 0);
	}
	cr_assert_gt(life.alloc_minor, 1000);
	cr_assert_gt(life.promote, 100);
	cr_assert_eq(life.bad, 0, "user data corrupted %llu times", (unsigned long long)life.bad);
	cr_assert_eq(life.alloc_minor, life.promote + life.dealloc_minor);
	cr_assert_eq(life.promote + life.alloc_major, life.dealloc_major);
}
