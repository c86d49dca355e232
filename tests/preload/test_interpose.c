/*
 * The malloc family under the preload behaves as glibc's: edge cases
 * (calloc overflow, huge requests, alignment, realloc), with and without
 * sampling; realloc seen by a tracker as free + malloc; ordinary programs
 * run unchanged.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

static const char *const edge_checks[] = {
    "calloc_overflow",
    "calloc_overflow_square",
    "calloc_zero",
    "calloc_zeroed",
    "malloc_huge",
    "malloc_zero",
    "realloc_grow_keeps",
    "realloc_shrink_keeps",
    "realloc_fail_keeps",
    "realloc_zero_frees",
    "realloc_null_mallocs",
    "posix_memalign_bad",
    "posix_memalign_bad_small",
    "posix_memalign",
    "posix_memalign_huge",
    "aligned_alloc",
    "memalign",
    "valloc",
    "pvalloc",
    "usable_size_null",
    "usable_size",
    NULL,
};

static void expect_edges(const char *mode)
{
	const char *argv[] = {preload_prog("edge"), mode, NULL};
	struct run_result r;

	run_program(argv, NULL, 1, &r);
	cr_assert(run_ok(&r));
	for (size_t i = 0; edge_checks[i]; i++)
		cr_expect_eq(result_num(&r, edge_checks[i]), 1, "%s (%s)", edge_checks[i], mode);
	if (!strcmp(mode, "sampled")) {
		cr_expect_eq(result_num(&r, "order_ok"), 1);
		cr_expect_eq(result_num(&r, "saw_samples"), 1);
		cr_expect_eq(result_num(&r, "all_dead"), 1);
	}
	run_result_free(&r);
}

Test(interpose, edge_cases_unsampled)
{
	expect_edges("plain");
}

Test(interpose, edge_cases_sampled)
{
	expect_edges("sampled");
}

Test(interpose, realloc_is_free_then_malloc)
{
	const char *argv[] = {preload_prog("realloc_track"), NULL};
	struct run_result r;

	run_program(argv, NULL, 1, &r);
	cr_assert(run_ok(&r));
	cr_expect_str_eq(result_str(&r, "events"),
			 "alloc:25 dealloc:#1 alloc:125 alloc:50 dealloc:#3 dealloc:#2\n");
	cr_expect_not_null(strstr(r.out, "failed=1 zero=1"));
	run_result_free(&r);
}

/* A real program gives the same output with and without the preload. */
Test(interpose, shell_pipeline_output_unchanged)
{
	const char *argv[] = {"/bin/sh", "-c",
			      "seq 1 200000 | sort -r | md5sum; ls -la /usr/lib | wc -l", NULL};
	struct run_result a, b;

	run_program(argv, NULL, 0, &a);
	run_program(argv, NULL, 1, &b);
	cr_assert(run_ok(&a) && run_ok(&b));
	cr_expect_str_eq(a.out, b.out);
	cr_expect_str_eq(b.err, "");
	run_result_free(&a);
	run_result_free(&b);
}

/* Allocations made before the preload's constructor ran. */
Test(interpose, allocations_before_init)
{
	const char *argv[] = {preload_prog("early"), NULL};
	char preload2[4096];
	const char *env[] = {preload2, NULL};
	struct run_result r;

	/* LD_PRELOAD the test library after the preload (given first here). */
	snprintf(preload2, sizeof(preload2), "LD_PRELOAD=%s %s", preload_library(),
		 preload_prog("libearly.so"));
	run_program(argv, env, 0, &r);
	cr_assert(run_ok(&r));
	cr_expect_eq(result_num(&r, "lib_blocks_valid"), 1);
	cr_expect_eq(result_num(&r, "own_blocks_valid"), 1);
	/* Only the realloc made while profiling is sampled; nothing else died. */
	/* 5000 bytes at rate 1 per word, 1/8 per byte. */
	cr_expect(within_binomial((double)result_num(&r, "samples"), 5000, 0.125));
	cr_expect_eq(result_num(&r, "deallocs"), 1);
	cr_expect_eq(result_num(&r, "order_errors"), 0);
	run_result_free(&r);
}

/* Exit while sampling: atexit handlers, TSD destructors, a live thread. */
Test(interpose, exit_while_sampling_is_clean)
{
	const char *argv[] = {preload_prog("at_exit"), NULL};

	for (int i = 0; i < 5; i++) {
		struct run_result r;
		run_program(argv, NULL, 1, &r);
		cr_assert(run_ok(&r), "run %d", i);
		cr_expect_eq(result_num(&r, "order_errors"), 0);
		run_result_free(&r);
	}
}

/* A bad setting: one line on stderr, the default used, the program runs. */
Test(interpose, bad_environment_is_one_line_and_the_program_runs)
{
	const char *argv[] = {"/bin/echo", "still here", NULL};
	const char *env[] = {"MEMPROF_YOUNG_EPOCH_BYTES=12x", NULL};
	struct run_result r;

	run_program(argv, env, 1, &r);
	cr_assert(run_ok(&r));
	cr_expect_str_eq(r.out, "still here\n");
	cr_expect_str_eq(r.err, "memprof-preload: MEMPROF_YOUNG_EPOCH_BYTES=12x is not a positive "
				"number of bytes; using the default\n");
	run_result_free(&r);
}
