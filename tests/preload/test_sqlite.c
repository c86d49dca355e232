/*
 * A real Debian program under the preload with memprof-bpf attached:
 * sqlite3 (malloc, realloc, free and malloc_usable_size through libsqlite3)
 * runs a generated workload.  It prints exactly what it prints unprofiled,
 * the tracer's ids are consistent, and the bytes the tracer estimates for
 * the top allocation sites are within 10% of heaptrack's exact totals.
 *
 * The workload's first command waits (a .shell loop) until the test has
 * seen the tracer attach, so the whole workload runs traced.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "sites_compare.h"

#define SQLITE "/usr/bin/sqlite3"
#define HEAPTRACK "/usr/bin/heaptrack"
#define LOADER PRELOAD_BUILD_DIR "/memprof-bpf"
#define WORKLOAD "tests/preload/data/sqlite-workload.sql"
#define WAIT_S TEST_EVENT_TIMEOUT_S
/* Sites holding at least this share of the bytes are compared... */
#define TOP_SITE_SHARE 0.03
/* ...and must be within this relative error (about 6 sigma at RATE). */
#define TOP_SITE_TOLERANCE 0.10
#define RATE "0.01"

struct workdir {
	char dir[32];
	char path[8][96];
};
enum { P_PLAIN, P_TRACED, P_READY, P_GO, P_OUT, P_ERR, P_LOADER_ERR, P_FOLDED };

static void workdir_make(struct workdir *w)
{
	static const char *const names[8] = {"plain.sql", "traced.sql", "ready",       "go", "out",
					     "err",	  "loader.err", "alloc.folded"};

	strcpy(w->dir, "/tmp/preload-sqlite-XXXXXX");
	cr_assert_not_null(mkdtemp(w->dir));
	for (int i = 0; i < 8; i++)
		snprintf(w->path[i], sizeof(w->path[i]), "%s/%s", w->dir, names[i]);
}

static void workdir_remove(struct workdir *w)
{
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", w->dir);
	cr_expect_eq(system(cmd), 0);
}

/* The workload, with the handshake in front when traced: READY, wait GO. */
static void write_script(const struct workdir *w, int which)
{
	FILE *out = fopen(w->path[which], "w");
	char *body = read_file(WORKLOAD);

	cr_assert(out && body, "cannot write %s or read %s", w->path[which], WORKLOAD);
	if (which == P_TRACED)
		fprintf(out, ".shell echo ready > %s; while [ ! -e %s ]; do sleep 0.01; done\n",
			w->path[P_READY], w->path[P_GO]);
	fputs(body, out);
	fclose(out);
	free(body);
}

static int wait_text(const char *path, const char *needle)
{
	const struct timespec pause = {0, 10000000};

	for (int i = 0; i < WAIT_S * 100; i++) {
		char *text = read_file(path);
		int found = text && strstr(text, needle);
		free(text);
		if (found)
			return 0;
		nanosleep(&pause, NULL);
	}
	return -1;
}

static void require(const char *path)
{
	struct stat st;

	cr_assert(stat(path, &st) == 0, "%s is missing (make deps, make)", path);
}

