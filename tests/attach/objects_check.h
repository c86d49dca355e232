/*
 * The estimated objects and bytes of blocks of 1 to OBJECTS_SIZES fields,
 * one site per size, against the blocks a program says it allocated: the
 * checks of tests/attach/test_objects.c (the reference runtime) and
 * tests/ocaml/test_objects.c (OCaml 4.13 and 5.3), on the loader's text
 * report (objects, samples) and folded alloc view (bytes).
 *
 * A block of w fields spans w + 1 words, its header included, and gets
 * Binomial(w + 1, rate) samples; its estimated objects are samples /
 * (rate (w + 1)) and its bytes 8 samples / rate.  At rate 1 every word is
 * sampled, so both are exact.
 */
#ifndef OBJECTS_CHECK_H
#define OBJECTS_CHECK_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define OBJECTS_SIZES 300

/* Per size w (index w, 1..OBJECTS_SIZES): the program's and the loader's. */
struct objects_run {
	double blocks[OBJECTS_SIZES + 1];  /* allocated, as the program printed */
	double objects[OBJECTS_SIZES + 1]; /* estimated, text report, alloc view */
	double samples[OBJECTS_SIZES + 1]; /* text report, alloc view */
	double bytes[OBJECTS_SIZES + 1];   /* estimated, folded alloc view */
};

/*
 * The objects and samples of site's row in the alloc view's "by site" table
 * of a text report ("share  bytes  [interval]  objects  [interval]  samples
 * site", the site then " (file:line)" when its line is known): 0, or -1
 * without such a row.
 */
static int objects_report_row(const char *report, const char *site, double *objects,
			      double *samples)
{
	const char *sec = strstr(report, "\n== alloc ("), *end, *l;
	size_t n = strlen(site);

	if (!sec)
		return -1;
	end = strstr(sec + 1, "\n== ");
	if (!end)
		end = sec + strlen(sec);
	for (l = strchr(sec + 1, '\n'); l && l < end; l = strchr(l + 1, '\n')) {
		const char *eol = strchr(l + 1, '\n'), *p, *q;

		if (!eol || eol > end)
			eol = end;
		/* The site, then its " (file:line)" when the line is known. */
		if (eol[-1] == ')') {
			const char *open = eol - 1;

			while (open > l && *open != '(')
				open--;
			if (open > l + 1 && open[-1] == ' ')
				eol = open - 1;
		}
		if ((size_t)(eol - l) <= n + 1 || strncmp(eol - n, site, n) || eol[-n - 1] != ' ')
			continue;
		p = memchr(l + 1, ']', (size_t)(eol - l - 1));
		q = p ? memchr(p + 1, ']', (size_t)(eol - p - 1)) : NULL;
		if (!q)
			return -1;
		*objects = strtod(p + 1, NULL);
		*samples = strtod(q + 1, NULL);
		return 0;
	}
	return -1;
}

/* Adds each line's weight of a folded file to the size its innermost frame names. */
static void objects_read_folded(struct objects_run *r, const char *path, const char *name_fmt)
{
	char *text = read_file(path), *save = NULL;

	cr_assert_not_null(text, "cannot read %s", path);
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(line, ' '), *inner, name[64];
		int w;

		if (!sp)
			continue;
		*sp = '\0';
		inner = strrchr(line, ';');
		inner = inner ? inner + 1 : line;
		for (w = 1; w <= OBJECTS_SIZES; w++) {
			snprintf(name, sizeof(name), name_fmt, w);
			if (!strcmp(inner, name)) {
				r->bytes[w] += strtod(sp + 1, NULL);
				break;
			}
		}
	}
	free(text);
}

/*
 * Fill r from the program's output (lines "site NAME blocks N"), the text
 * report and the folded alloc view; name_fmt names the site of size w
 * ("site_w%03d").
 */
