/*
 * OCaml 5.3 domains in a program never linked with memprof_probe
 * (tests/ocaml5/progs/spawner.ml), attached while four domains allocate
 * and the main domain spawns and joins pairs of domains: the injected
 * OCaml host (runtime-probes/hosts/ocaml-attach) starts Gc.Memprof in
 * every domain that runs, a domain spawned while its parent samples
 * shares the parent's profile, and the program finishes with its own
 * output.  Each run ends on events, not after a fixed time: the loader
 * writes a snapshot every 0.2 s (--every), and once the snapshots hold
 * samples of each of the four domains and of a spawned one the test tells
 * the program to stop; the loader ends when it exits.  20 runs, as many as
 * the injected host's first-start bug took to show (about one attach in
 * eleven crashed the target: ocaml_attach.c, control_start).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <linux/types.h>

#include "attach_util.h"
#include "memprof_probe_abi.h"
#include "ocaml_util.h"
#include "testlib.h"

#define SPAWNER OCAML_PROG("spawner")
#define RUNS 20
/* Spawner.site_0 .. site_3 (the four domains), then Spawner.churn. */
#define N_SITES 5
#define MAX_SNAPSHOTS 4096

struct seen {
	char *names[MAX_SNAPSHOTS]; /* snapshot files already summed */
	int n;
	double bytes[N_SITES];
};

static void site_name(int k, char *out, size_t len)
{
	if (k < 4)
		snprintf(out, len, "Spawner.site_%d", k);
	else
		snprintf(out, len, "Spawner.churn");
}

/* Sum the snapshots of dir not summed yet; whether every site has samples. */
static int snapshots_hold_every_site(const char *dir, struct seen *s)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int all = 1;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		char path[1024], site[64];
		int known = 0;

		if (len < 8 || strcmp(e->d_name + len - 7, ".folded"))
			continue;
		for (int i = 0; i < s->n && !known; i++)
			known = !strcmp(s->names[i], e->d_name);
		if (known || s->n == MAX_SNAPSHOTS)
			continue;
		s->names[s->n++] = strdup(e->d_name);
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		for (int k = 0; k < N_SITES; k++) {
			site_name(k, site, sizeof(site));
			s->bytes[k] += folded_frame_sum(path, site);
		}
	}
	closedir(d);
	for (int k = 0; k < N_SITES; k++)
		all &= s->bytes[k] > 0;
	return all;
}

static void seen_free(struct seen *s)
{
	for (int i = 0; i < s->n; i++)
		free(s->names[i]);
}

Test(ocaml5_attach_domains, four_domains_and_domains_spawned_while_attached, .timeout = 900)
{
	for (int r = 0; r < RUNS; r++) {
		char dir[256], out[512], ready[512], views[512], snaps[512], path[600], site[64];
		struct seen s = {0};
		struct timespec t0, now, pause = {0, 20 * 1000 * 1000};
		int code, all = 0;

		ocaml_tmpdir(dir, sizeof(dir));
		snprintf(out, sizeof(out), "%s/out", dir);
		snprintf(ready, sizeof(ready), "%s/ready", dir);
		snprintf(views, sizeof(views), "%s/views", dir);
		snprintf(snaps, sizeof(snaps), "%s/snaps", dir);
		const char *argv[] = {SPAWNER, ready, NULL};
		const char *args[] = {"--rate", "1e-4",		  "--all-views", views, "--every",
				      "0.2",	"--snapshot-dir", snaps,	 NULL};
		pid_t pid = ocaml_start(dir, out, argv);
		pid_t loader = ocaml_loader_start(pid, args, dir, &code);

		cr_assert_neq(loader, 0, "run %d: the loader exited with %d", r, code);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			all = snapshots_hold_every_site(snaps, &s);
			if (!all)
				nanosleep(&pause, NULL);
			clock_gettime(CLOCK_MONOTONIC, &now);
		} while (!all && (double)(now.tv_sec - t0.tv_sec) < TEST_EVENT_TIMEOUT_S);
		ocaml_touch(dir, "ready.stop");
		code = ocaml_wait(pid);
		cr_assert_eq(code, 0, "run %d: the program ended with %d (in %s)", r, code, dir);
		cr_assert_eq(ocaml_wait(loader), 0, "run %d: the loader failed", r);
		for (int k = 0; k < N_SITES; k++) {
			site_name(k, site, sizeof(site));
			cr_assert_gt(s.bytes[k], 0, "run %d: %s not sampled within %.0f s (in %s)",
				     r, site, TEST_EVENT_TIMEOUT_S, dir);
		}
		cr_expect_gt(out_value(out, "pairs"), 0, "run %d: no pair of domains ran", r);
		/* The whole session's profile holds them too. */
		snprintf(path, sizeof(path), "%s/alloc.folded", views);
		for (int k = 0; k < N_SITES; k++) {
			site_name(k, site, sizeof(site));
			cr_expect_gt(folded_frame_sum(path, site), 0,
				     "run %d: %s not in the profile", r, site);
		}
		seen_free(&s);
	}
	fprintf(stderr, "ocaml5_attach_domains: %d runs, no crash, every domain sampled\n", RUNS);
}

/*
 * A domain that exits while its profile samples: domain A starts sampling
 * at the attach, spawns C (which shares A's profile, 5.3's semantics) and
 * exits; the profile stays counted (C may sample on through it).  At the
 * detach the orphaned profile is stopped (ocaml_attach.c, orphans_release):
 * sampling goes off in the control block, the counter stands still, and
 * C runs on to its own output.  Without the hand-over the exited domain's
 * profile stayed counted and the control block went on saying sampling.
 */
Test(ocaml5_attach_domains, a_domain_exiting_while_its_profile_samples, .timeout = 300)
{
	char dir[256], out[512], ready[512], path[600];
	struct memprof_probe_control a, b;
	struct timespec settle = {0, 300 * 1000 * 1000};
	int code;

	ocaml_tmpdir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	snprintf(path, sizeof(path), "%s/alloc.folded", dir);
	const char *argv[] = {OCAML_PROG("orphan"), ready, NULL};
	const char *args[] = {"--rate", "1e-4", "-o", path, NULL};
	pid_t pid = ocaml_start(dir, out, argv);
	pid_t loader = ocaml_loader_start(pid, args, dir, &code);

	cr_assert_neq(loader, 0, "the loader exited with %d", code);
	cr_assert_eq(wait_target_control(pid, control_sampled_once), 0, "domain A never sampled");
	ocaml_touch(dir, "ready.spawn");
	snprintf(path, sizeof(path), "%s.a_done", ready);
	cr_assert_eq(wait_file(path, TEST_EVENT_TIMEOUT_S), 0, "%s never came", path);
	kill(loader, SIGINT);
	cr_assert_eq(ocaml_wait(loader), 0, "the loader failed");
	cr_assert_eq(wait_target_control(pid, control_sampling_off), 0,
		     "sampling never went off after the detach");
	cr_assert_eq(target_control(pid, &a), 0);
	nanosleep(&settle, NULL);
	cr_assert_eq(target_control(pid, &b), 0);
	cr_expect_eq(a.samples, b.samples, "samples went on after the detach: %llu then %llu",
		     (unsigned long long)a.samples, (unsigned long long)b.samples);
	ocaml_touch(dir, "ready.stop");
	code = ocaml_wait(pid);
	cr_assert_eq(code, 0, "the program ended with %d", code);
	cr_expect_gt(out_value(out, "c words"), 0, "the program's output is not whole");
}
