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
	long long words = result_num(&r, "words");
	cr_expect_gt(words, 0);
	/* Every word the workers allocated was sampled once, no more. */
	cr_expect_eq(result_num(&r, "samples"), words);
	cr_expect_eq(result_num(&r, "sampled_words"), words);
	cr_expect_eq(result_num(&r, "not_exact"), 0);
	/* Every tracked block died once, or is one the workers kept. */
	cr_expect_eq(result_num(&r, "order_errors"), 0);
	cr_expect_eq(result_num(&r, "live"), result_num(&r, "kept"));
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
	double words = (double)result_num(&r, "words");
	double samples = (double)result_num(&r, "samples");
	cr_expect(within_binomial(samples, words, rate), "samples %.0f, expected %.0f +- %.0f",
		  samples, words * rate, binomial_bound(words, rate));
	cr_expect_eq(result_num(&r, "order_errors"), 0);
	cr_expect_eq(result_num(&r, "live"), 0);
	run_result_free(&r);
}
