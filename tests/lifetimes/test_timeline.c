/*
 * The timeline (userspace/output/timeline.c): a program whose live memory grows in
 * known steps (tests/lifetimes/progs/lifetimes_prog.c, "steps": 4 steps of
 * 8 MiB, 600 ms apart) is seen stepping within sampling error, 5.7 sigma;
 * the SVG chart; the sparkline and the percentiles on known inputs.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/lifetimes.h"
#include "lifetimes_util.h"
#include "output/timeline.h"

#define RATE "0.001"
#define RATE_NUM 0.001
#define STEPS 4
#define STEP_BYTES (8.0 * 1024 * 1024)

/* TEST_SIGMAS of the estimated bytes of k steps (Poisson samples, scaled). */
static double level_bound(int k)
{
	return poisson_bound(k * STEP_BYTES / 8 * RATE_NUM) * 8 / RATE_NUM;
}

Test(timeline, steps_within_sampling_error, .timeout = 90)
{
	char dir[64], csv[128], err[128], line[512];
	const char *extra[] = {"--timeline", csv, NULL};
	int seen[STEPS + 1] = {0}, between = 0, last = 0, points = 0, code;
	FILE *f;

	lt_tmpdir(dir, sizeof(dir));
	snprintf(csv, sizeof(csv), "%s/timeline.csv", dir);
	snprintf(err, sizeof(err), "%s/loader.err", dir);
	code = lt_run("steps", dir, RATE, extra);
	cr_assert_eq(code, 0, "loader exit %d: %s", code, read_file(err));
	f = fopen(csv, "r");
	cr_assert(f);
	cr_assert(fgets(line, sizeof(line), f));
	cr_assert_str_eq(line, "time_s,gcs,site,live_bytes,live_samples,pid,file,line\n");
	while (fgets(line, sizeof(line), f)) {
		double t, bytes, samples;
		unsigned long long gcs;
		char site[128];
		int k;

		cr_assert_eq(
		    sscanf(line, "%lf,%llu,%127[^,],%lf,%lf", &t, &gcs, site, &bytes, &samples), 5,
		    "bad row: %s", line);
		if (strcmp(site, "site_step"))
			continue;
		points++;
		k = (int)lround(bytes / STEP_BYTES);
		if (k >= 0 && k <= STEPS && fabs(bytes - k * STEP_BYTES) <= level_bound(k)) {
			/* On a step: never below the last one seen. */
			cr_assert(k >= last, "live memory went down from step %d to %d at %g s",
				  last, k, t);
			seen[k]++;
			last = k;
		} else {
			/* Caught in the middle of a step's allocations (a step takes
			 * tens of ms with the probes firing): a point or two per step,
			 * never below the last step seen nor above the top one (a
			 * loader starved of CPU may see no point of a step). */
			cr_assert(bytes > last * STEP_BYTES - level_bound(last) &&
				      bytes < STEPS * STEP_BYTES + level_bound(STEPS),
				  "%g bytes at %g s: on no step (last step %d)", bytes, t, last);
			between++;
		}
	}
	fclose(f);
	cr_assert(between <= 2 * STEPS, "%d points between steps", between);
	/* Steps 1..4 each hold for 600 ms: several points at the 100 ms poll. */
	for (int k = 1; k <= STEPS; k++)
		cr_assert(seen[k] >= 2, "step %d seen at %d points (of %d)", k, seen[k], points);
}

Test(timeline, svg_chart, .timeout = 90)
{
	char dir[64], svg_path[128], err[128];
	const char *extra[] = {"--timeline", svg_path, NULL};
	const char *title;
	char *svg;
	int code;

	lt_tmpdir(dir, sizeof(dir));
	snprintf(svg_path, sizeof(svg_path), "%s/timeline.svg", dir);
	snprintf(err, sizeof(err), "%s/loader.err", dir);
	code = lt_run("steps", dir, RATE, extra);
	cr_assert_eq(code, 0, "loader exit %d: %s", code, read_file(err));
	svg = read_file(svg_path);
	cr_assert(svg);
	cr_assert(strstr(svg, "<svg ") && strstr(svg, "</svg>\n"));
	cr_assert(strstr(svg, "time since attach (s)"));
	cr_assert(strstr(svg, "<path class=\"a\""), "no area");
	/* The largest site first, in the legend and the areas: site_step, with
	 * its file and line. */
	title = strstr(svg, "<title>site_step (");
	cr_assert(title && strstr(title, "lifetimes_prog.c:") && strstr(title, ")\npeak ") &&
		      strstr(title, ")\npeak ") + 1 == strchr(title, '\n'),
		  "no site_step area");
	/* 32 MiB at the end, within a few percent (the tooltip's "at the end"). */
	{
		const char *at = strstr(title, "at the end ");
		double v = at ? strtod(at + 11, NULL) : NAN;

		cr_assert(at && strstr(at, "MiB"), "no final size");
		cr_assert(fabs(v - 32) <= level_bound(4) / (1024 * 1024) + 0.01, "final %g MiB", v);
	}
	free(svg);
}

Test(timeline, sparkline_of_known_series)
{
	const double up[8] = {0, 1, 2, 3, 4, 5, 6, 7};
	char buf[128];

	cr_assert_eq(timeline_sparkline(up, 8, 8, buf, sizeof(buf)), 8);
	cr_assert_str_eq(buf, "\u2581\u2582\u2583\u2584\u2585\u2586\u2587\u2588");
	/* Four columns of two points: each column shows its larger point. */
	cr_assert_eq(timeline_sparkline(up, 8, 4, buf, sizeof(buf)), 4);
	cr_assert_str_eq(buf, "\u2582\u2584\u2586\u2588");
	/* Too small a buffer: whole characters only. */
	cr_assert_eq(timeline_sparkline(up, 8, 8, buf, 8), 2);
	cr_assert_eq(strlen(buf), 6);
	cr_assert_eq(timeline_sparkline(up, 0, 8, buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "");
}

Test(timeline, percentiles_of_known_histograms)
{
	struct lifetime_dist d = {0};
	double ms;

	/* 100 samples in [1024, 2048) us: exact to the slot. */
	d.died[MEMPROF_DIED_YOUNG][lifetime_slot(1500)] = 100;
	cr_assert_eq(lifetime_slot(1500), 11);
	cr_assert_eq(lifetime_quantile(&d, 0.5, &ms), 0);
	cr_assert(ms >= 1.024 && ms < 2.048, "p50 %g ms", ms);
	cr_assert(fabs(ms - 1.536) < 1e-9, "linear inside the slot: %g", ms);
	/* 100 more still live, all 100 ms old: percentiles at or above them are
	 * lower bounds, and never above the oldest age seen. */
	d.live[lifetime_slot(100000)] = 100;
	d.youngest_live_us = d.oldest_live_us = 100000;
	cr_assert_eq(lifetime_quantile(&d, 0.25, &ms), 0);
	cr_assert_eq(lifetime_quantile(&d, 0.9, &ms), 1);
	cr_assert(ms >= 100 && ms <= 100.001, "p90 %g ms", ms);
	cr_assert_eq(lifetime_quantile(&(struct lifetime_dist){0}, 0.5, &ms), -1);
}
