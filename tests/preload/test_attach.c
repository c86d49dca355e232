/*
 * memprof-bpf attached for real to C programs under the preload: the
 * loader finds the probes and the control block in libmemprof-preload.so,
 * turns sampling on, and its views follow the program's sites: alloc bytes
 * within a 5.7-sigma binomial bound per site, lifetimes by site.  Also
 * attaching to the child of a preloaded process.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/types.h>
#include "memprof_maps.h"

#include "harness.h"

#define LOADER PRELOAD_BUILD_DIR "/memprof-bpf"
#define RATE_ARG "0.001"
/* Bytes one sample stands for at rate 0.001: 8 * round(65536 / 0.001) >> 16. */
#define BYTES_PER_SAMPLE 8000.0
#define ROUNDS "16384"
#define READY_TIMEOUT_S TEST_EVENT_TIMEOUT_S

enum { SHORT, LONG, MAJOR, MEDIUM, N_SITES };
static const char *const site_names[N_SITES] = {"site_short_lived", "site_long_lived",
						"site_major_blocks", "site_medium_lived"};
static const char *const view_names[MEMPROF_N_VIEWS] = MEMPROF_VIEW_NAMES;

/* Bytes of a folded file by innermost site_ frame (the allocating site). */
static void folded_by_site(const char *path, double bytes[N_SITES])
{
	char *text = read_file(path);

	cr_assert_not_null(text, "no %s", path);
	for (int s = 0; s < N_SITES; s++)
		bytes[s] = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char *space = strrchr(line, ' ');
		if (!space)
			continue;
		*space = 0;
		char *leaf = strrchr(line, ';');
		leaf = leaf ? leaf + 1 : line;
		for (int s = 0; s < N_SITES; s++)
			if (!strcmp(leaf, site_names[s]))
				bytes[s] += atof(space + 1);
	}
	free(text);
}

/* The program's own count of words by site ("site NAME words W live_words L"). */
static void program_words(const char *path, double words[N_SITES], double live[N_SITES])
{
	char *text = read_file(path);

	cr_assert_not_null(text);
	for (int s = 0; s < N_SITES; s++) {
		char key[96];
		const char *line;

		snprintf(key, sizeof(key), "site %s words", site_names[s]);
		cr_assert_eq(text_value(text, key, &words[s]), 0, "no %s in %s", key, path);
		line = strstr(text, key);
		cr_assert_eq(text_value(line, "live_words", &live[s]), 0, "no live_words for %s",
			     site_names[s]);
	}
	free(text);
}

enum mode { PLAIN, FORK_FIRST, FORK_TRACED };

