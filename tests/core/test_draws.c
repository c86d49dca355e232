/*
 * memprof_draw_points_bytes: the count of sample points in a span of bytes
 * (binomial: mean span * p, p = rate / 8 per byte) and the gap from the
 * span's end to the next point (geometric: mean 1 / p), the gap independent
 * of the count (its mean is 1 / p whether the span held points or not).
 * Means within 5.7 standard errors, fixed seed.
 */
#include <math.h>
#include <criterion/criterion.h>

#include "memprof.h"
#include "memprof_host.h"
#include "toy_host.h"

#define RATE 0.01
#define SPAN_BYTES 2000
#define TRIALS 200000
#define SIGMAS 5.7
#define SEED 20261204

static const memprof_tracker no_callbacks;

static void expect_mean(double sum, double n, double mean, double var, const char *what)
{
	double se = sqrt(var / n), got = sum / n;

	cr_expect(fabs(got - mean) < SIGMAS * se, "%s: mean %.3f, expected %.3f (se %.3f)", what,
		  got, mean, se);
}

Test(draws, points_and_the_next_gap)
{
	double p = RATE / 8, sum_n = 0, sum_gap = 0, sum_gap_empty = 0, sum_gap_hit = 0;
	double n_empty = 0, n_hit = 0;

	toy_init();
	memprof_set_seed(SEED);
	cr_assert_eq(memprof_start(RATE, 0, &no_callbacks), 0);
	for (int i = 0; i < TRIALS; i++) {
		size_t gap = 0, n = memprof_draw_points_bytes(SPAN_BYTES, &gap);
		cr_assert_geq(gap, 1);
		sum_n += (double)n;
		sum_gap += (double)gap;
		if (n) {
			sum_gap_hit += (double)gap;
			n_hit++;
		} else {
			sum_gap_empty += (double)gap;
			n_empty++;
		}
	}
	memprof_stop();
	memprof_discard();
	expect_mean(sum_n, TRIALS, SPAN_BYTES * p, SPAN_BYTES * p * (1 - p), "points");
	double gap_var = (1 - p) / (p * p);
	expect_mean(sum_gap, TRIALS, 1 / p, gap_var, "next gap");
	cr_assert_gt(n_empty, 1000);
	cr_assert_gt(n_hit, 1000);
	expect_mean(sum_gap_empty, n_empty, 1 / p, gap_var, "next gap after an empty span");
	expect_mean(sum_gap_hit, n_hit, 1 / p, gap_var, "next gap after points");
}
