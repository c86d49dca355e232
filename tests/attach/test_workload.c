/*
 * memprof-bpf attached for real to the bundled workload (build/workload-sites,
 * the reference runtime with the memprof core): the alloc view's bytes by
 * site follow the workload's words by site (5.7 sigma), the other views
 * follow the sites' lifetimes, every promote and dealloc id was sampled,
 * and sampling stops once the tracer detaches.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <linux/types.h>
#include "memprof_probe_abi.h"
#include "attach_util.h"

#define RATE_ARG "0.001"
#define RATE 0.001
/* Estimated bytes one sample stands for at RATE: 8 * round(65536 / RATE) >> 16. */
#define BYTES_PER_SAMPLE 8000.0
#define TRACE_SECONDS "1.5"
/* Outlasts the trace: the test stops the workload itself. */
#define WORKLOAD_SECONDS "30"
/* Rounds after which the long-lived ring wraps and long-lived blocks die
 * (262144 roots, one block every 4th round: runtime-probes/workloads/sites.c). */
#define LONG_RING_ROUNDS (262144ull * 4)
#define SIGMAS 5.7

enum { V_ALLOC, V_LIVE, V_PROMOTED, V_SHORT, N_VIEWS };
static const char *const view_names[N_VIEWS] = {"alloc", "live", "promoted", "short"};
#define N_SITES 5
static const char *const sites[N_SITES] = {"site_short_lived", "site_medium_lived",
					   "site_long_lived", "site_major_blocks", "site_custom"};

static unsigned long long workload_rounds(const char *out)
{
	char *text = file_read(out), *p = text ? strstr(text, "rounds ") : NULL;
	unsigned long long rounds = p ? strtoull(p + 7, NULL, 10) : ~0ull;

	free(text);
	return rounds;
}