static void attach_and_check(enum mode mode)
{
	char dir[] = "/tmp/preload-attach-XXXXXX";
	char ready[64], out[64], err[64], lerr[64], views[64], path[96];
	double words[N_SITES], live[N_SITES], view[MEMPROF_N_VIEWS][N_SITES];
	struct stat st;

	cr_assert(stat(LOADER, &st) == 0, "%s is not built", LOADER);
	cr_assert_not_null(mkdtemp(dir));
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(err, sizeof(err), "%s/err", dir);
	snprintf(lerr, sizeof(lerr), "%s/loader.err", dir);
	snprintf(views, sizeof(views), "%s/views", dir);
	const char *argv[] = {preload_prog("sites"), ready, ROUNDS,
			      mode == FORK_FIRST    ? "--fork"
			      : mode == FORK_TRACED ? "--fork-traced"
						    : NULL,
			      NULL};
	pid_t prog = spawn_program(argv, NULL, 1, out, err);
	cr_assert_eq(wait_nonempty_file(ready, READY_TIMEOUT_S), 0, "the program never started");
	char *pid = read_file(ready);
	cr_assert_not_null(pid);
	pid[strcspn(pid, "\n")] = 0;
	if (mode == FORK_FIRST)
		cr_assert_neq(atoi(pid), prog, "the pid to attach to is the child's");

	/* The loader runs until the program exits. */
	const char *largs[] = {LOADER,	 "attach",	pid,   "-v", "--rate",
			       RATE_ARG, "--all-views", views, NULL};
	pid_t loader = spawn_program(largs, NULL, 0, "/dev/null", lerr);
	int lstatus = wait_program(loader);
	int pstatus = wait_program(prog);
	char *loader_log = read_file(lerr);
	cr_assert(WIFEXITED(pstatus) && WEXITSTATUS(pstatus) == 0, "program status %#x", pstatus);
	cr_assert(WIFEXITED(lstatus) && WEXITSTATUS(lstatus) == 0, "loader status %#x: %s", lstatus,
		  loader_log ? loader_log : "");
	cr_expect_not_null(strstr(loader_log, "orphan_ids 0 "), "%s", loader_log);
	cr_expect_not_null(strstr(loader_log, "duplicate_ids 0 "), "%s", loader_log);
	cr_expect_not_null(strstr(loader_log, "dropped 0 "), "%s", loader_log);
	/* The program exits attached: every sampled block died (a dealloc
	 * event) or is live in the map, and the counts of batches add up. */
	const char *stats = strstr(loader_log, "stats:");
	double samples, deallocs, live_blocks, late_events;
	cr_assert(stats && text_value(stats, "samples", &samples) == 0 &&
		      text_value(stats, "deallocs", &deallocs) == 0 &&
		      text_value(stats, "live_blocks", &live_blocks) == 0 &&
		      text_value(stats, "late_events", &late_events) == 0,
		  "no stats line: %s", loader_log);
	cr_expect_eq(late_events, 0);
	cr_expect_gt(samples, 0);
	cr_expect_eq(samples, deallocs + live_blocks, "%s", stats);
	free(loader_log);
	free(pid);

	program_words(out, words, live);
	if (mode == FORK_TRACED) {
		/* The tracer's sampling did not carry over into the child. */
		char *text = read_file(out);
		cr_assert_not_null(strstr(text, "child_flags=0\n"), "%s", text);
		cr_assert_not_null(strstr(text, "child_rate=0\n"), "%s", text);
		free(text);
	}
	for (int v = 0; v < MEMPROF_N_VIEWS; v++) {
		snprintf(path, sizeof(path), "%s/%s.folded", views, view_names[v]);
		folded_by_site(path, view[v]);
	}

	/* Alloc: given the total, each site's samples are Binomial(n, p_site). */
	double total_words = 0, total_n = 0;
	for (int s = 0; s < N_SITES; s++) {
		total_words += words[s];
		total_n += view[MEMPROF_VIEW_ALLOC][s] / BYTES_PER_SAMPLE;
	}
	cr_assert_gt(total_n, 1000, "too few samples: %.0f", total_n);
	for (int s = 0; s < N_SITES; s++) {
		double p = words[s] / total_words;
		double n = view[MEMPROF_VIEW_ALLOC][s] / BYTES_PER_SAMPLE;
		cr_expect(within_binomial(n, total_n, p), "%s: %.0f samples, expected %.1f +- %.1f",
			  site_names[s], n, total_n * p, binomial_bound(total_n, p));
	}
	/* Lifetimes. Short-lived blocks die before any other allocation: young. */
	cr_expect_eq(view[MEMPROF_VIEW_SHORT][SHORT], view[MEMPROF_VIEW_ALLOC][SHORT]);
	cr_expect_eq(view[MEMPROF_VIEW_LIVE][SHORT], 0);
	cr_expect_eq(view[MEMPROF_VIEW_PROMOTED][SHORT], 0);
	/* Long-lived blocks are all still alive at exit. */
	cr_expect_eq(view[MEMPROF_VIEW_LIVE][LONG], view[MEMPROF_VIEW_ALLOC][LONG]);
	cr_expect_eq(view[MEMPROF_VIEW_SHORT][LONG], 0);
	/* Born major: never promoted, never short. */
	cr_expect_eq(view[MEMPROF_VIEW_PROMOTED][MAJOR], 0);
	cr_expect_eq(view[MEMPROF_VIEW_SHORT][MAJOR], 0);
	cr_expect_eq(view[MEMPROF_VIEW_LIVE][MAJOR], 0);
	/* The medium ring outlives its epoch: promoted, none die young. */
	cr_expect_gt(view[MEMPROF_VIEW_PROMOTED][MEDIUM], view[MEMPROF_VIEW_ALLOC][MEDIUM] / 2);
	cr_expect_eq(view[MEMPROF_VIEW_SHORT][MEDIUM], 0);
	/* Its blocks still in the ring at exit are live: given the site's
	 * samples, each is in one of them with probability live / words. */
	cr_assert_gt(live[MEDIUM], 0);
	double medium_n = view[MEMPROF_VIEW_ALLOC][MEDIUM] / BYTES_PER_SAMPLE;
	double medium_p = live[MEDIUM] / words[MEDIUM];
	double medium_live = view[MEMPROF_VIEW_LIVE][MEDIUM] / BYTES_PER_SAMPLE;
	cr_expect(within_binomial(medium_live, medium_n, medium_p),
		  "medium: %.0f live samples of %.0f, expected %.1f +- %.1f", medium_live, medium_n,
		  medium_n * medium_p, binomial_bound(medium_n, medium_p));

	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}

