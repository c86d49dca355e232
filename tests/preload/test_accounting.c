/*
 * Accounting under the preload, with an in-process tracker: exact at rate
 * 1 over many threads, and within a 5.7-sigma binomial bound below 1.
 */
#include <criterion/criterion.h>

#include "harness.h"

/* Small epochs and threshold so that promotions and born-major blocks happen. */
static const char *const small_epochs[] = {
    "MEMPROF_YOUNG_EPOCH_BYTES=65536",
    "MEMPROF_MAJOR_THRESHOLD_BYTES=16384",
    NULL,
};

Test(accounting, stress_rate_one_is_exact)
{
	const char *argv[] = {preload_prog("stress"), "4", "20000", NULL};
	struct run_result r;

	run_program(argv, small_epochs, 1, &r);
	cr_assert(run_ok(&r));
	double bytes = (double)result_num(&r, "bytes");
	cr_expect_gt(bytes, 0);
	/* Rate 1 per word is 1/8 per requested byte: the workers' samples are
	 * Binomial(bytes, 1/8), and no block has more samples than bytes. */
	double samples = (double)result_num(&r, "samples");
	cr_expect(within_binomial(samples, bytes, 0.125), "samples %.0f, expected %.0f +- %.0f",
		  samples, bytes / 8, binomial_bound(bytes, 0.125));
	cr_expect_eq(result_num(&r, "not_exact"), 0);
	/* Every tracked block died once, or is one the workers kept. */
	cr_expect_eq(result_num(&r, "order_errors"), 0);
	cr_expect_leq(result_num(&r, "live"), result_num(&r, "kept"));
	cr_expect_gt(result_num(&r, "live"), 0);
	/* The epochs and the threshold were in play. */
	cr_expect_gt(result_num(&r, "promote"), 0);
	cr_expect_gt(result_num(&r, "alloc_major"), 0);
	cr_expect_gt(result_num(&r, "dealloc_minor"), 0);
	cr_expect_gt(result_num(&r, "dealloc_major"), 0);
	run_result_free(&r);
}

Test(accounting, rate_below_one_within_binomial_bound)
{
	const double rate = 0.01;
	const char *argv[] = {preload_prog("rate"), "0.01", "200000", NULL};
	struct run_result r;

	run_program(argv, NULL, 1, &r);
	cr_assert(run_ok(&r));
	double bytes = (double)result_num(&r, "bytes");
	double samples = (double)result_num(&r, "samples");
	/* Per requested byte at rate / 8. */
	cr_expect(within_binomial(samples, bytes, rate / 8), "samples %.0f, expected %.0f +- %.0f",
		  samples, bytes * rate / 8, binomial_bound(bytes, rate / 8));
	cr_expect_eq(result_num(&r, "order_errors"), 0);
	cr_expect_eq(result_num(&r, "live"), 0);
	run_result_free(&r);
}
