/*
 * Statistics of the sampler, with OCaml's 5.7-sigma bounds and fixed seeds:
 * geometric gaps, binomial counts, and the Poisson process seen through a
 * real (toy) minor heap with combined allocations.
 */
#include <criterion/criterion.h>
#include <math.h>

#include "memprof.h"
#include "memprof_host.h"
#include "testlib.h"
#include "toy_host.h"

static void expect_within(double got, double mean, double var, double n, const char *what)
{
	double bound = TEST_SIGMAS * sqrt(var / n);
	cr_expect(fabs(got - mean) <= bound, "%s: mean %.6g, expected %.6g +- %.3g", what, got,
		  mean, bound);
}

Test(stats, geometric_gaps)
{
	static const double rates[] = {1e-4, 0.01, 0.3, 0.9};
	const int n = 200000;

	for (size_t k = 0; k < sizeof(rates) / sizeof(rates[0]); k++) {
		double l = rates[k];
		cr_assert_eq(memprof_start(l, 0, NULL), 0);
		memprof_set_seed(42 + k);
		double sum = 0;
		for (int i = 0; i < n; i++) {
			size_t g = memprof_draw_gap();
			cr_assert_geq(g, 1);
			sum += (double)g;
		}
		/* Geometric on {1, 2, ...}: mean 1/l, variance (1-l)/l^2. */
		expect_within(sum / n, 1 / l, (1 - l) / (l * l), n, "gap");
		cr_assert_eq(memprof_stop(), 0);
	}
}

Test(stats, rate_one_samples_every_word)
{
	cr_assert_eq(memprof_start(1.0, 0, NULL), 0);
	for (int i = 0; i < 1000; i++)
		cr_assert_eq(memprof_draw_gap(), 1);
	cr_assert_eq(memprof_draw_binomial(12345), 12345);
	cr_assert_eq(memprof_stop(), 0);
	cr_assert_eq(memprof_draw_binomial(12345), 0, "not sampling");
}

Test(stats, binomial_counts)
{
	static const double rates[] = {1e-3, 0.05, 0.5};
	static const size_t words[] = {1, 17, 1000};
	const int n = 100000;

	for (size_t k = 0; k < sizeof(rates) / sizeof(rates[0]); k++) {
		for (size_t w = 0; w < sizeof(words) / sizeof(words[0]); w++) {
			double l = rates[k];
			cr_assert_eq(memprof_start(l, 0, NULL), 0);
			memprof_set_seed(7 * k + w);
			double sum = 0;
			for (int i = 0; i < n; i++) {
				size_t c = memprof_draw_binomial(words[w]);
				cr_assert_leq(c, words[w]);
				sum += (double)c;
			}
			double W = (double)words[w];
			expect_within(sum / n, W * l, W * l * (1 - l), n, "binomial");
			cr_assert_eq(memprof_stop(), 0);
		}
	}
}

struct count_ctx {
	double samples;
	size_t calls;
	int bad_size;
};

static int count_alloc(void *arg, const memprof_allocation *info, memprof_value *out)
{
	struct count_ctx *c = arg;

	c->samples += (double)info->n_samples;
	c->calls++;
	if (info->n_samples == 0 || info->n_samples > info->size + 1 ||
	    info->source != MEMPROF_SRC_NORMAL)
		c->bad_size++;
	*out = MEMPROF_NONE;
	return 0;
}

/* The Poisson process over words, through the trigger of a minor heap. */
Test(stats, minor_heap_sampling_rate)
{
	static const size_t comb[] = {3, 1, 7, 0, 2};
	static const double rates[] = {0.01, 0.2};

	for (size_t k = 0; k < 2; k++) {
		struct count_ctx c = {0};
		memprof_tracker t = {.alloc_minor = count_alloc, .arg = &c};
		double l = rates[k];
		double words = 0;

		toy_init();
		memprof_set_seed(1000 + k);
		cr_assert_eq(memprof_start(l, 0, &t), 0);
		for (int i = 0; i < 200000; i++) {
			uintptr_t base;
			size_t n = 1 + (size_t)i % 5;
			cr_assert_eq(toy_alloc(n, comb, &base), 0);
			for (size_t j = 0; j < n; j++)
				words += (double)(comb[j] + 1);
			if (i % 1000 == 0)
				toy_minor_gc();
		}
		cr_assert_eq(memprof_stop(), 0);
		cr_expect_eq(c.bad_size, 0);
		/* Total samples: binomial(words, l). */
		expect_within(c.samples / words, l, l * (1 - l), words, "samples per word");
	}
}

/* Inside a callback nothing is sampled, whatever the rate. */
static int alloc_inside(void *arg, const memprof_allocation *info, memprof_value *out)
{
	struct count_ctx *c = arg;
	static const size_t one = 4;
	uintptr_t base;

	(void)info;
	c->calls++;
	if (memprof_sampling_here())
		c->bad_size++;
	for (int i = 0; i < 100; i++)
		if (toy_alloc(1, &one, &base) != 0)
			c->bad_size++;
	*out = MEMPROF_NONE;
	return 0;
}

Test(stats, no_sampling_inside_callbacks)
{
	struct count_ctx c = {0};
	memprof_tracker t = {.alloc_minor = alloc_inside, .arg = &c};
	static const size_t one = 4;
	uintptr_t base;

	toy_init();
	cr_assert_eq(memprof_start(1.0, 0, &t), 0);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(toy_alloc(1, &one, &base), 0);
	cr_assert_eq(memprof_stop(), 0);
	cr_expect_eq(c.calls, 10, "one callback per outer allocation, none nested");
	cr_expect_eq(c.bad_size, 0);
}
