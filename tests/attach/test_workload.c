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
#include "output/folded.h"

#define RATE_ARG "0.001"
#define RATE 0.001
/* Estimated bytes one sample stands for at RATE: 8 * round(65536 / RATE) >> 16. */
#define BYTES_PER_SAMPLE 8000.0
#define TRACE_SECONDS "1.5"
/* Longer than any test: each test ends it with SIGTERM. */
#define WORKLOAD_SECONDS "600"
/* Rounds after which the long-lived ring wraps and long-lived blocks die
 * (262144 roots, one block every 4th round: runtime-probes/workloads/sites.c). */
#define LONG_RING 262144
#define LONG_RING_ROUNDS (LONG_RING * 4.0)
/*
 * The workload runs on rt's default minor heap (256 Ki words); per round it
 * puts about 102 words there (sites.c: 80 short, 18 medium, 17 long every
 * 4th round, 4 custom every 8th; born-major blocks go elsewhere).  Blocks
 * sampled in the last minor heap before the tracer detached are promoted
 * (or die young) after it: only those can be missing from promoted/short.
 */
#define MINOR_HEAP_WORDS 262144.0
#define MINOR_WORDS_PER_ROUND (80 + 18 + 17 / 4.0 + 4 / 8.0)

#define N_SITES 5
static const char *const sites[N_SITES] = {"site_short_lived", "site_medium_lived",
					   "site_long_lived", "site_major_blocks", "site_custom"};

/*
 * Samples of a site that reached view v by the time the tracer detached:
 * all of alloc but those of the last minor heap (the site puts
 * words_per_round of every MINOR_WORDS_PER_ROUND words there), whose
 * count is at most Poisson with that many words.
 */
static void expect_all_but_last_minor_heap(const struct site_table *view, const char *site,
					   enum memprof_view v, double words_per_round)
{
	double alloc = site_value(&view[MEMPROF_VIEW_ALLOC], site, 0) / BYTES_PER_SAMPLE;
	double got = site_value(&view[v], site, 0) / BYTES_PER_SAMPLE;
	double last = MINOR_HEAP_WORDS * words_per_round / MINOR_WORDS_PER_ROUND * RATE;

	cr_expect_leq(got, alloc, "%s %s: %.0f samples, more than alloc's %.0f", site,
		      memprof_view_names[v], got, alloc);
	cr_expect_leq(alloc - got, last + poisson_bound(last),
		      "%s %s: %.0f samples, alloc %.0f: more missing than the last minor heap "
		      "holds (%.1f +- %.1f)",
		      site, memprof_view_names[v], got, alloc, last, poisson_bound(last));
}

