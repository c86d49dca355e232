/*
 * memprof-bpf attached to Debian's /usr/bin/python3 (3.11, pymalloc on, no
 * special flags) while it runs: the loader injects the Python host.  What
 * the profile says (tests of the host's life: test_python_life.c).  Every
 * run is driven by events (pyrun.h): attached until the loader says the
 * target samples and the program has done a number of rounds more.
 *
 * shares_match_tracemalloc: three functions of known allocation sizes
 * (progs/three_funcs.py); each one's share of the sampled bytes is within
 * 5.7 standard deviations of the share tracemalloc counts for it in a
 * separate run (given the samples, a function's count is binomial with that
 * share), the live view is led by the function whose objects are kept, the
 * frames name the Python functions with their file and line, and the
 * program finishes with its own output and status.
 *
 * reallocated_blocks_die: lists grown by append, all dead at their
 * function's return, are not left in the live view.
 *
 * debug_allocator_keeps_free_wrapped: under PYTHONMALLOC=debug the program
 * runs and its short-lived blocks are seen dying.
 *
 * threads_walk_their_own_frames: one thread per function; every sample of a
 * function is under its own thread's loop (a walk of another thread's
 * frames would mix them), and the program ends as it would untraced.
 *
 * exit_during_attach: the program exits while the loader is attached; the
 * loader ends with it, and the Python frames are still named (the frame
 * table is read from the memfd the loader holds open); with --native, the
 * interpreter's native frames stay between and around them.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "pyrun.h"
#include "testlib.h"

#define N_FUNCS 3
/* Rounds of three_funcs.py's run attached: about 17 samples each at RATE. */
#define SHARES_ROUNDS 200

static const char *const funcs[N_FUNCS] = {"keep_records", "make_buffers", "make_strings"};

/* The function of funcs a folded stack's innermost Python frame of them is, or -1. */
static int stack_func(const char *stack, size_t len)
{
	int best = -1;
	const char *at = NULL;

	for (int i = 0; i < N_FUNCS; i++) {
		char key[64];
		snprintf(key, sizeof(key), "%s (", funcs[i]);
		for (const char *p = stack;
		     (p = memmem(p, len - (size_t)(p - stack), key, strlen(key))) != NULL; p++)
			if (!at || p > at)
				at = p, best = i;
	}
	return best;
}

/* Sum a folded file's weights by function; the heaviest line's function in *top. */
static void folded_by_func(const char *path, double sums[N_FUNCS], int *top)
{
	char *text = read_file(path);
	double top_w = -1;

	cr_assert_not_null(text, "no %s", path);
	for (int i = 0; i < N_FUNCS; i++)
		sums[i] = 0;
	*top = -1;
	for (char *line = text; *line;) {
		char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		char *sp = memrchr(line, ' ', len);

		if (sp) {
			double w = strtod(sp + 1, NULL);
			int f = stack_func(line, (size_t)(sp - line));
			if (f >= 0)
				sums[f] += w;
			if (w > top_w)
				top_w = w, *top = f;
		}
		if (!end)
			break;
		line = end + 1;
	}
	free(text);
}