Test(attach_workload, views_follow_the_sites_and_sampling_stops_on_detach)
{
	char dir[128], out[256], err[256], views[256], pid[16], path[512];
	struct site_table view[N_VIEWS], work;
	struct memprof_probe_control c1, c2;
	const struct timespec pause = {0, 300000000};
	const char *wargs[] = {"--seconds", WORKLOAD_SECONDS, NULL};
	double total_words = 0, total_n = 0;
	pid_t w;

	tmpdir_make(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/workload.out", dir);
	snprintf(err, sizeof(err), "%s/loader.err", dir);
	snprintf(views, sizeof(views), "%s/views", dir);
	{
		char ready[256], *argv[8];

		snprintf(ready, sizeof(ready), "%s/ready", dir);
		argv[0] = WORKLOAD_BIN;
		argv[1] = "--ready-file";
		argv[2] = ready;
		argv[3] = (char *)wargs[0];
		argv[4] = (char *)wargs[1];
		argv[5] = NULL;
		w = spawn(argv, out, NULL);
		cr_assert_gt(w, 0);
		cr_assert_eq(wait_file(ready, 10), 0, "%s did not start", WORKLOAD_BIN);
	}
	snprintf(pid, sizeof(pid), "%d", (int)w);
	const char *largs[] = {"attach", pid,		"-d",  TRACE_SECONDS, "--rate",
			       RATE_ARG, "--all-views", views, NULL};
	cr_assert_eq(loader_run(err, largs), 0, "loader failed");
	nanosleep(&pause, NULL); /* the workload's next safe point */
	cr_assert_eq(target_control(w, &c1), 0, "no control block in the workload");
	nanosleep(&pause, NULL);
	cr_assert_eq(target_control(w, &c2), 0);
	kill(w, SIGTERM);
	cr_assert_eq(wait_exit(w), 0);
	cr_expect_gt(c1.samples, 0);
	cr_expect_eq(c1.samples, c2.samples, "the workload still samples after detach");
	cr_expect_eq(c2.active_rate, 0.0);

	cr_expect_eq(loader_stat(err, "orphan_ids"), 0, "promote/dealloc ids never sampled");
	cr_expect_eq(loader_stat(err, "double_promotes"), 0);
	cr_expect_eq(loader_stat(err, "duplicate_ids"), 0);
	cr_expect_eq(loader_stat(err, "dropped"), 0);
	cr_assert_eq(site_table_read_lines(out, &work), 0);
	for (int v = 0; v < N_VIEWS; v++) {
		snprintf(path, sizeof(path), "%s/%s.folded", views, view_names[v]);
		cr_assert_eq(site_table_read_folded(path, &view[v]), 0, "no %s", path);
	}

	/* Alloc: given the total, each site's samples are Binomial(n, p_site). */
	for (int s = 0; s < N_SITES; s++) {
		total_words += site_value(&work, sites[s], 0);
		total_n += site_value(&view[V_ALLOC], sites[s], 0) / BYTES_PER_SAMPLE;
	}
	cr_assert_gt(total_n, 1000, "too few samples: %.0f", total_n);
	for (int s = 0; s < N_SITES; s++) {
		double p = site_value(&work, sites[s], 0) / total_words;
		double n = site_value(&view[V_ALLOC], sites[s], 0) / BYTES_PER_SAMPLE;
		double sd = sqrt(total_n * p * (1 - p));

		cr_expect(fabs(n - total_n * p) <= SIGMAS * sd,
			  "%s: %.0f samples, expected %.1f +- %.1f", sites[s], n, total_n * p, sd);
	}
	/* Only sampled sites appear. */
	cr_expect_eq(site_table_find(&view[V_ALLOC], "(no site)"), -1);

	/* Lifetimes: long-lived blocks never die, born-major ones are never
	 * promoted, no long-lived or major block dies young. */
	if (workload_rounds(out) < LONG_RING_ROUNDS)
		cr_expect_eq(site_value(&view[V_LIVE], "site_long_lived", 0),
			     site_value(&view[V_ALLOC], "site_long_lived", 0));
	cr_expect_leq(site_value(&view[V_PROMOTED], "site_long_lived", 0),
		      site_value(&view[V_ALLOC], "site_long_lived", 0));
	cr_expect_gt(site_value(&view[V_PROMOTED], "site_medium_lived", 0), 0);
	cr_expect_eq(site_value(&view[V_PROMOTED], "site_major_blocks", 0), 0);
	cr_expect_eq(site_value(&view[V_SHORT], "site_long_lived", 0), 0);
	cr_expect_eq(site_value(&view[V_SHORT], "site_major_blocks", 0), 0);
	cr_expect_eq(site_value(&view[V_SHORT], "site_medium_lived", 0), 0);
	/* Short-lived blocks die young: all but those of the last minor heap. */
	cr_expect_gt(site_value(&view[V_SHORT], "site_short_lived", 0),
		     site_value(&view[V_ALLOC], "site_short_lived", 0) * 9 / 10);
	cr_expect_eq(site_value(&view[V_PROMOTED], "site_short_lived", 0), 0);
}

Test(attach_workload, an_in_process_profile_is_noted)
{
	char dir[128], out[256], err[256], ready[256], pid[16];
	char *argv[] = {WORKLOAD_BIN,	  "--rate",	  "0.002", "--seconds",
			WORKLOAD_SECONDS, "--ready-file", ready,   NULL};
	pid_t w;

	tmpdir_make(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/workload.out", dir);
	snprintf(err, sizeof(err), "%s/loader.err", dir);
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	w = spawn(argv, out, NULL);
	cr_assert_gt(w, 0);
	cr_assert_eq(wait_file(ready, 10), 0, "%s did not start", WORKLOAD_BIN);
	snprintf(pid, sizeof(pid), "%d", (int)w);
	const char *largs[] = {"attach", pid,  "-d",	    "1", "--rate",
			       RATE_ARG, "-o", "/dev/null", NULL};
	cr_expect_eq(loader_run(err, largs), 0);
	kill(w, SIGTERM);
	cr_expect_eq(wait_exit(w), 0);
	cr_expect(file_contains(err, "in-process profile is sampling at rate 0.002"),
		  "no note on the in-process profile");
	cr_expect_gt(loader_stat(err, "samples"), 0, "the in-process samples were not seen");
}
