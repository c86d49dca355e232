/*
 * memprof-bpf attached to tests/preload/progs/stacks: many and deep call
 * stacks end to end (host capture, probe, BPF maps, loader), weights in
 * exact requested bytes for any block size, and the per-process seed.
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
#include "memprof_probe_abi.h"

#include "harness.h"

#define LOADER PRELOAD_BUILD_DIR "/memprof-bpf"
#define READY_TIMEOUT_S TEST_EVENT_TIMEOUT_S

struct traced {
	char dir[64];
	char folded[96];
	char *out;	  /* the program's stdout */
	char *loader_err; /* the loader's stderr */
};

/* Run `stacks MODE READY ARGS...` (pargs, at most 3, NULL-terminated) under
 * the preload with the loader attached (extra loader arguments in lx,
 * NULL-terminated) until it exits. */
static void run_traced_args(struct traced *t, const char *mode, const char *const pargs[],
			    const char *const lx[])
{
	char ready[96], out[96], err[96], lerr[96];
	const char *largs[16];
	struct stat st;
	int n = 0;

	cr_assert(stat(LOADER, &st) == 0, "%s is not built", LOADER);
	snprintf(t->dir, sizeof(t->dir), "/tmp/preload-stacks-XXXXXX");
	cr_assert_not_null(mkdtemp(t->dir));
	snprintf(ready, sizeof(ready), "%s/ready", t->dir);
	snprintf(out, sizeof(out), "%s/out", t->dir);
	snprintf(err, sizeof(err), "%s/err", t->dir);
	snprintf(lerr, sizeof(lerr), "%s/loader.err", t->dir);
	snprintf(t->folded, sizeof(t->folded), "%s/alloc.folded", t->dir);
	const char *argv[8] = {preload_prog("stacks"), mode, ready};

	for (int i = 0; pargs[i] && i < 3; i++)
		argv[3 + i] = pargs[i];
	pid_t prog = spawn_program(argv, NULL, 1, out, err);
	cr_assert_eq(wait_nonempty_file(ready, READY_TIMEOUT_S), 0, "the program never started");
	char *pid = read_file(ready);
	cr_assert_not_null(pid);
	pid[strcspn(pid, "\n")] = 0;
	largs[n++] = LOADER;
	largs[n++] = "attach";
	largs[n++] = pid;
	largs[n++] = "-v"; /* the stats line */
	largs[n++] = "-o";
	largs[n++] = t->folded;
	for (int i = 0; lx && lx[i] && n < 15; i++)
		largs[n++] = lx[i];
	largs[n] = NULL;
	pid_t loader = spawn_program(largs, NULL, 0, "/dev/null", lerr);
	int lstatus = wait_program(loader);
	int pstatus = wait_program(prog);
	t->loader_err = read_file(lerr);
	t->out = read_file(out);
	cr_assert(WIFEXITED(pstatus) && WEXITSTATUS(pstatus) == 0, "program status %#x", pstatus);
	cr_assert(WIFEXITED(lstatus) && WEXITSTATUS(lstatus) == 0, "loader status %#x: %s", lstatus,
		  t->loader_err ? t->loader_err : "");
	cr_assert_not_null(t->out);
	free(pid);
}

/* Run `stacks MODE READY [arg]`, as run_traced_args. */
static void run_traced(struct traced *t, const char *mode, const char *arg, const char *const lx[])
{
	const char *pargs[] = {arg, NULL};

	run_traced_args(t, mode, pargs, lx);
}

static void traced_free(struct traced *t)
{
	char cmd[128];

	free(t->out);
	free(t->loader_err);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->dir);
	cr_expect_eq(system(cmd), 0);
}

/* The number after `key` in the loader's log, -1 if absent. */
static long long log_number(const char *log, const char *key)
{
	const char *p = log ? strstr(log, key) : NULL;

	return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

/* Bytes of the folded file, and those on stacks with a frame named fn. */
static void bytes_reaching(const char *path, const char *fn, double *total, double *reaching)
{
	char *text = read_file(path);

	cr_assert_not_null(text, "no %s", path);
	*total = *reaching = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char *space = strrchr(line, ' ');
		if (!space)
			continue;
		*space = 0;
		double b = atof(space + 1);
		*total += b;
		for (char *f = strtok_r(line, ";", &line); f; f = strtok_r(NULL, ";", &line))
			if (!strcmp(f, fn)) {
				*reaching += b;
				break;
			}
	}
	free(text);
}

