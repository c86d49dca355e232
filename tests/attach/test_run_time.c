/*
 * attach -v says how long each BPF program ran, from the kernel's own
 * accounting, when kernel.bpf_stats_enabled is 1 (and nothing when it is
 * 0: the kernel counts nothing then).  The reference runtime's trigger
 * fires the one-sample memprof:sample, so memprof_sample runs exactly once
 * per sample the loader counted.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attach_util.h"
#include "testlib.h"

#define STATS_SYSCTL "/proc/sys/kernel/bpf_stats_enabled"

static int stats_was = -1;

static void stats_set(int on)
{
	FILE *f = fopen(STATS_SYSCTL, "w");

	cr_assert_not_null(f, "cannot write " STATS_SYSCTL);
	fprintf(f, "%d\n", on);
	cr_assert_eq(fclose(f), 0);
}

static void stats_save(void)
{
	FILE *f = fopen(STATS_SYSCTL, "r");

	if (f && fscanf(f, "%d", &stats_was) != 1)
		stats_was = -1;
	if (f)
		fclose(f);
}

static void stats_restore(void)
{
	if (stats_was >= 0)
		stats_set(stats_was);
}

/* Attach -v to the trigger until it exits; the loader's stderr in err. */
static void run_trigger(const char *dir, char *err, size_t len)
{
	char out[300], ready[300], pid[16];
	pid_t t;

	snprintf(err, len, "%s/loader.err", dir);
	snprintf(out, sizeof(out), "%s/trigger.out", dir);
	snprintf(ready, sizeof(ready), "%s/loader.ready", dir);
	const char *targs[] = {"--wait-tracers", "1", "--start-file", ready, "--iterations",
			       "20000",		 NULL};
	t = trigger_start(dir, out, targs);
	cr_assert_gt(t, 0, "the trigger did not start");
	snprintf(pid, sizeof(pid), "%d", (int)t);
	const char *largs[] = {"attach",       pid,   "-v", "--rate",	 "0.01",
			       "--ready-file", ready, "-o", "/dev/null", NULL};
	cr_assert_eq(loader_run(err, largs), 0, "the loader failed: %s", read_file(err));
	cr_assert_eq(wait_exit(t), 0, "the trigger failed");
}

Test(run_time, each_program_says_its_run_time_per_sample, .init = stats_save, .fini = stats_restore,
     .timeout = 120)
{
	char dir[128], err[300], *text, *line;
	unsigned long long runs = 0;
	double ms = 0, ns = 0;

	stats_set(1);
	tmpdir_make(dir, sizeof(dir));
	run_trigger(dir, err, sizeof(err));
	text = read_file(err);
	line = strstr(text, "BPF run time in process");
	cr_assert_not_null(line, "no run time line: %s", text);
	line = strstr(line, "memprof_sample ");
	cr_assert_not_null(line, "no memprof_sample in the run time line: %s", text);
	cr_assert_eq(
	    sscanf(line, "memprof_sample %lf ms in %llu runs (%lf ns a sample)", &ms, &runs, &ns),
	    3, "cannot read: %s", line);
	cr_expect_gt(loader_stat(err, "samples"), 0);
	cr_expect_eq((long long)runs, loader_stat(err, "samples"),
		     "memprof_sample ran %llu times for the samples counted: %s", runs, text);
	cr_expect(ms > 0 && ns > 0, "no run time: %s", line);
	/* Per sample: the run time over the samples (both as printed, rounded). */
	cr_expect_lt(fabs(ns * (double)runs / 1e6 - ms), 0.01 * ms + 0.06,
		     "ns a sample times the samples is not the run time: %s", line);
	free(text);

	stats_set(0);
	run_trigger(dir, err, sizeof(err));
	cr_expect_not(file_contains(err, "BPF run time"), "said with the kernel not counting: %s",
		      read_file(err));
	cr_expect(file_contains(err, "stop: block map of process"), "%s", read_file(err));
}
