/*
 * OCaml 5 domains and the OCaml host, on real programs
 * (tests/ocaml5/progs/domains.ml) and the real loader: install () before
 * or after spawning domains, traced or not, never breaks the program and
 * samples every domain; domains spawned and joined while the loader
 * attaches and detaches: no crash, sampling goes off at the detach, and
 * each domain's share of the samples (each domain allocates at a site of
 * its own) is its share of the words allocated; with --by-domain, each
 * site's stacks have the root frame of the one domain that allocated there.
 *
 * The counts the OCaml issue asks of make test: 50 installs, 20 attaches.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ocaml_util.h"
#include "testlib.h"

#define INSTALL_RUNS 50
/* Every TRACED_EVERY-th install run is traced. */
#define TRACED_EVERY 5
#define CHURN_RUNS 20
#define DOMAINS 4
#define RATE "1e-4"
#define RATE_F 1e-4

/* A folder of its own for run r under dir. */
static void run_dir(const char *dir, int r, char *out, size_t len)
{
	snprintf(out, len, "%s/run%d", dir, r);
	cr_assert_eq(mkdir(out, 0755), 0, "mkdir %s", out);
}

static double site_words(const char *out, int k)
{
	char key[64];

	snprintf(key, sizeof(key), "site Domains.site_%d words", k);
	return out_value(out, key);
}

/* Samples of Domains.site_K in an alloc view (each weighs 8 / rate bytes). */
static double site_samples(const char *folded, int k)
{
	char frame[64];

	snprintf(frame, sizeof(frame), "Domains.site_%d", k);
	return round(folded_frame_sum(folded, frame) * RATE_F / 8);
}

/*
 * With --by-domain, every stack of Domains.site_K has one root frame
 * "domain N", the same N on all of them: N, -1 if the site has no stack,
 * -2 if a stack has no domain root or two stacks disagree.
 */
static int site_domain(const char *folded, int k)
{
	char frame[64], line[4096];
	int domain = -1;
	FILE *f = fopen(folded, "re");

	cr_assert_not_null(f, "no %s", folded);
	snprintf(frame, sizeof(frame), ";Domains.site_%d ", k);
	while (fgets(line, sizeof(line), f)) {
		int n;

		if (!strstr(line, frame))
			continue;
		if (sscanf(line, "domain %d;", &n) != 1 || (domain >= 0 && n != domain)) {
			domain = -2;
			break;
		}
		domain = n;
	}
	fclose(f);
	return domain;
}

Test(ocaml5_domains, install_before_or_after_spawning_four_domains, .timeout = 900)
{
	char dir[256];
	int runs = INSTALL_RUNS, traced = 0;

	ocaml_tmpdir(dir, sizeof(dir));
	for (int r = 0; r < runs; r++) {
		char sub[300], out[400], ready[400], views[400], alloc[500];
		/* Odd runs install after spawning: both orders, traced and not. */
		const char *mode = r % 2 ? "after" : "before";
		int trace = r % TRACED_EVERY == TRACED_EVERY - 1;
		/* Traced, each domain allocates for 0.3 s once it samples. */
		const char *argv[] = {OCAML_PROG("domains"),   mode, trace ? "0.3" : "0.1", ready,
				      trace ? "traced" : NULL, NULL};
		pid_t pid, loader = 0;
		int code;

		run_dir(dir, r, sub, sizeof(sub));
		snprintf(out, sizeof(out), "%s/out", sub);
		snprintf(ready, sizeof(ready), "%s/ready", sub);
		snprintf(views, sizeof(views), "%s/views", sub);
		if (!trace)
			ocaml_touch(sub, "ready.go"); /* untraced: it goes at once */
		pid = ocaml_start(sub, out, argv);
		if (trace) {
			const char *args[] = {"-d",	     "600", "--rate",	   RATE,
					      "--all-views", views, "--by-domain", NULL};

			loader = ocaml_loader_start(pid, args, sub, &code);
			cr_assert_gt(loader, 0,
				     "run %d: the loader exited with %d before it attached", r,
				     code);
		}
		code = ocaml_wait(pid);
		cr_assert_eq(code, 0, "run %d (%s, %s): the program ended with %d", r, mode,
			     trace ? "traced" : "untraced", code);
		for (int k = 0; k < DOMAINS; k++)
			cr_assert_gt(site_words(out, k), 0, "run %d: domain %d did not finish", r,
				     k);
		if (!trace)
			continue;
		traced++;
		/* The loader ends with the program. */
		cr_assert_eq(ocaml_wait(loader), 0, "run %d: the loader failed", r);
		snprintf(alloc, sizeof(alloc), "%s/alloc.folded", views);
		int seen[DOMAINS];
		for (int k = 0; k < DOMAINS; k++) {
			cr_expect_gt(site_samples(alloc, k), 0,
				     "run %d (%s): domain %d never sampled", r, mode, k);
			/* Each site's stacks carry the one domain that allocated there. */
			seen[k] = site_domain(alloc, k);
			cr_expect_geq(seen[k], 0, "run %d: Domains.site_%d without one domain root",
				      r, k);
			for (int j = 0; j < k; j++)
				cr_expect(seen[k] < 0 || seen[j] != seen[k],
					  "run %d: sites %d and %d in one domain %d", r, j, k,
					  seen[k]);
		}
	}
	fprintf(stderr,
		"ocaml5_domains: %d runs (%d traced, %d installing after the spawns), no crash\n",
		runs, traced, runs / 2);
}