static void many_stacks(const char *const lx[], int expect_inner)
{
	struct traced t;
	double total, reaching;

	run_traced(&t, "many", "2", lx);
	cr_assert_not_null(strstr(t.out, "paths=65536"), "%s", t.out);
	bytes_reaching(t.folded, "leaf_alloc", &total, &reaching);
	cr_assert_gt(total, 0);
	cr_expect_geq(reaching / total, 0.95,
		      "%.1f%% of the sampled bytes reach the allocating function: %s",
		      100 * reaching / total, t.loader_err);
	long long inner = log_number(t.loader_err, "inner_stacks ");
	if (expect_inner)
		cr_expect_gt(inner, 0, "the inner table took samples: %s", t.loader_err);
	traced_free(&t);
}

Test(stacks, sixty_five_thousand_stacks_keep_their_allocating_function, .timeout = 300)
{
	/* 65,536 program stacks (plus its others) against a table of 65,535. */
	const char *const lx[] = {"--rate", "1e-2", "--no-dwarf", NULL};

	many_stacks(lx, 0);
}

/* The MiB of map name in the stop's -v line ("maps hold N MiB of kernel
 * memory (..., name F MiB, ..."), or -1. */
static double stop_map_mib(const char *log, const char *name)
{
	char key[64];
	const char *at = log ? strstr(log, "maps hold ") : NULL;

	snprintf(key, sizeof(key), " %s ", name);
	at = at ? strstr(at, key) : NULL;
	return at ? strtod(at + strlen(key), NULL) : -1;
}

/*
 * The stack table, its aggregates and the frame arena grow as they are
 * used (bpf/memprof_maps.h, userspace/trace/chunk_arena.c): 40,000 stacks
 * of about 20 frames are more than the chunks created at the start hold
 * (4 chunks of 2,048 stack ids; 8 of 32,640 frames), and, new ones coming
 * at a pace the loader's polls follow (about 20,000 a second, 1,000 then a
 * 50 ms pause), each keeps its whole stack: no sample goes to the inner
 * table.  The kernel memory at the stop stays well below each table's
 * whole size for the default table: frames about 8 MiB of 16.3, the
 * aggregates 5.0 MiB (26 chunks of 192 KiB) of 6.4 (34 chunks), the stack
 * entries 1.3 MiB of 1.6.  With the tables not grown past their first
 * chunks, the stacks past them went to the inner table; with them created
 * whole, the memory figures fail.
 */
Test(stacks, the_stack_tables_grow_with_the_stacks, .timeout = 300)
{
	const char *const pargs[] = {"1", "40000", "50", NULL};
	const char *const lx[] = {"--rate", "1e-2", "--no-dwarf", NULL};
	struct traced t;
	const char *maps;
	double total, reaching;

	run_traced_args(&t, "many", pargs, lx);
	cr_assert_not_null(strstr(t.out, "paths=40000"), "%s", t.out);
	bytes_reaching(t.folded, "leaf_alloc", &total, &reaching);
	cr_assert_gt(total, 0);
	cr_expect_eq(log_number(t.loader_err, "inner_stacks "), 0,
		     "%lld samples went to the inner table",
		     log_number(t.loader_err, "inner_stacks "));
	cr_expect_geq(reaching / total, 0.99, "%.1f%% of the sampled bytes reach leaf_alloc",
		      100 * reaching / total);
	maps = t.loader_err;
	cr_assert_geq(stop_map_mib(maps, "frames"), 0, "no frames in the stop's maps line");
	cr_expect_lt(stop_map_mib(maps, "frames"), 12.0, "the frame arena took %.1f MiB",
		     stop_map_mib(maps, "frames"));
	cr_assert_geq(stop_map_mib(maps, "agg_chunks"), 0, "no agg_chunks in the maps line");
	cr_expect_lt(stop_map_mib(maps, "agg_chunks"), 5.5, "the aggregates took %.1f MiB",
		     stop_map_mib(maps, "agg_chunks"));
	cr_expect_lt(stop_map_mib(maps, "stack_chunks"), 1.4, "the stack entries took %.1f MiB",
		     stop_map_mib(maps, "stack_chunks"));
	traced_free(&t);
}