Test(python, shares_match_tracemalloc, .init = pyrun_setup, .fini = pyrun_teardown, .timeout = 300)
{
	char views[128], tout[128], terr[128], report[128], path[160];
	double truth[N_FUNCS], total_truth = 0, est[N_FUNCS], live[N_FUNCS];
	int top_live, top_alloc;
	struct pyrun r;

	pyrun_path(views, sizeof(views), "views");
	pyrun_path(tout, sizeof(tout), "truth.out");
	pyrun_path(terr, sizeof(terr), "truth.err");
	pyrun_path(report, sizeof(report), "report.txt");

	/* The ground truth: tracemalloc, in a run of its own. */
	const char *targv[] = {PYTHON, SCRIPT, "truth", "3", NULL};
	int ts = pyrun_wait_status(pyrun_spawn(targv, tout, terr));
	cr_assert(WIFEXITED(ts) && WEXITSTATUS(ts) == 0, "truth run: %s", read_file(terr));
	for (int i = 0; i < N_FUNCS; i++) {
		cr_assert_eq(file_value(tout, funcs[i], &truth[i]), 0, "no %s in %s", funcs[i],
			     read_file(tout));
		total_truth += truth[i];
	}

	const char *pargv[] = {PYTHON, SCRIPT, "run", r.stop, NULL};
	pyrun_start(&r, pargv, NULL);
	const char *largs[] = {"--rate",   RATE,   "--lines",	  "-o",	 report,
			       "--format", "text", "--all-views", views, NULL};
	pyrun_attach(&r, largs);
	pyrun_wait_rounds(&r, SHARES_ROUNDS / 20);
	/* Detached while the program runs: its kept records are live (at exit they die). */
	pyrun_detach(&r);
	pyrun_finish(&r);
	char *log = read_file(r.lerr);
	cr_expect(pyrun_wait_text(r.out, "done ") == 0, "python3's own output is missing: %s",
		  read_file(r.out));
	cr_expect_not_null(strstr(log, "loaded "), "no injection: %s", log);
	cr_expect_not_null(strstr(log, "libmemprof-python.so"), "not the Python host: %s", log);
	cr_expect_null(strstr(log, "PYTHONMALLOC"), "the pymalloc note is wrong here: %s", log);

	snprintf(path, sizeof(path), "%s/alloc.folded", views);
	folded_by_func(path, est, &top_alloc);
	char *alloc = read_file(path);
	cr_assert_not_null(strstr(alloc, "one_round (/"),
			   "no Python frame with its file and line: %.2000s", alloc);
	char want[64];
	snprintf(want, sizeof(want), "/three_funcs.py:%d);",
		 pyrun_script_line("bytes(RECORD_BYTES)"));
	cr_expect_not_null(strstr(alloc, want),
			   "keep_records' allocating line is not named: %.2000s", alloc);
	/* The text report's site of each function is its allocating Python line. */
	char *text = read_file(report);
	snprintf(want, sizeof(want), "/three_funcs.py:%d)",
		 pyrun_script_line("bytearray(BUFFER_BYTES)"));
	cr_expect(text && strstr(text, "  make_buffers (") && strstr(text, want),
		  "the report's sites are not Python lines: %.3000s", text ? text : "");
	free(text);
	/* Without --native, no native frame outside the innermost Python one. */
	cr_expect_null(strstr(alloc, "Py_RunMain"), "native frames between Python ones: %.2000s",
		       alloc);
	free(alloc);
	/* A sample stands for 1 / rate bytes: the sample counts, binomial given their sum. */
	double n[N_FUNCS], total = 0;
	for (int i = 0; i < N_FUNCS; i++) {
		n[i] = est[i] * RATE_PER_BYTE;
		total += n[i];
	}
	cr_assert_gt(total, 1000, "too few samples (%.0f): %s", total, log);
	for (int i = 0; i < N_FUNCS; i++) {
		double p = truth[i] / total_truth;
		cr_expect(within_binomial(n[i], total, p),
			  "%s: %.0f of %.0f samples (share %.4f), tracemalloc's share %.4f "
			  "(bound %.1f samples)",
			  funcs[i], n[i], total, n[i] / total, p, binomial_bound(total, p));
		fprintf(stderr, "python: %s share %.4f, tracemalloc %.4f, of %.0f samples\n",
			funcs[i], n[i] / total, p, total);
	}

	snprintf(path, sizeof(path), "%s/live.folded", views);
	folded_by_func(path, live, &top_live);
	cr_expect_eq(top_live, 0, "the live view is not led by keep_records (%d): %.0f %.0f %.0f",
		     top_live, live[0], live[1], live[2]);
	/* make_strings keeps nothing: its small (pymalloc) blocks are seen dying. */
	cr_expect_lt(live[2], est[2] / 20, "make_strings' blocks do not die: %.0f live of %.0f",
		     live[2], est[2]);
	free(log);
}

