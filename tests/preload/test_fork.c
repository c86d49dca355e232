/*
 * fork and exec under the preload: children of a multi-threaded profiled
 * process do not hang (no lock of ours or of the core is left held), a
 * child's accounting is consistent, and exec'd programs are profiled again.
 */
#include <criterion/criterion.h>

#include "harness.h"

static void run_mode(const char *mode, struct run_result *r)
{
	const char *argv[] = {preload_prog("fork_exec"), mode, NULL};

	run_program(argv, NULL, 1, r);
	cr_assert(run_ok(r));
}

Test(fork, children_of_busy_threads_do_not_hang)
{
	struct run_result r;

	run_mode("threads", &r);
	cr_expect_eq(result_num(&r, "forks"), 40);
	cr_expect_eq(result_num(&r, "failures"), 0);
	cr_expect_eq(result_num(&r, "order_errors"), 0);
	run_result_free(&r);
}

Test(fork, child_accounting_is_consistent)
{
	struct run_result r;

	run_mode("account", &r);
	cr_expect_eq(result_num(&r, "child_status"), 0);
	/* The child frees its copies of the 100 blocks tracked before fork. */
	cr_expect_eq(result_num(&r, "child_deallocs"), 100);
	cr_expect_eq(result_num(&r, "child_live_before"), 0);
	/* Rate 1 per word, 1/8 per byte: Binomial(8 words, 1/8). */
	double child_words = (double)result_num(&r, "child_words");
	cr_expect(within_binomial((double)result_num(&r, "child_samples"), 8 * child_words, 0.125));
	cr_expect_eq(result_num(&r, "child_order_errors"), 0);
	/* The parent's blocks were not touched by the child's frees. */
	cr_expect_eq(result_num(&r, "parent_live_before"), 100);
	cr_expect_eq(result_num(&r, "parent_live_after"), 0);
	run_result_free(&r);
}

Test(fork, exec_child_is_profiled)
{
	struct run_result r;

	run_mode("exec", &r);
	cr_expect_eq(result_num(&r, "exec_status"), 0);
	cr_expect_eq(result_num(&r, "exec_words"), 5050);
	cr_expect(within_binomial((double)result_num(&r, "exec_samples"), 8 * 5050, 0.125));
	cr_expect_eq(result_num(&r, "exec_live"), 0);
	run_result_free(&r);
}