Test(attach, loader_views_follow_the_sites)
{
	attach_and_check(PLAIN);
}

Test(attach, attach_to_the_child_of_a_preloaded_process)
{
	attach_and_check(FORK_FIRST);
}

Test(attach, a_traced_process_forks_an_untraced_child)
{
	attach_and_check(FORK_TRACED);
}

/*
 * A traced process forks while three threads free sampled blocks: a death
 * takes the core's mutex without the core gate, so fork must take that
 * mutex itself.  Every child frees blocks it inherited and allocates past
 * its first slow path (the tracer is gone there: the core takes its
 * mutex); one left held would hang it, and its watchdog fails it.
 */
Test(attach, a_traced_process_forks_while_its_threads_free_sampled_blocks)
{
	char dir[] = "/tmp/preload-fork-busy-XXXXXX";
	char ready[64], out[64], err[64], lerr[64], folded[64];

	cr_assert_not_null(mkdtemp(dir));
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(err, sizeof(err), "%s/err", dir);
	snprintf(lerr, sizeof(lerr), "%s/loader.err", dir);
	snprintf(folded, sizeof(folded), "%s/alloc.folded", dir);
	const char *argv[] = {preload_prog("fork_busy"), ready, NULL};
	pid_t prog = spawn_program(argv, NULL, 1, out, err);
	cr_assert_eq(wait_nonempty_file(ready, READY_TIMEOUT_S), 0, "the program never started");
	char *pid = read_file(ready);
	cr_assert_not_null(pid);
	pid[strcspn(pid, "\n")] = 0;
	/* A high rate: many sampled blocks die while the forks happen. */
	const char *largs[] = {LOADER, "attach", pid, "-v", "--rate", "0.05", "-o", folded, NULL};
	pid_t loader = spawn_program(largs, NULL, 0, "/dev/null", lerr);
	int lstatus = wait_program(loader);
	int pstatus = wait_program(prog);
	char *text = read_file(out), *loader_log = read_file(lerr);
	cr_assert(WIFEXITED(pstatus) && WEXITSTATUS(pstatus) == 0, "program status %#x", pstatus);
	cr_assert(WIFEXITED(lstatus) && WEXITSTATUS(lstatus) == 0, "loader status %#x: %s", lstatus,
		  loader_log ? loader_log : "");
	double forks, failures, allocs;
	cr_assert(text && text_value(text, "forks", &forks) == 0 &&
		      text_value(text, "failures", &failures) == 0 &&
		      text_value(text, "worker_allocs", &allocs) == 0,
		  "%s", text ? text : "");
	cr_expect_gt(forks, 0);
	cr_expect_eq(failures, 0, "%.0f of %.0f children hung or failed", failures, forks);
	cr_expect_gt(allocs, 0);
	cr_expect_not_null(strstr(loader_log, "orphan_ids 0 "), "%s", loader_log);
	free(text);
	free(loader_log);
	free(pid);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}
