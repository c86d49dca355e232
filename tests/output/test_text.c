/*
 * The text report's 95% intervals against exact values: 200 sites of known
 * sizes (tests/output/progs/many_sites.c), each interval of each view
 * should cover its site's exact bytes and objects 95% of the time.  The
 * misses are Binomial(n, 0.05): more than 5.7 sigma above that fails (as
 * intervals of one standard error would, at about 32% misses).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output_util.h"

#define RATE "0.003"
#define N_SITES 200
#define BLOCK_WORDS 8

static double exact_blocks(int i)
{
	return (1 + i % 7) * 1000.0;
}

struct coverage {
	int checked, missed_bytes, missed_objects;
};

/* Check the rows of one view's "by site" table. */
static void check_view(const char *report, const char *view, int want_even, int want_odd,
		       struct coverage *c)
{
	char head[64];
	const char *sec, *end, *l;
	int rows = 0;

	snprintf(head, sizeof(head), "\n== %s (", view);
	sec = strstr(report, head);
	cr_assert(sec, "no %s section", view);
	end = strstr(sec + 1, "\n== ");
	if (!end)
		end = sec + strlen(sec);
	for (l = strchr(sec + 1, '\n'); l && l < end; l = strchr(l + 1, '\n')) {
		const char *p = l + 1, *site;
		double bytes, lo, hi, objects, olo, ohi, exact_b, exact_o;
		int i;

		site = strstr(p, "site_");
		if (!site || site > strchr(p, '\n') || sscanf(site, "site_%d", &i) != 1)
			continue;
		p = strchr(p, '%') + 1;
		bytes = out_parse_bytes(p, &p);
		lo = out_parse_bytes(strchr(p, '[') + 1, &p);
		hi = out_parse_bytes(strchr(p, ',') + 1, &p);
		p = strchr(p, ']') + 1;
		objects = strtod(p, (char **)&p);
		olo = strtod(strchr(p, '[') + 1, (char **)&p);
		ohi = strtod(strchr(p, ',') + 1, (char **)&p);
		cr_assert(!isnan(bytes) && !isnan(lo) && !isnan(hi), "unparsable row: %.200s",
			  l + 1);
		cr_expect(lo <= bytes && bytes <= hi, "estimate outside its interval: %.200s",
			  l + 1);
		cr_expect(olo <= objects && objects <= ohi, "objects outside: %.200s", l + 1);
		cr_expect((i % 2 == 0 && want_even) || (i % 2 == 1 && want_odd),
			  "site_%03d in the %s view", i, view);
		exact_o = exact_blocks(i);
		exact_b = exact_o * BLOCK_WORDS * 8;
		/* Printed with 4 significant digits. */
		if (exact_b < lo * (1 - 5e-4) || exact_b > hi * (1 + 5e-4))
			c->missed_bytes++;
		if (exact_o < olo * (1 - 5e-4) - 0.5 || exact_o > ohi * (1 + 5e-4) + 0.5)
			c->missed_objects++;
		c->checked++;
		rows++;
	}
	/* A site with no sample has no row: rare at ~100 samples per site. */
	cr_expect_geq(rows, (want_even + want_odd) * N_SITES / 2 - 2, "%s: %d rows", view, rows);
}

Test(output_text, intervals_cover_the_exact_values)
{
	char dir[128], txt[256], *report;
	struct coverage c = {0};
	double expected, bound;

	out_tmpdir(dir, sizeof(dir));
	snprintf(txt, sizeof(txt), "%s/report.txt", dir);
	const char *args[] = {"-o", txt, NULL};
	cr_assert_eq(out_profile("many_sites", dir, RATE, args), 0, "the profiled run failed");
	report = out_file(txt);
	cr_assert(report && strstr(report, "sampling rate 0.003 per word"), "%s",
		  report ? report : "");
	check_view(report, "alloc", 1, 1, &c);
	check_view(report, "live", 1, 0, &c);
	check_view(report, "short", 0, 1, &c);
	expected = 0.05 * c.checked;
	bound = expected + SIGMAS * sqrt(c.checked * 0.05 * 0.95);
	cr_expect_leq(c.missed_bytes, bound, "bytes: %d of %d intervals miss (expected %.1f)",
		      c.missed_bytes, c.checked, expected);
	cr_expect_leq(c.missed_objects, bound, "objects: %d of %d intervals miss (expected %.1f)",
		      c.missed_objects, c.checked, expected);
	free(report);
}

Test(output_text, verbose_adds_stacks)
{
	char dir[128], txt[256], *report;

	out_tmpdir(dir, sizeof(dir));
	snprintf(txt, sizeof(txt), "%s/report.data", dir);
	const char *args[] = {"-o", txt, "--format", "text", "-v", NULL};
	cr_assert_eq(out_profile("known_sites", dir, "0.01", args), 0);
	report = out_file(txt);
	cr_assert(report);
	cr_expect(strstr(report, "-- by stack"));
	cr_expect(strstr(report, ";run_requests;site_kept_small\n") &&
		      strstr(report, ";run_batch;site_kept_small\n"),
		  "%s", report);
	free(report);
}