Test(attach_workload, views_follow_the_sites_and_sampling_stops_on_detach)
{
	char dir[128], out[256], err[256], views[256], pid[16], path[512];
	struct site_table view[MEMPROF_N_VIEWS], work;
	struct memprof_probe_control c1, c2;
	const struct timespec pause = {0, 300000000};
	const char *wargs[] = {"--seconds", WORKLOAD_SECONDS, NULL};
	double total_words = 0, total_n = 0, rounds;
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
		cr_assert_eq(wait_file(ready, TEST_EVENT_TIMEOUT_S), 0, "%s did not start",
			     WORKLOAD_BIN);
	}
	snprintf(pid, sizeof(pid), "%d", (int)w);
	const char *largs[] = {"attach", pid,	   "-v",	  "-d",	 TRACE_SECONDS,
			       "--rate", RATE_ARG, "--all-views", views, NULL};
	cr_assert_eq(loader_run(err, largs), 0, "loader failed");
	/* The workload's next safe point turns sampling off. */
	cr_assert_eq(wait_target_control(w, control_sampling_off), 0, "sampling never went off");
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
	/* The core hands its samples over in batches (ABI 3). */
	cr_expect_gt(loader_stat(err, "sample_batches"), 0);
	cr_expect_lt(loader_stat(err, "sample_batches") * 4, loader_stat(err, "samples"),
		     "%lld batches for %lld samples", loader_stat(err, "sample_batches"),
		     loader_stat(err, "samples"));
	cr_assert_eq(site_table_read_lines(out, &work), 0);
	for (int v = 0; v < MEMPROF_N_VIEWS; v++) {
		snprintf(path, sizeof(path), "%s/%s.folded", views, memprof_view_names[v]);
		cr_assert_eq(site_table_read_folded(path, &view[v]), 0, "no %s", path);
	}

	/* Alloc: given the total, each site's samples are Binomial(n, p_site). */
	for (int s = 0; s < N_SITES; s++) {
		total_words += site_value(&work, sites[s], 0);
		total_n += site_value(&view[MEMPROF_VIEW_ALLOC], sites[s], 0) / BYTES_PER_SAMPLE;
	}
	cr_assert_gt(total_n, 1000, "too few samples: %.0f", total_n);
	for (int s = 0; s < N_SITES; s++) {
		double p = site_value(&work, sites[s], 0) / total_words;
		double n = site_value(&view[MEMPROF_VIEW_ALLOC], sites[s], 0) / BYTES_PER_SAMPLE;

		cr_expect(within_binomial(n, total_n, p), "%s: %.0f samples, expected %.1f +- %.1f",
			  sites[s], n, total_n * p, binomial_bound(total_n, p));
	}
	/* Only sampled sites appear. */
	cr_expect_eq(site_table_find(&view[MEMPROF_VIEW_ALLOC], "(no site)"), -1);

	/* Lifetimes: long-lived blocks die only once their ring wraps,
	 * born-major ones are never promoted, no long-lived, medium or major
	 * block dies young; long-lived and medium blocks are all promoted and
	 * short-lived ones all die young, but for the last minor heap. */
	cr_assert_eq(file_value(out, "rounds", &rounds), 0, "no \"rounds\" line in %s", out);
	if (rounds < LONG_RING_ROUNDS) {
		cr_expect_eq(site_value(&view[MEMPROF_VIEW_LIVE], "site_long_lived", 0),
			     site_value(&view[MEMPROF_VIEW_ALLOC], "site_long_lived", 0));
	} else {
		/* The ring wrapped: at least its current blocks are live, all
		 * sampled while attached if the trace outlasted the ring. */
		double alloc = site_value(&view[MEMPROF_VIEW_ALLOC], "site_long_lived", 0);
		double live = site_value(&view[MEMPROF_VIEW_LIVE], "site_long_lived", 0);
		double ring = LONG_RING * 17 * RATE;

		cr_expect_geq(
		    live / BYTES_PER_SAMPLE,
		    fmin(alloc / BYTES_PER_SAMPLE, ring - poisson_bound(ring)),
		    "long-lived: %.0f live samples, alloc %.0f, the ring holds %.0f +- %.0f",
		    live / BYTES_PER_SAMPLE, alloc / BYTES_PER_SAMPLE, ring, poisson_bound(ring));
	}
	expect_all_but_last_minor_heap(view, "site_long_lived", MEMPROF_VIEW_PROMOTED, 17 / 4.0);
	expect_all_but_last_minor_heap(view, "site_medium_lived", MEMPROF_VIEW_PROMOTED, 18);
	expect_all_but_last_minor_heap(view, "site_short_lived", MEMPROF_VIEW_SHORT, 80);
	cr_expect_gt(site_value(&view[MEMPROF_VIEW_PROMOTED], "site_medium_lived", 0), 0);
	cr_expect_eq(site_value(&view[MEMPROF_VIEW_PROMOTED], "site_major_blocks", 0), 0);
	cr_expect_eq(site_value(&view[MEMPROF_VIEW_SHORT], "site_long_lived", 0), 0);
	cr_expect_eq(site_value(&view[MEMPROF_VIEW_SHORT], "site_major_blocks", 0), 0);
	cr_expect_eq(site_value(&view[MEMPROF_VIEW_SHORT], "site_medium_lived", 0), 0);
	cr_expect_gt(site_value(&view[MEMPROF_VIEW_SHORT], "site_short_lived", 0),
		     site_value(&view[MEMPROF_VIEW_ALLOC], "site_short_lived", 0) * 9 / 10);
	cr_expect_eq(site_value(&view[MEMPROF_VIEW_PROMOTED], "site_short_lived", 0), 0);
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
	cr_assert_eq(wait_file(ready, TEST_EVENT_TIMEOUT_S), 0, "%s did not start", WORKLOAD_BIN);
	snprintf(pid, sizeof(pid), "%d", (int)w);
	const char *largs[] = {"attach", pid,	   "-v", "-d",	      "1",
			       "--rate", RATE_ARG, "-o", "/dev/null", NULL};
	cr_expect_eq(loader_run(err, largs), 0);
	kill(w, SIGTERM);
	cr_expect_eq(wait_exit(w), 0);
	cr_expect(file_contains(err, "in-process profile is sampling at rate 0.002"),
		  "no note on the in-process profile");
	cr_expect_gt(loader_stat(err, "samples"), 0, "the in-process samples were not seen");
}