/*
 * OCaml 5.3 seeds each domain's sampler with the domain's slot, which
 * domains spawned one after another reuse: two domains in one slot draw
 * the same sample positions.  So the shares are checked run by run, on
 * one group of four domains that each allocate their blocks in one go
 * (one draw per slot), never pooled over runs or over groups.
 */
Test(ocaml5_domains, spawning_and_joining_while_attaching_and_detaching, .timeout = 900)
{
	char dir[256];
	int runs = CHURN_RUNS;
	double worst = 0;

	ocaml_tmpdir(dir, sizeof(dir));
	for (int r = 0; r < runs; r++) {
		char sub[300], out[400], ready[400], views[400], alloc[500], done[500];
		/* 500000 blocks each: about 1050 samples at 1e-4. */
		const char *argv[] = {OCAML_PROG("domains"), "churn", "500000", ready, NULL};
		const char *args[] = {"-d", "600", "--rate", RATE, "--all-views", views, NULL};
		double c[DOMAINS], w[DOMAINS], n = 0, total_w = 0;
		pid_t pid, loader;
		int code;

		run_dir(dir, r, sub, sizeof(sub));
		snprintf(out, sizeof(out), "%s/out", sub);
		snprintf(ready, sizeof(ready), "%s/ready", sub);
		snprintf(views, sizeof(views), "%s/views", sub);
		snprintf(done, sizeof(done), "%s/ready.done", sub);
		/* It spawns and joins domains from its start to its end. */
		pid = ocaml_start(sub, out, argv);
		loader = ocaml_loader_start(pid, args, sub, &code);
		cr_assert_gt(loader, 0, "run %d: the loader exited with %d before it attached", r,
			     code);
		/* Once its counted domains ran (all sampled), detach while it goes on. */
		cr_assert_eq(wait_file(done, TEST_EVENT_TIMEOUT_S), 0,
			     "run %d: the counted domains never ended", r);
		kill(loader, SIGINT);
		cr_assert_eq(ocaml_wait(loader), 0, "run %d: the loader failed", r);
		cr_assert_eq(wait_target_control(pid, control_sampling_off), 0,
			     "run %d: sampling never went off after the detach", r);
		ocaml_touch(sub, "ready.stop");
		code = ocaml_wait(pid);
		cr_assert_eq(code, 0, "run %d: the program ended with %d", r, code);
		snprintf(alloc, sizeof(alloc), "%s/alloc.folded", views);
		for (int k = 0; k < DOMAINS; k++) {
			c[k] = site_samples(alloc, k);
			w[k] = site_words(out, k);
			cr_assert_gt(w[k], 0, "run %d: no words at site %d", r, k);
			n += c[k];
			total_w += w[k];
		}
		cr_assert_gt(n, 500, "run %d: too few samples: %.0f", r, n);
		for (int k = 0; k < DOMAINS; k++) {
			double p = w[k] / total_w, sd = (c[k] - n * p) / sqrt(n * p * (1 - p));

			if (fabs(sd) > fabs(worst))
				worst = sd;
			cr_expect(
			    within_binomial(c[k], n, p),
			    "run %d: domain %d has %.0f of %.0f samples, expected %.1f (%.2f sd)",
			    r, k, c[k], n, n * p, sd);
		}
	}
	fprintf(stderr,
		"ocaml5_domains: %d attach and detach runs, no crash; largest share deviation %.2f "
		"sd\n",
		runs, worst);
}
