/*
 * Profile handles under LD_PRELOAD: memprof_start_profile and
 * memprof_discard_profile called through the preloaded library by a real
 * program (progs/profiles.c), at rate 1.
 */
#include <criterion/criterion.h>
#include <errno.h>

#include "harness.h"

/* Small epochs, so that the blocks still followed get promoted. */
static const char *const small_epochs[] = {
    "MEMPROF_YOUNG_EPOCH_BYTES=65536",
    NULL,
};

#define BLOCKS 200 /* as in progs/profiles.c */

Test(profiles, handles_through_the_preload)
{
	const char *argv[] = {preload_prog("profiles"), NULL};
	struct run_result r;

	run_program(argv, small_epochs, 1, &r);
	cr_assert(run_ok(&r), "stderr: %s", r.err);

	/* start_profile names the profile; it samples every block. */
	cr_expect_eq(result_num(&r, "start_a"), 0);
	cr_expect_neq(result_num(&r, "handle_a"), 0, "a handle, nonzero");
	cr_expect_geq(result_num(&r, "a_alloc"), BLOCKS);
	cr_expect_eq(result_num(&r, "discard_a_sampling"), EBUSY, "discard while it samples");
	cr_expect_eq(result_num(&r, "stop_a"), 0);
	/* Stopped, not yet discarded: A's blocks keep their callbacks. */
	cr_expect_eq(result_num(&r, "a_dealloc_stopped"), BLOCKS / 2);

	/* The old profile discarded while a new one samples. */
	cr_expect_eq(result_num(&r, "start_b"), 0);
	cr_expect_neq(result_num(&r, "handle_b"), 0);
	cr_expect_neq(result_num(&r, "handle_b"), result_num(&r, "handle_a"),
		      "a new handle for the new profile");
	cr_expect_eq(result_num(&r, "discard_a"), 0);
	cr_expect_eq(result_num(&r, "tracked_after_discard_a"), result_num(&r, "b_live"),
		     "only B's blocks left in the table");
	cr_expect_eq(result_num(&r, "discard_a_again"), EINVAL, "a second discard fails");

	/* After the discard, none of A's tracked blocks gets a callback (they
	 * die, and epochs end that would promote them), while B's do. */
	cr_expect_eq(result_num(&r, "a_after_discard"), 0, "callbacks of A after its discard");
	cr_expect_gt(result_num(&r, "b_promote"), 0, "epochs ended meanwhile");
	cr_expect_eq(result_num(&r, "b_dealloc"), BLOCKS);

	cr_expect_eq(result_num(&r, "discard_b_sampling"), EBUSY);
	cr_expect_eq(result_num(&r, "stop_b"), 0);
	cr_expect_eq(result_num(&r, "discard_b"), 0);
	cr_expect_eq(result_num(&r, "discard_b_again"), EINVAL);
	cr_expect_eq(result_num(&r, "discard_zero"), EINVAL, "no profile has handle 0");
	cr_expect_eq(result_num(&r, "tracked_end"), 0, "both profiles discarded: nothing tracked");
	run_result_free(&r);
}
