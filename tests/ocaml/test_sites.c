/*
 * The OCaml host on a real OCaml program (tests/ocaml/progs/sites.ml):
 * three allocation sites of known word shares and lifetimes, attached with
 * the real loader.  Every view is checked against what the program says it
 * allocates, in the -g build and in a build without -g.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "ocaml_util.h"
#include "testlib.h"

#define RATE 1e-4
#define RATE_S "1e-4"
#define N_SITES 4

/* Innermost frames, as the loader names OCaml functions. */
static const char *const site_names[N_SITES] = {"Work.make_point", "Work.make_record",
						"Work.make_entry", "Sites.entry"};
enum { POINT, RECORD, ENTRY, CONS };

struct run {
	char dir[256], out[512], views[512];
	double alloc[N_SITES], truth[N_SITES];
};

static void view_path(const struct run *r, const char *view, char *path, size_t len)
{
	snprintf(path, len, "%s/%s.folded", r->views, view);
}

/*
 * About 5.5 s of allocation at 5e6 words/s from the program's go, which
 * comes once the loader is attached; the loader detaches 3 s after its
 * attach, while the program still allocates.
 */
static void run_sites(const char *prog, struct run *r)
{
	char ready[512], path[600], key[64];

	ocaml_tmpdir(r->dir, sizeof(r->dir));
	snprintf(r->out, sizeof(r->out), "%s/out", r->dir);
	snprintf(r->views, sizeof(r->views), "%s/views", r->dir);
	snprintf(ready, sizeof(ready), "%s/ready", r->dir);
	const char *argv[] = {prog, "1000000", ready, "5e6", NULL};
	pid_t pid = ocaml_start(r->dir, r->out, argv);

	cr_assert_eq(ocaml_attach(pid, "3", RATE_S, r->dir), 0, "the loader failed");
	cr_assert_eq(ocaml_wait(pid), 0, "the OCaml program failed");
	view_path(r, "alloc", path, sizeof(path));
	for (int i = 0; i < N_SITES; i++) {
		snprintf(key, sizeof(key), "site %s", site_names[i]);
		r->truth[i] = out_value(r->out, key);
		cr_assert_gt(r->truth[i], 0, "the program did not print %s", key);
		r->alloc[i] = folded_frame_sum(path, site_names[i]);
	}
}

/* Per-site shares of the alloc view within 5.7 sd of the program's own. */
static void check_alloc_shares(const struct run *r)
{
	double counts[N_SITES], n = 0, truth = 0, sites_w = 0, total;
	char path[600];

	view_path(r, "alloc", path, sizeof(path));
	total = folded_total(path);
	for (int i = 0; i < N_SITES; i++) {
		counts[i] = r->alloc[i] * RATE / 8; /* samples: estimated bytes * rate / 8 */
		n += counts[i];
		truth += r->truth[i];
		sites_w += r->alloc[i];
	}
	cr_assert_gt(n, 500, "too few samples (%.0f)", n);
	cr_expect_geq(sites_w, 0.99 * total, "frames not named as OCaml functions (%.0f of %.0f)",
		      sites_w, total);
	for (int i = 0; i < N_SITES; i++)
		cr_expect(within_binomial(counts[i], n, r->truth[i] / truth),
			  "%s: %.0f samples of %.0f, expected share %.4f", site_names[i], counts[i],
			  n, r->truth[i] / truth);
}

/*
 * Samples of site i in view (promoted or short) by the detach: all of alloc
 * but those of the last minor heap (minor words, of which the site's share
 * of the words is its), whose count is at most Poisson with that many
 * words.
 */
static void expect_all_but_last_minor_heap(const struct run *r, const double *view, int i,
					   double minor, double truth, const char *name)
{
	double alloc = r->alloc[i] * RATE / 8, got = view[i] * RATE / 8;
	double last = RATE * minor * r->truth[i] / truth;

	cr_expect_leq(got, alloc, "%s: %s %.0f samples, more than alloc's %.0f", name,
		      site_names[i], got, alloc);
	cr_expect_leq(alloc - got, last + poisson_bound(last),
		      "%s: %s %.0f samples of %.0f: more missing than the last minor heap holds "
		      "(%.1f +- %.1f)",
		      name, site_names[i], got, alloc, last, poisson_bound(last));
}

Test(ocaml_sites, views_of_three_sites_built_with_g, .timeout = 60)
{
	struct run r;
	double live[N_SITES], promoted[N_SITES], shrt[N_SITES];
	char path[600];

	run_sites(OCAML_PROG("sites"), &r);
	check_alloc_shares(&r);
	for (int i = 0; i < N_SITES; i++) {
		view_path(&r, "live", path, sizeof(path));
		live[i] = folded_frame_sum(path, site_names[i]);
		view_path(&r, "promoted", path, sizeof(path));
		promoted[i] = folded_frame_sum(path, site_names[i]);
		view_path(&r, "short", path, sizeof(path));
		shrt[i] = folded_frame_sum(path, site_names[i]);
	}
	/* live: the long-lived site leads. */
	cr_expect_gt(live[ENTRY], live[RECORD], "live: make_entry %.0f, make_record %.0f",
		     live[ENTRY], live[RECORD]);
	cr_expect_gt(live[ENTRY], live[POINT], "live: make_entry %.0f, make_point %.0f",
		     live[ENTRY], live[POINT]);
	/*
	 * The garbage points still live at detach are the sampled ones of the
	 * minor heap (one domain) not yet collected: at most minor_heap_words
	 * words of allocation, of which make_point's share are points, so
	 * their samples are at most Poisson with mean rate * those words.
	 */
	double minor = out_value(r.out, "minor_heap_words"), truth = 0, mean, live_samples;

	cr_assert_gt(minor, 0, "the program did not print its minor heap size");
	for (int i = 0; i < N_SITES; i++)
		truth += r.truth[i];
	mean = RATE * minor * r.truth[POINT] / truth;
	live_samples = live[POINT] * RATE / 8;
	cr_expect_leq(live_samples, mean + poisson_bound(mean),
		      "live: %.0f samples of make_point, more than the minor heap's %.1f + %.1f",
		      live_samples, mean, poisson_bound(mean));
	/*
	 * promoted: every kept block but those of the last minor heap, which
	 * the detach came before; hardly any garbage.  short: the garbage but
	 * that of the last minor heap, and nothing that was kept.
	 */
	expect_all_but_last_minor_heap(&r, promoted, ENTRY, minor, truth, "promoted");
	expect_all_but_last_minor_heap(&r, promoted, RECORD, minor, truth, "promoted");
	cr_expect_lt(promoted[POINT], 0.01 * r.alloc[POINT], "promoted: make_point %.0f of %.0f",
		     promoted[POINT], r.alloc[POINT]);
	expect_all_but_last_minor_heap(&r, shrt, POINT, minor, truth, "short");
	cr_expect_eq(shrt[ENTRY], 0, "short: make_entry %.0f", shrt[ENTRY]);
	cr_expect_eq(shrt[RECORD], 0, "short: make_record %.0f", shrt[RECORD]);
}

Test(ocaml_sites, alloc_shares_built_without_g, .timeout = 60)
{
	struct run r;

	run_sites(OCAML_PROG("sites-nog"), &r);
	check_alloc_shares(&r);
}
