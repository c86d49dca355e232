/*
 * A C++ program under the preload: new, delete and std::vector are sampled
 * through libstdc++, accounting is exact at rate 1, and call stacks go
 * through libstdc++ and glibc (built without frame pointers) back to the
 * program's functions.
 */
#include <criterion/criterion.h>

#include "harness.h"

Test(cxx, new_delete_vector_exact_with_stacks)
{
	const char *argv[] = {preload_prog("cxx"), NULL};
	struct run_result r;

	run_program(argv, NULL, 1, &r);
	cr_assert(run_ok(&r));
	cr_expect_eq(result_num(&r, "vector_size"), 1024);
	/* Rate 1 per word, 1/8 per requested byte: at most 8 words' worth of bytes. */
	double words = (double)result_num(&r, "words");
	cr_expect(within_binomial((double)result_num(&r, "samples"), 8 * words, 0.125),
		  "samples %lld for about %.0f bytes", result_num(&r, "samples"), 8 * words);
	cr_expect_eq(result_num(&r, "allocs"), result_num(&r, "deallocs"));
	cr_expect_eq(result_num(&r, "new_has_caller"), 1);
	cr_expect_eq(result_num(&r, "new_first_in_libstdc++"), 1);
	cr_expect_eq(result_num(&r, "vector_has_caller"), 1);
	cr_expect_eq(result_num(&r, "vector_first_in_libstdc++"), 1);
	cr_expect_eq(result_num(&r, "strdup_has_caller"), 1);
	cr_expect_eq(result_num(&r, "strdup_first_in_libc.so"), 1);
	/* The caller, main and libc's start frames at least. */
	cr_expect_geq(result_num(&r, "new_depth"), 4);
	run_result_free(&r);
}