/*
 * Blocks sampled at a realloc to a size pymalloc serves die seen: lists grown
 * by append (their storage reallocated, 32 to 512 bytes), all dead at the
 * function's return, are not left in the live view.  Attached until the
 * loader's snapshots (--every 0.2) hold 1,000 samples of grow_lists.
 */
Test(python, reallocated_blocks_die, .init = pyrun_setup, .fini = pyrun_teardown, .timeout = 300)
{
	char views[128], snaps[128], path[160];
	double seen = 0;
	struct pyrun r;

	pyrun_path(views, sizeof(views), "views");
	pyrun_path(snaps, sizeof(snaps), "snaps");
	const char *pargv[] = {PYTHON, SCRIPT, "grow", r.stop, NULL};
	pyrun_start(&r, pargv, NULL);
	const char *largs[] = {"--rate",	 RATE,		"--every", "0.2",
			       "--snapshot-dir", snaps,		"--lines", "-o",
			       "/dev/null",	 "--all-views", views,	   NULL};
	pyrun_attach(&r, largs);
	pyrun_wait_rounds(&r, 1);
	while ((seen = pyrun_snapshots_weight_with(snaps, "grow_lists (")) <= 1000 / RATE_PER_BYTE)
		pyrun_wait_more_rounds(&r, 1);
	/* Detached while the program runs, or every block would die at its exit. */
	pyrun_detach(&r);
	pyrun_finish(&r);
	snprintf(path, sizeof(path), "%s/alloc.folded", views);
	double alloc = pyrun_weight_with(path, "grow_lists (");
	snprintf(path, sizeof(path), "%s/live.folded", views);
	double live = pyrun_weight_with(path, "grow_lists (");
	/* At least 1,000 samples of 8 / rate bytes each. */
	snprintf(path, sizeof(path), "%s/alloc.folded", views);
	cr_assert_gt(alloc, 1000 / RATE_PER_BYTE, "too few samples: %.0f bytes: %.1500s; %s", alloc,
		     read_file(path), read_file(r.lerr));
	cr_expect_lt(live, alloc / 20, "reallocated blocks do not die: %.0f live of %.0f", live,
		     alloc);
	fprintf(stderr, "python: grow_lists %.0f bytes allocated, %.0f live\n", alloc, live);
}

/*
 * Under CPython's debug hooks (PYTHONMALLOC=debug: each block has a header
 * naming its domain) the hooks wrap free too and sampled blocks stay in
 * their own domain: the program runs and exits 0, and make_strings' blocks
 * are seen dying.
 */
Test(python, debug_allocator_keeps_free_wrapped, .init = pyrun_setup, .fini = pyrun_teardown,
     .timeout = 300)
{
	char views[128], path[160];
	struct pyrun r;

	pyrun_path(views, sizeof(views), "views");
	const char *pargv[] = {PYTHON, SCRIPT, "run", r.stop, NULL};
	const char *env[] = {"PYTHONMALLOC=debug", NULL};
	pyrun_start(&r, pargv, env);
	const char *largs[] = {"--rate",    RATE,	   "--lines", "-o",
			       "/dev/null", "--all-views", views,     NULL};
	pyrun_attach(&r, largs);
	pyrun_wait_rounds(&r, 2);
	/* Detached while the program runs, or every block would die at its exit. */
	pyrun_detach(&r);
	pyrun_finish(&r);
	snprintf(path, sizeof(path), "%s/alloc.folded", views);
	double alloc = pyrun_weight_with(path, "make_strings (");
	snprintf(path, sizeof(path), "%s/live.folded", views);
	double live = pyrun_weight_with(path, "make_strings (");
	cr_assert_gt(alloc, 100 / RATE_PER_BYTE, "too few samples: %.0f bytes", alloc);
	cr_expect_lt(live, alloc / 20, "make_strings' blocks do not die: %.0f live of %.0f", live,
		     alloc);
}