static void objects_read(struct objects_run *r, const char *name_fmt, const char *out,
			 const char *report_path, const char *folded)
{
	char *report = read_file(report_path), name[64], key[96];

	memset(r, 0, sizeof(*r));
	cr_assert_not_null(report, "no report %s", report_path);
	for (int w = 1; w <= OBJECTS_SIZES; w++) {
		snprintf(name, sizeof(name), name_fmt, w);
		snprintf(key, sizeof(key), "site %s blocks", name);
		cr_assert_eq(file_value(out, key, &r->blocks[w]), 0, "the program printed no '%s'",
			     key);
		if (objects_report_row(report, name, &r->objects[w], &r->samples[w]))
			r->objects[w] = r->samples[w] = 0; /* no sample: no row */
	}
	free(report);
	objects_read_folded(r, folded, name_fmt);
}

/* Rate 1: every word sampled, so objects, samples and bytes are exact. */
static void objects_expect_exact(const struct objects_run *r, const char *name_fmt)
{
	char name[64];
	int wrong = 0;

	for (int w = 1; w <= OBJECTS_SIZES; w++) {
		double span = w + 1;

		snprintf(name, sizeof(name), name_fmt, w);
		cr_assert_gt(r->blocks[w], 0, "%s allocated nothing", name);
		wrong += r->objects[w] != r->blocks[w] || r->samples[w] != r->blocks[w] * span ||
			 r->bytes[w] != 8 * span * r->blocks[w];
		cr_expect_eq(r->objects[w], r->blocks[w],
			     "%s: %.0f objects estimated, %.0f allocated", name, r->objects[w],
			     r->blocks[w]);
		cr_expect_eq(r->samples[w], r->blocks[w] * span, "%s: %.0f samples, %.0f words",
			     name, r->samples[w], r->blocks[w] * span);
		cr_expect_eq(r->bytes[w], 8 * span * r->blocks[w],
			     "%s: %.0f bytes estimated, %.0f allocated (headers included)", name,
			     r->bytes[w], 8 * span * r->blocks[w]);
	}
	cr_expect_eq(wrong, 0, "%d of %d sizes estimated wrong", wrong, OBJECTS_SIZES);
}

/*
 * Any rate: each size's objects, and all sizes' together, within
 * TEST_SIGMAS standard deviations of the blocks allocated (the estimate of
 * b blocks of span u has variance b (1 - rate) / (rate u)); bytes per
 * estimated object are 8 u (the header's word included).  The report
 * prints objects rounded to units: half a unit of slack each.
 */
static void objects_expect_unbiased(const struct objects_run *r, const char *name_fmt, double rate)
{
	double est = 0, exact = 0, var = 0, samples = 0;
	char name[64];

	for (int w = 1; w <= OBJECTS_SIZES; w++) {
		double span = w + 1, b = r->blocks[w], v = b * (1 - rate) / (rate * span);

		snprintf(name, sizeof(name), name_fmt, w);
		cr_assert_gt(b, 0, "%s allocated nothing", name);
		cr_expect(within_binomial(r->samples[w], b * span, rate),
			  "%s: %.0f samples of %.0f words at rate %g", name, r->samples[w],
			  b * span, rate);
		cr_expect_leq(fabs(r->objects[w] - b), TEST_SIGMAS * sqrt(v) + 0.5,
			      "%s: %.0f objects estimated, %.0f allocated (sd %.1f)", name,
			      r->objects[w], b, sqrt(v));
		cr_expect_leq(fabs(r->bytes[w] / (8 * span) - r->objects[w]), 1,
			      "%s: %.0f bytes for %.0f objects of %.0f bytes", name, r->bytes[w],
			      r->objects[w], 8 * span);
		est += r->objects[w];
		exact += b;
		var += v;
		samples += r->samples[w];
	}
	cr_log_info("%s: %.0f objects estimated of %.0f allocated (sd %.0f), %.0f samples",
		    name_fmt, est, exact, sqrt(var), samples);
	cr_expect_leq(fabs(est - exact), TEST_SIGMAS * sqrt(var) + 0.5 * OBJECTS_SIZES,
		      "all sizes: %.0f objects estimated, %.0f allocated (sd %.0f)", est, exact,
		      sqrt(var));
}

#endif