/*
 * A burst of new stacks, faster than the loader's polls (100 ms apart):
 * 30,000 stacks in one pass, 1,000 then a 2 ms pause, more than the chunks
 * created at the start hold (4 chunks of 2,048 stack ids, 8 of 32,640
 * frames) and than those kept ahead (4 and 4) take in 100 ms.  The loader
 * grows the tables between its polls too (SESSION_GROW_MS, 10 ms), so each
 * keeps its whole stack.  With the tables grown only at the polls, 9,794
 * to 12,903 of the 30,000 sampled blocks went to the inner table.  (The
 * pauses leave the loader some CPU on a 2-core machine: without them, a
 * loader starved by other work fell behind in one run of ten.)
 */
Test(stacks, a_burst_of_new_stacks_keeps_them_whole, .timeout = 300)
{
	const char *const pargs[] = {"1", "30000", "2", NULL};
	const char *const lx[] = {"--rate", "1e-2", "--no-dwarf", NULL};
	struct traced t;

	run_traced_args(&t, "many", pargs, lx);
	cr_assert_not_null(strstr(t.out, "paths=30000"), "%s", t.out);
	cr_expect_eq(log_number(t.loader_err, "inner_stacks "), 0,
		     "%lld samples went to the inner table: %s",
		     log_number(t.loader_err, "inner_stacks "), t.loader_err);
	traced_free(&t);
}

Test(stacks, a_full_table_keeps_the_innermost_frames, .timeout = 300)
{
	const char *const lx[] = {"--rate", "1e-2", "--no-dwarf", "--max-stacks", "4096", NULL};

	many_stacks(lx, 1);
}

/*
 * The inner table's stacks keep their lifetimes: they are in a hash of
 * their own (inner_lifetimes, bpf/memprof_maps.h), read with the stack
 * table's.  With a table of 2 stacks, every sample of the program goes to
 * the inner table, and leaf_alloc's blocks, freed at once, die young.
 * With inner_lifetimes left unread, leaf_alloc had no death.
 */
Test(stacks, the_inner_tables_stacks_keep_their_lifetimes, .timeout = 300)
{
	const char *const pargs[] = {"1", "4096", NULL};
	char csv[128], lx_csv[160];
	const char *const lx[] = {"--rate", "1e-2",	   "--no-dwarf", "--max-stacks",
				  "2",	    "--lifetimes", lx_csv,	 NULL};
	struct traced t;
	char *text, *line;
	long long died_young = -1;

	snprintf(csv, sizeof(csv), "/tmp/preload-stacks-lifetimes-%d.csv", (int)getpid());
	snprintf(lx_csv, sizeof(lx_csv), "%s", csv);
	run_traced_args(&t, "many", pargs, lx);
	cr_expect_gt(log_number(t.loader_err, "inner_stacks "), 0, "no inner stacks: %s",
		     t.loader_err);
	text = read_file(csv);
	cr_assert_not_null(text, "no %s: %s", csv, t.loader_err);
	/* site,samples,p50_ms,p90_ms,p99_ms,still_live,died_young,... */
	line = strstr(text, "\nleaf_alloc,");
	if (line) {
		const char *f = line + 1;

		for (int i = 0; i < 6 && f; i++)
			f = strchr(f, ',') ? strchr(f, ',') + 1 : NULL;
		died_young = f ? strtoll(f, NULL, 10) : -1;
	}
	cr_expect_gt(died_young, 0, "leaf_alloc's blocks never died young:\n%s", text);
	free(text);
	unlink(csv);
	traced_free(&t);
}

