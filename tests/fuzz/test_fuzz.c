/*
 * Bounded fuzzing runs (libFuzzer, ASan+UBSan) of the loader's parsers,
 * from the checked-in seed corpus in tests/fuzz/corpus/: the ELF/stapsdt
 * reader, the /proc/PID/maps parser, and diff's readers (folded and pprof,
 * gzipped or not) with its writers.  A crash, a leak or a sanitizer
 * report fails the test and leaves the input in the test's directory.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define FUZZ_SECONDS "12"

static int fuzz(const char *bin, const char *seeds)
{
	char dir[] = "/tmp/memprof-fuzz-XXXXXX", cmd[1024];
	int rc;

	cr_assert(mkdtemp(dir));
	/* New inputs go to the temporary corpus; the seeds stay as they are. */
	snprintf(cmd, sizeof(cmd),
		 "%s -max_total_time=" FUZZ_SECONDS " -timeout=10 -rss_limit_mb=2048 "
		 "-artifact_prefix=%s/ -print_final_stats=1 %s %s > %s/log 2>&1; rc=$?; "
		 "tail -n 12 %s/log; exit $rc",
		 bin, dir, dir, seeds, dir, dir);
	rc = system(cmd);
	rc = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
	if (!rc) {
		snprintf(cmd, sizeof(cmd), "rm -rf -- %s", dir);
		if (system(cmd))
			fprintf(stderr, "fuzz: could not remove %s\n", dir);
	} else {
		fprintf(stderr, "fuzz: %s failed; its inputs and log are in %s\n", bin, dir);
	}
	return rc;
}

Test(fuzz, elf_and_stapsdt_reader, .timeout = 60)
{
	cr_expect_eq(fuzz("build/tests/fuzz/progs/fuzz-elf", "tests/fuzz/corpus/elf"), 0);
}

Test(fuzz, proc_maps_parser, .timeout = 60)
{
	cr_expect_eq(fuzz("build/tests/fuzz/progs/fuzz-maps", "tests/fuzz/corpus/maps"), 0);
}

/* Its seeds include one input per fixed fault (corpus/diff/regression-*). */
Test(fuzz, diff_inputs, .timeout = 60)
{
	cr_expect_eq(fuzz("build/tests/fuzz/progs/fuzz-diff", "tests/fuzz/corpus/diff"), 0);
}
