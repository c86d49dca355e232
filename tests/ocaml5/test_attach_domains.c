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
#include <sys/stat.h>
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
#define N_SITES 5
#define MAX_SNAPSHOTS 4096

struct seen {
	char *names[MAX_SNAPSHOTS]; /* snapshot files already summed */
	int n;
	double bytes[N_SITES];
};

/* Spawner.site_0 .. site_3 (the four domains), then Spawner.churn. */
static const char *const spawner_sites[N_SITES] = {
    "Spawner.site_0", "Spawner.site_1", "Spawner.site_2", "Spawner.site_3", "Spawner.churn",
};

/* Sum the snapshots of dir not summed yet into s->bytes, one per name of
 * sites[0..n_sites) (n_sites <= N_SITES); whether every site has samples. */
static int snapshots_hold(const char *dir, struct seen *s, const char *const *sites, int n_sites)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int all = 1;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		char path[1024];
		int known = 0;

		if (len < 8 || strcmp(e->d_name + len - 7, ".folded"))
			continue;
		for (int i = 0; i < s->n && !known; i++)
			known = !strcmp(s->names[i], e->d_name);
		if (known || s->n == MAX_SNAPSHOTS)
			continue;
		s->names[s->n++] = strdup(e->d_name);
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		for (int k = 0; k < n_sites; k++)
			s->bytes[k] += folded_frame_sum(path, sites[k]);
	}
	closedir(d);
	for (int k = 0; k < n_sites; k++)
		all &= s->bytes[k] > 0;
	return all;
}

/* Wait until the snapshots in dir hold every one of sites; whether they did. */
static int wait_snapshots_hold(const char *dir, struct seen *s, const char *const *sites,
			       int n_sites)
{
	struct timespec t0, now, pause = {0, 20 * 1000 * 1000};
	int all;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		all = snapshots_hold(dir, s, sites, n_sites);
		if (!all)
			nanosleep(&pause, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (!all && (double)(now.tv_sec - t0.tv_sec) < TEST_EVENT_TIMEOUT_S);
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
		char dir[256], out[512], ready[512], views[512], snaps[512], path[600];
		struct seen s = {0};
		int code;

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
		wait_snapshots_hold(snaps, &s, spawner_sites, N_SITES);
		ocaml_touch(dir, "ready.stop");
		code = ocaml_wait(pid);
		cr_assert_eq(code, 0, "run %d: the program ended with %d (in %s)", r, code, dir);
		cr_assert_eq(ocaml_wait(loader), 0, "run %d: the loader failed", r);
		for (int k = 0; k < N_SITES; k++) {
			cr_assert_gt(s.bytes[k], 0, "run %d: %s not sampled within %.0f s (in %s)",
				     r, spawner_sites[k], TEST_EVENT_TIMEOUT_S, dir);
		}
		cr_expect_gt(out_value(out, "pairs"), 0, "run %d: no pair of domains ran", r);
		/* The whole session's profile holds them too. */
		snprintf(path, sizeof(path), "%s/alloc.folded", views);
		for (int k = 0; k < N_SITES; k++) {
			cr_expect_gt(folded_frame_sum(path, spawner_sites[k]), 0,
				     "run %d: %s not in the profile", r, spawner_sites[k]);
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

/* Whether some thread of pid is blocked opening a fifo (its kernel wait
 * channel). */
static int in_fifo_open(pid_t pid)
{
	char path[300], line[128];
	struct dirent *e;
	int blocked = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return 0;
	while (!blocked && (e = readdir(d))) {
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/wchan", (int)pid, e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		blocked = fgets(line, sizeof(line), f) && strstr(line, "wait_for_partner");
		fclose(f);
	}
	closedir(d);
	return blocked;
}

/*
 * A domain blocked through the whole detach
 * (tests/ocaml5/progs/blocked_domain.ml): the main domain and domain W
 * sample; then a domain blocks opening a fifo (mode "open": the main
 * domain; "join": a domain the main domain spawned, which shares its
 * profile, while the main domain waits in Domain.join), and the loader
 * detaches.  W stops its profile at once; the blocked one stays counted
 * (the control block says sampling) for as long as it is blocked, here
 * past the helper's requests of the detach (HOLD_S: the hold is what
 * makes the case, the test waits for no event with it).  Once woken, the
 * domain acts on the detach (safepoint5.c): sampling goes off, and the
 * program can start a Gc.Memprof profile of its own in that domain.  With
 * the hook put back once the requests ran out, sampling never went off.
 */
#define HOLD_S 3
static void blocked_through_the_detach(const char *mode)
{
	static const char *const sites[] = {"Blocked_domain.in_main", "Blocked_domain.in_w"};
	char dir[256], out[512], ready[512], snaps[512], fifo[600], *text;
	struct memprof_probe_control c;
	struct seen s = {0};
	struct timespec hold = {HOLD_S, 0}, pause = {0, 10 * 1000 * 1000};
	int code, tries = 0;

	ocaml_tmpdir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	snprintf(snaps, sizeof(snaps), "%s/snaps", dir);
	snprintf(fifo, sizeof(fifo), "%s.fifo", ready);
	cr_assert_eq(mkfifo(fifo, 0600), 0, "mkfifo %s", fifo);
	const char *argv[] = {OCAML_PROG("blocked_domain"), ready, mode, NULL};
	const char *args[] = {"--rate", "1e-4", "--every", "0.2", "--snapshot-dir", snaps, NULL};
	pid_t pid = ocaml_start(dir, out, argv);
	pid_t loader = ocaml_loader_start(pid, args, dir, &code);

	cr_assert_neq(loader, 0, "the loader exited with %d", code);
	cr_assert(wait_snapshots_hold(snaps, &s, sites, 2), "both domains never sampled (in %s)",
		  dir);
	seen_free(&s);
	ocaml_touch(dir, "ready.block");
	while (!in_fifo_open(pid) && tries++ < TEST_EVENT_TIMEOUT_S * 100)
		nanosleep(&pause, NULL);
	cr_assert(in_fifo_open(pid), "no domain ever blocked on the fifo");
	kill(loader, SIGINT);
	cr_assert_eq(ocaml_wait(loader), 0, "the loader failed");
	nanosleep(&hold, NULL);
	cr_assert_eq(target_control(pid, &c), 0);
	cr_assert(control_sampling_on(&c),
		  "sampling went off with a domain blocked: the case was not made");
	FILE *f = fopen(fifo, "w");
	cr_assert_not_null(f, "cannot open %s", fifo);
	fputs("woken\n", f);
	fclose(f);
	cr_assert_eq(wait_target_control(pid, control_sampling_off), 0,
		     "sampling never went off once the blocked domain woke");
	ocaml_touch(dir, "ready.stop");
	code = ocaml_wait(pid);
	cr_assert_eq(code, 0, "the program ended with %d", code);
	text = read_file(out);
	cr_assert_not_null(text);
	cr_expect(strstr(text, "own profile started"), "the program's own profile: %s", text);
	free(text);
	cr_expect_gt(out_value(out, "main words"), 0, "the program's output is not whole");
	cr_expect_gt(out_value(out, "w words"), 0, "the program's output is not whole");
}

Test(ocaml5_attach_domains, a_domain_blocked_in_a_system_call_through_the_detach, .timeout = 300)
{
	blocked_through_the_detach("open");
}

Test(ocaml5_attach_domains, a_domain_blocked_in_a_join_through_the_detach, .timeout = 300)
{
	blocked_through_the_detach("join");
}
