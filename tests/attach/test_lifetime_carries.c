/*
 * The kernel's lifetime histograms count in 32 bits a slot, their carries
 * past 2^32 in a hash of their own (bpf/memprof_maps.h, struct
 * memprof_lifetime_hist): the loader adds them back, so the counts stay
 * exact.  The trigger's --sample-scale makes each sample weigh 2^31
 * samples: every slot with two deaths or more wraps.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attach_util.h"
#include "exit_codes.h"

/* 2^31: two samples in one slot wrap it. */
#define CARRY_SCALE "2147483648"

/* died_young (the 7th field) of site's line in a --lifetimes CSV, or -1. */
static long long died_young_of(const char *csv, const char *site)
{
	char *text = read_file(csv), key[96], *line;
	long long v = -1;

	snprintf(key, sizeof(key), "\n%s,", site);
	line = text ? strstr(text, key) : NULL;
	if (line) {
		const char *f = line + 1;

		for (int i = 0; i < 6 && f; i++)
			f = strchr(f, ',') ? strchr(f, ',') + 1 : NULL;
		v = f ? strtoll(f, NULL, 10) : -1;
	}
	free(text);
	return v;
}

/*
 * Every short-lived block of the trigger dies young (at the collection
 * after it): the site's died_young is exactly the samples it reports, here
 * far past 2^32.  With the carries left out, it came out short by a
 * multiple of 2^32.
 */
Test(lifetime_carries, slots_past_two_to_the_32_keep_exact_counts, .timeout = 120)
{
	char dir[128], err[192], tout[192], csv[192], pid[16];
	const char *targs[] = {"--wait-tracers", "1", "--iterations", "20000", "--sample-scale",
			       CARRY_SCALE,	 NULL};
	struct site_table t;
	pid_t trig;

	tmpdir_make(dir, sizeof(dir));
	snprintf(err, sizeof(err), "%s/loader.err", dir);
	snprintf(tout, sizeof(tout), "%s/trigger.out", dir);
	snprintf(csv, sizeof(csv), "%s/lifetimes.csv", dir);
	trig = trigger_start(dir, tout, targs);
	cr_assert_gt(trig, 0);
	snprintf(pid, sizeof(pid), "%d", (int)trig);
	const char *args[] = {"attach", pid,	     "-v",	    "--rate", "1e-3", "--no-dwarf",
			      "-o",	"/dev/null", "--lifetimes", csv,      NULL};
	cr_assert_eq(loader_run(err, args), EXIT_OK, "the loader failed: %s", read_file(err));
	cr_assert_eq(wait_exit(trig), 0, "the trigger failed");
	cr_assert_eq(site_table_read_lines(tout, &t), 0, "no trigger output");
	long long samples = site_value(&t, "site_short_lived", 3);

	cr_assert_gt(samples, 4ll << 32, "too few samples to wrap a slot: %lld", samples);
	cr_expect_eq(died_young_of(csv, "site_short_lived"), samples,
		     "site_short_lived died young %lld times, sampled %lld: %s",
		     died_young_of(csv, "site_short_lived"), samples, read_file(csv));
	cr_expect_eq(loader_stat(err, "lifetime_carries_lost"), 0);
}