/* sqlite3 under the preload, memprof-bpf attached at RATE for all of it. */
static void traced_run(struct workdir *w)
{
	char pid[16];

	require(SQLITE);
	require(LOADER);
	write_script(w, P_TRACED);
	const char *argv[] = {SQLITE, "-init", w->path[P_TRACED], ":memory:", ".quit", NULL};
	pid_t db = spawn_program(argv, NULL, 1, w->path[P_OUT], w->path[P_ERR]);
	cr_assert_eq(wait_nonempty_file(w->path[P_READY], WAIT_S), 0,
		     "sqlite3 never reached its handshake");
	snprintf(pid, sizeof(pid), "%d", (int)db);
	const char *largs[] = {LOADER, "attach",	  pid,	"--rate", RATE,
			       "-o",   w->path[P_FOLDED], "-v", NULL};
	pid_t loader = spawn_program(largs, NULL, 0, "/dev/null", w->path[P_LOADER_ERR]);
	cr_assert_eq(wait_text(w->path[P_LOADER_ERR], "memprof-bpf: attached to"), 0,
		     "the loader never attached");
	FILE *go = fopen(w->path[P_GO], "w");
	cr_assert_not_null(go);
	fclose(go);
	int dstatus = wait_program(db);
	int lstatus = wait_program(loader);
	cr_assert(WIFEXITED(dstatus) && WEXITSTATUS(dstatus) == 0, "sqlite3 status %#x", dstatus);
	cr_assert(WIFEXITED(lstatus) && WEXITSTATUS(lstatus) == 0, "loader status %#x", lstatus);
	char *log = read_file(w->path[P_LOADER_ERR]);
	cr_expect_not_null(strstr(log, "orphan_ids 0 "), "%s", log);
	cr_expect_not_null(strstr(log, "duplicate_ids 0 "), "%s", log);
	free(log);
}

Test(sqlite, traced_sqlite3_output_unchanged_and_sampled)
{
	struct workdir w;
	struct run_result ref;

	workdir_make(&w);
	write_script(&w, P_PLAIN);
	const char *argv[] = {SQLITE, "-init", w.path[P_PLAIN], ":memory:", ".quit", NULL};
	run_program(argv, NULL, 0, &ref);
	cr_assert(run_ok(&ref));
	traced_run(&w);

	char *traced_out = read_file(w.path[P_OUT]);
	cr_expect_str_eq(traced_out, ref.out);
	free(traced_out);
	char *stacks = read_file(w.path[P_FOLDED]);
	cr_assert_not_null(stacks);
	cr_expect_not_null(strstr(stacks, "libsqlite3"), "no libsqlite3 frame in:\n%.2000s",
			   stacks);
	free(stacks);
	run_result_free(&ref);
	workdir_remove(&w);
}

Test(sqlite, top_sites_within_ten_percent_of_heaptrack)
{
	struct workdir w;
	struct site_totals sites = {0};
	char ht[96], ht_file[112];
	struct stat st;

	require(HEAPTRACK);
	workdir_make(&w);
	write_script(&w, P_PLAIN);
	snprintf(ht, sizeof(ht), "%s/heaptrack", w.dir);
	const char *hargv[] = {HEAPTRACK,	"-o",	    ht,	     SQLITE, "-init",
			       w.path[P_PLAIN], ":memory:", ".quit", NULL};
	struct run_result r;
	run_program(hargv, NULL, 0, &r);
	cr_assert(run_ok(&r), "heaptrack failed: %s", r.err);
	run_result_free(&r);
	snprintf(ht_file, sizeof(ht_file), "%s.zst", ht);
	if (stat(ht_file, &st) != 0)
		snprintf(ht_file, sizeof(ht_file), "%s.gz", ht);
	cr_assert_eq(sites_add_heaptrack(&sites, ht_file), 0, "cannot read %s", ht_file);

	traced_run(&w);
	cr_assert_eq(sites_add_folded(&sites, w.path[P_FOLDED]), 0);

	double total = sites_total_exact(&sites);
	int compared = 0;
	cr_assert_gt(total, 0);
	for (int i = 0; i < sites.n; i++) {
		if (sites.exact[i] < TOP_SITE_SHARE * total)
			continue;
		compared++;
		double ratio = sites.estimate[i] / sites.exact[i];
		cr_log_info("%s: exact %.0f bytes (%.1f%%), estimated %.0f (ratio %.3f)",
			    sites.name[i], sites.exact[i], 100 * sites.exact[i] / total,
			    sites.estimate[i], ratio);
		cr_expect(fabs(ratio - 1) <= TOP_SITE_TOLERANCE,
			  "%s: estimated %.0f bytes, heaptrack counted %.0f", sites.name[i],
			  sites.estimate[i], sites.exact[i]);
	}
	cr_expect_geq(compared, 2, "only %d top sites", compared);
	workdir_remove(&w);
}