/* Every line of a folded file holding "NAME (" has "LOOP (" right before it. */
static void expect_under(const char *folded, const char *name, const char *loop, int *seen)
{
	char key[64], want[128];

	snprintf(key, sizeof(key), ";%s (", name);
	snprintf(want, sizeof(want), "%s (", loop);
	for (const char *line = folded; *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		const char *at = memmem(line, len, key, strlen(key));

		if (at) {
			const char *prev = at;
			while (prev > line && prev[-1] != ';')
				prev--;
			cr_expect(!strncmp(prev, want, strlen(want)), "%s is not under %s: %.*s",
				  name, loop, (int)len, line);
			(*seen)++;
		}
		if (!end)
			break;
		line = end + 1;
	}
}

Test(python, threads_walk_their_own_frames, .init = pyrun_setup, .fini = pyrun_teardown,
     .timeout = 300)
{
	char views[128], path[160];
	struct pyrun r;

	pyrun_path(views, sizeof(views), "views");
	const char *pargv[] = {PYTHON, SCRIPT, "threads", r.stop, NULL};
	pyrun_start(&r, pargv, NULL);
	const char *largs[] = {"--rate", RATE, "--lines", "--all-views", views, NULL};
	pyrun_attach(&r, largs);
	/* Each thread has done 40 calls more: hundreds of samples each. */
	pyrun_wait_rounds(&r, 40);
	pyrun_finish(&r);
	cr_expect_eq(pyrun_wait_text(r.out, "done True True True"), 0, "python3's output: %s",
		     read_file(r.out));
	snprintf(path, sizeof(path), "%s/alloc.folded", views);
	char *folded = read_file(path);
	cr_assert_not_null(folded);
	int seen[N_FUNCS] = {0};
	expect_under(folded, funcs[0], "loop_records", &seen[0]);
	expect_under(folded, funcs[1], "loop_buffers", &seen[1]);
	expect_under(folded, funcs[2], "loop_strings", &seen[2]);
	for (int i = 0; i < N_FUNCS; i++)
		cr_expect_gt(seen[i], 0, "no sample of %s: %.2000s", funcs[i], folded);
	cr_expect_null(strstr(folded, "[python frame"), "an unnamed Python frame: %.2000s", folded);
	free(folded);
}

Test(python, exit_during_attach, .init = pyrun_setup, .fini = pyrun_teardown, .timeout = 300)
{
	char views[128], path[160];
	struct pyrun r;

	pyrun_path(views, sizeof(views), "views");
	const char *pargv[] = {PYTHON, SCRIPT, "run", r.stop, NULL};
	pyrun_start(&r, pargv, NULL);
	const char *largs[] = {"--rate", RATE, "--lines", "--native", "--all-views", views, NULL};
	pyrun_attach(&r, largs);
	/* Sampling is on: 20 more rounds (hundreds of samples), then the program ends. */
	pyrun_wait_rounds(&r, 1);
	/* The loader ends with the program, exit 0 (pyrun_finish checks both). */
	pyrun_finish(&r);
	cr_expect_eq(pyrun_wait_text(r.out, "done "), 0, "python3's output: %s", read_file(r.out));
	snprintf(path, sizeof(path), "%s/alloc.folded", views);
	char *folded = read_file(path);
	cr_assert_not_null(folded);
	cr_expect_not_null(strstr(folded, "one_round ("), "no named Python frame: %.2000s", folded);
	/* --native: the interpreter's own frames outside the Python ones, on one line. */
	int native_kept = 0;
	for (const char *line = folded; *line && !native_kept;) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		const char *main_at = memmem(line, len, ";Py_RunMain;", 12);

		native_kept = main_at && memmem(main_at, len - (size_t)(main_at - line),
						"one_round (", 11) != NULL;
		if (!eol)
			break;
		line = eol + 1;
	}
	cr_expect(native_kept, "--native kept no native frame outside the Python ones: %.2000s",
		  folded);
	cr_expect_null(strstr(folded, "[python frame"), "an unnamed Python frame: %.2000s", folded);
	free(folded);
}