Test(stacks, deep_recursion_keeps_its_root_and_counts_cuts_exactly, .timeout = 300)
{
	/* Every 4 KiB block is sampled at rate 1 per word (1/8 per byte):
	 * P(missed) = (7/8)^4096. */
	const char *const lx[] = {"--rate", "1", "--no-dwarf", NULL};
	const long rounds = 3;
	struct traced t;
	char *text;
	long min_frames = 1000, n_lines = 0, cut_lines = 0, base = -1;
	char root[128] = "";

	run_traced(&t, "deep", "3", lx);
	text = read_file(t.folded);
	cr_assert_not_null(text);
	/* The recursion's stacks: frames root first, recurse innermost. */
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char *space = strrchr(line, ' ');
		long frames = 1, rec = 0;
		if (!space || !strstr(line, ";recurse "))
			continue;
		*space = 0;
		for (char *c = line; *c; c++)
			frames += *c == ';';
		for (char *c = strstr(line, "recurse"); c; c = strstr(c + 1, "recurse"))
			rec++;
		n_lines++;
		char first[128];
		size_t fl = strcspn(line, ";");
		snprintf(first, sizeof(first), "%.*s", (int)fl, line);
		if (!strcmp(first, "[stack-cut]")) {
			cut_lines++;
			cr_expect_eq(frames - 1, MEMPROF_STACK_DEPTH, "a cut stack has %d frames",
				     MEMPROF_STACK_DEPTH);
			continue;
		}
		cr_expect_leq(frames, MEMPROF_STACK_DEPTH);
		if (frames < min_frames) {
			min_frames = frames;
			base = frames - rec;
			snprintf(root, sizeof(root), "%s", first);
		} else {
			cr_expect_str_eq(first, root, "every uncut stack keeps its root");
		}
	}
	free(text);
	cr_assert_gt(base, 0, "no recursion stacks in the output");
	/* Depth d has d + base frames: those above the limit are cut. */
	long uncut_depths = MEMPROF_STACK_DEPTH - base;
	long cut_depths = 200 - uncut_depths;
	cr_expect_eq(n_lines - cut_lines, uncut_depths,
		     "one uncut stack per depth up to the limit");
	/* Cut by k frames, a stack keeps base - k of the frames below the
	 * recursion; from k = base on, all are 128 frames of recurse. */
	cr_expect_eq(cut_lines, base, "distinct cut stacks");
	long long cut = log_number(t.loader_err, "cut_stacks ");
	cr_expect_eq(cut, rounds * cut_depths, "%lld samples cut, expected %ld: %s", cut,
		     rounds * cut_depths, t.loader_err);
	traced_free(&t);
}

Test(stacks, byte_estimates_for_one_byte_to_one_mebibyte, .timeout = 300)
{
	/* Rate 1e-2 per word: 1.25e-3 per byte; a sample stands for 800 bytes. */
	const char *const lx[] = {"--rate", "1e-2", "--no-dwarf", NULL};
	const double p = 1e-2 / 8, bytes_per_sample = 800;
	struct traced t;

	run_traced(&t, "sizes", NULL, lx);
	char *text = read_file(t.folded);
	cr_assert_not_null(text);
	for (int i = 0; i < 9; i++) {
		char key[32], fn[16];
		double allocated, size, est = 0;
		snprintf(key, sizeof(key), "size %d bytes", i);
		cr_assert_eq(text_value(t.out, key, &size), 0, "%s", t.out);
		cr_assert_eq(text_value(strstr(t.out, key), "allocated", &allocated), 0);
		snprintf(fn, sizeof(fn), ";size_%d ", i);
		for (const char *l = strstr(text, fn); l; l = strstr(l + 1, fn))
			est += atof(l + strlen(fn));
		double n = est / bytes_per_sample;
		cr_expect(within_binomial(n, allocated, p),
			  "%.0f-byte blocks: %.0f samples for %.0f bytes, expected %.1f +- %.1f",
			  size, n, allocated, allocated * p, binomial_bound(allocated, p));
	}
	free(text);
	traced_free(&t);
}

/* The in-process profile's sampled blocks, from `stacks seed`. */
static char *sampled(const char *seed_env)
{
	const char *argv[] = {preload_prog("stacks"), "seed", "200000", NULL};
	const char *env[] = {seed_env, NULL};
	struct run_result r;

	run_program(argv, seed_env ? env : NULL, 1, &r);
	cr_assert(run_ok(&r), "%s", r.err);
	cr_assert_gt(result_num(&r, "samples"), 50);
	char *s = strdup(result_str(&r, "sampled"));
	run_result_free(&r);
	return s;
}

Test(stacks, each_run_draws_its_seed_unless_memprof_seed_fixes_it)
{
	char *a = sampled(NULL), *b = sampled(NULL);
	char *c = sampled("MEMPROF_SEED=12345"), *d = sampled("MEMPROF_SEED=12345");
	char *e = sampled("MEMPROF_SEED=12346");

	cr_expect_str_neq(a, b, "two runs without MEMPROF_SEED sample different blocks");
	cr_expect_str_eq(c, d, "MEMPROF_SEED fixes the sampled blocks");
	cr_expect_str_neq(c, e, "another seed, other blocks");
	free(a);
	free(b);
	free(c);
	free(d);
	free(e);
}
