/*
 * memprof-bpf attached to Debian's /usr/bin/python3 (3.11, pymalloc on, no
 * special flags) while it runs: the loader injects the Python host.
 *
 * shares_match_tracemalloc: three functions of known allocation sizes
 * (progs/three_funcs.py); each one's share of the sampled bytes is within
 * 5.7 standard deviations of the share tracemalloc counts for it in a
 * separate run (given the samples, a function's count is binomial with that
 * share), the live view is led by the function whose objects are kept, the
 * frames name the Python functions with their file and line, and the
 * program finishes with its own output and status.
 *
 * threads_walk_their_own_frames: one thread per function; every sample of a
 * function is under its own thread's loop (a walk of another thread's
 * frames would mix them), and the program ends as it would untraced.
 *
 * exit_during_attach: the program exits while the loader is attached; the
 * loader ends with it, and the Python frames are still named (the frame
 * table is read from the memfd the loader holds open); with --native, the
 * interpreter's native frames stay between and around them.
 *
 * detach_and_attach_again: the hooks are in place while a tracer is
 * attached only (the program sees its allocator wrapped, then its own
 * again), and a second attach profiles it without a second injection.
 *
 * c_code_under_python: C code called from Python (ctypes) allocating through
 * PyMem_Malloc: with --native its samples have libffi's frames under the
 * Python function that called it.
 *
 * children_of_a_fork: the program forks children while attached; every child
 * runs and exits 0, and the parent is profiled on.
 *
 * child_forked_while_detached: a child forked after a detach has a watcher
 * of its own: attached, it is profiled (no second injection).
 *
 * unsupported_cpython_refused: a program exporting the CPython API with
 * Py_Version 3.12.1 is refused in one line naming the version, exit 2, and
 * nothing is loaded into it.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exit_codes.h"
#include "testlib.h"

#define PYTHON "/usr/bin/python3"
#define LOADER PYTHON_BUILD_DIR "/memprof-bpf"
#define SCRIPT PYTHON_PROGS_DIR "/three_funcs.py"
#define CTYPES_SCRIPT PYTHON_PROGS_DIR "/ctypes_alloc.py"
#define FAKE PYTHON_BUILD_DIR "/tests/python/progs/fake_cpython"
/* Per word: the host samples per byte at an eighth of it. */
#define RATE "1e-4"
#define RATE_PER_BYTE (1e-4 / 8)
#define N_FUNCS 3

static const char *const funcs[N_FUNCS] = {"keep_records", "make_buffers", "make_strings"};
static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/memprof-python-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(access(PYTHON, X_OK), 0, "no %s (Debian package python3)", PYTHON);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

/* Start argv with stdout and stderr into files: its pid (testlib.h). */
static pid_t spawn(const char *const argv[], const char *out, const char *err)
{
	pid_t pid = test_spawn(argv, NULL, out, err);

	cr_assert_geq(pid, 0);
	return pid;
}

static int wait_status(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		cr_assert_eq(errno, EINTR, "waitpid: %s", strerror(errno));
	return status;
}

/* Wait until file path holds text: 0, or -1 after the event timeout. */
static int wait_text(const char *path, const char *text)
{
	const struct timespec tick = {0, 10000000};

	for (double waited = 0; waited < TEST_EVENT_TIMEOUT_S; waited += 0.01) {
		char *t = read_file(path);
		int found = t && strstr(t, text);

		free(t);
		if (found)
			return 0;
		nanosleep(&tick, NULL);
	}
	return -1;
}

/* The line of the script that holds text (1-based), or 0. */
static int script_line(const char *text)
{
	char *s = read_file(SCRIPT);
	const char *at = s ? strstr(s, text) : NULL;
	int line = 1;

	if (!at) {
		free(s);
		return 0;
	}
	for (const char *c = s; c < at; c++)
		line += *c == '\n';
	free(s);
	return line;
}

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

Test(python, shares_match_tracemalloc, .init = setup, .fini = teardown, .timeout = 300)
{
	char out[128], err[128], stop[128], views[128], lerr[128], tout[128], terr[128];
	double truth[N_FUNCS], total_truth = 0, est[N_FUNCS], live[N_FUNCS];
	int top_live, top_alloc;

	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(err, sizeof(err), "%s/err", dir);
	snprintf(stop, sizeof(stop), "%s/stop", dir);
	snprintf(views, sizeof(views), "%s/views", dir);
	snprintf(lerr, sizeof(lerr), "%s/loader.err", dir);
	snprintf(tout, sizeof(tout), "%s/truth.out", dir);
	snprintf(terr, sizeof(terr), "%s/truth.err", dir);

	/* The ground truth: tracemalloc, in a run of its own. */
	const char *targv[] = {PYTHON, SCRIPT, "truth", "3", NULL};
	int ts = wait_status(spawn(targv, tout, terr));
	cr_assert(WIFEXITED(ts) && WEXITSTATUS(ts) == 0, "truth run: %s", read_file(terr));
	for (int i = 0; i < N_FUNCS; i++) {
		cr_assert_eq(file_value(tout, funcs[i], &truth[i]), 0, "no %s in %s", funcs[i],
			     read_file(tout));
		total_truth += truth[i];
	}

	const char *pargv[] = {PYTHON, SCRIPT, "run", stop, NULL};
	pid_t prog = spawn(pargv, out, err);
	cr_assert_eq(wait_text(out, "ready"), 0, "python3 never got ready: %s", read_file(err));
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)prog);
	char report[160];
	snprintf(report, sizeof(report), "%s/report.txt", dir);
	const char *largv[] = {LOADER, "attach",      pid,	 "-v", "--rate", RATE,
			       "-d",   "2",	      "--lines", "-o", report,	 "--format",
			       "text", "--all-views", views,	 NULL};
	int ls = wait_status(spawn(largv, "/dev/null", lerr));
	char *log = read_file(lerr);
	int fd = open(stop, O_WRONLY | O_CREAT, 0644);
	close(fd);
	int ps = wait_status(prog);
	cr_assert(WIFEXITED(ls) && WEXITSTATUS(ls) == EXIT_OK, "loader status %#x: %s", ls, log);
	cr_assert(WIFEXITED(ps) && WEXITSTATUS(ps) == 0, "python3 status %#x: %s", ps,
		  read_file(err));
	cr_expect(wait_text(out, "done ") == 0, "python3's own output is missing: %s",
		  read_file(out));
	cr_expect_not_null(strstr(log, "loaded "), "no injection: %s", log);
	cr_expect_not_null(strstr(log, "libmemprof-python.so"), "not the Python host: %s", log);
	cr_expect_null(strstr(log, "PYTHONMALLOC"), "the pymalloc note is wrong here: %s", log);

	char path[160];
	snprintf(path, sizeof(path), "%s/alloc.folded", views);
	folded_by_func(path, est, &top_alloc);
	char *alloc = read_file(path);
	cr_assert_not_null(strstr(alloc, "one_round (/"),
			   "no Python frame with its file and line: %.2000s", alloc);
	char want[64];
	snprintf(want, sizeof(want), "/three_funcs.py:%d);", script_line("bytes(RECORD_BYTES)"));
	cr_expect_not_null(strstr(alloc, want),
			   "keep_records' allocating line is not named: %.2000s", alloc);
	/* The text report's site of each function is its allocating Python line. */
	char *text = read_file(report);
	snprintf(want, sizeof(want), "/three_funcs.py:%d)", script_line("bytearray(BUFFER_BYTES)"));
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

/* The weight of a folded file's stacks that hold key. */
static double weight_with(const char *path, const char *key)
{
	char *text = read_file(path);
	double sum = 0;

	cr_assert_not_null(text, "no %s", path);
	for (char *line = text; *line;) {
		char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		char *sp = memrchr(line, ' ', len);

		if (sp && memmem(line, (size_t)(sp - line), key, strlen(key)))
			sum += strtod(sp + 1, NULL);
		if (!end)
			break;
		line = end + 1;
	}
	free(text);
	return sum;
}

/* Bytes of the lines holding key in the .folded files of dir (snapshots). */
static double snapshots_weight_with(const char *dir, const char *key)
{
	char cmd[512], path[1024];
	double sum = 0;
	FILE *ls;

	snprintf(cmd, sizeof(cmd), "ls '%s' 2>/dev/null", dir);
	ls = popen(cmd, "r");
	if (!ls)
		return 0;
	while (fgets(path + strlen(dir) + 1, (int)(sizeof(path) - strlen(dir) - 1), ls)) {
		memcpy(path, dir, strlen(dir));
		path[strlen(dir)] = '/';
		path[strcspn(path, "\n")] = 0;
		if (strstr(path, ".folded"))
			sum += weight_with(path, key);
	}
	pclose(ls);
	return sum;
}

/*
 * Blocks sampled at a realloc to a size pymalloc serves die seen: lists grown
 * by append (their storage reallocated, 32 to 512 bytes), all dead at the
 * function's return, are not left in the live view.  Attached until the
 * loader's snapshots (--every 0.2) hold 1,000 samples of grow_lists, then
 * the program is told to stop (events, not a fixed time: the host took up
 * the attach anywhere from at once to seconds later, see
 * docs/python-host.md).
 */
Test(python, reallocated_blocks_die, .init = setup, .fini = teardown, .timeout = 300)
{
	char out[128], err[128], stop[128], views[128], snaps[128], lerr[128], path[160], pid[16];
	double seen = 0;

	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(err, sizeof(err), "%s/err", dir);
	snprintf(stop, sizeof(stop), "%s/stop", dir);
	snprintf(views, sizeof(views), "%s/views", dir);
	snprintf(snaps, sizeof(snaps), "%s/snaps", dir);
	snprintf(lerr, sizeof(lerr), "%s/loader.err", dir);
	const char *pargv[] = {PYTHON, SCRIPT, "grow", stop, NULL};
	pid_t prog = spawn(pargv, out, err);
	cr_assert_eq(wait_text(out, "ready"), 0, "python3 never got ready: %s", read_file(err));
	snprintf(pid, sizeof(pid), "%d", (int)prog);
	const char *largv[] = {
	    LOADER, "attach",  pid,  "--rate",	  RATE,		 "--every", "0.2", "--snapshot-dir",
	    snaps,  "--lines", "-o", "/dev/null", "--all-views", views,	    NULL};
	pid_t loader = spawn(largv, "/dev/null", lerr);
	for (double waited = 0; waited < TEST_EVENT_TIMEOUT_S && seen <= 1000 / RATE_PER_BYTE;
	     waited += 0.05) {
		struct timespec pause = {0, 50 * 1000 * 1000};

		nanosleep(&pause, NULL);
		seen = snapshots_weight_with(snaps, "grow_lists (");
	}
	int fd = open(stop, O_WRONLY | O_CREAT, 0644);
	close(fd);
	int ps = wait_status(prog);
	int ls = wait_status(loader);
	cr_assert(WIFEXITED(ls) && WEXITSTATUS(ls) == EXIT_OK, "loader status %#x: %s", ls,
		  read_file(lerr));
	cr_assert(WIFEXITED(ps) && WEXITSTATUS(ps) == 0, "python3 status %#x: %s", ps,
		  read_file(err));
	snprintf(path, sizeof(path), "%s/alloc.folded", views);
	double alloc = weight_with(path, "grow_lists (");
	snprintf(path, sizeof(path), "%s/live.folded", views);
	double live = weight_with(path, "grow_lists (");
	/* At least 1,000 samples of 8 / rate bytes each. */
	snprintf(path, sizeof(path), "%s/alloc.folded", views);
	cr_assert_gt(alloc, 1000 / RATE_PER_BYTE, "too few samples: %.0f bytes: %.1500s; %s", alloc,
		     read_file(path), read_file(lerr));
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
Test(python, debug_allocator_keeps_free_wrapped, .init = setup, .fini = teardown, .timeout = 300)
{
	char out[128], err[128], stop[128], views[128], lerr[128], path[160], pid[16];

	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(err, sizeof(err), "%s/err", dir);
	snprintf(stop, sizeof(stop), "%s/stop", dir);
	snprintf(views, sizeof(views), "%s/views", dir);
	snprintf(lerr, sizeof(lerr), "%s/loader.err", dir);
	const char *pargv[] = {PYTHON, SCRIPT, "run", stop, NULL};
	const char *env[] = {"PYTHONMALLOC=debug", NULL};
	pid_t prog = test_spawn(pargv, env, out, err);
	cr_assert_geq(prog, 0);
	cr_assert_eq(wait_text(out, "ready"), 0, "python3 never got ready: %s", read_file(err));
	snprintf(pid, sizeof(pid), "%d", (int)prog);
	const char *largv[] = {LOADER,	  "attach", pid,	 "--rate",	RATE,  "-d", "2",
			       "--lines", "-o",	    "/dev/null", "--all-views", views, NULL};
	int ls = wait_status(spawn(largv, "/dev/null", lerr));
	int fd = open(stop, O_WRONLY | O_CREAT, 0644);
	close(fd);
	int ps = wait_status(prog);
	cr_assert(WIFEXITED(ls) && WEXITSTATUS(ls) == EXIT_OK, "loader status %#x: %s", ls,
		  read_file(lerr));
	cr_assert(WIFEXITED(ps) && WEXITSTATUS(ps) == 0, "python3 status %#x: %s", ps,
		  read_file(err));
	snprintf(path, sizeof(path), "%s/alloc.folded", views);
	double alloc = weight_with(path, "make_strings (");
	snprintf(path, sizeof(path), "%s/live.folded", views);
	double live = weight_with(path, "make_strings (");
	cr_assert_gt(alloc, 100 / RATE_PER_BYTE, "too few samples: %.0f bytes", alloc);
	cr_expect_lt(live, alloc / 20, "make_strings' blocks do not die: %.0f live of %.0f", live,
		     alloc);
}

Test(python, unsupported_cpython_refused, .init = setup, .fini = teardown, .timeout = 120)
{
	char ready[128], out[128], err[128], lerr[128], pid[16];

	snprintf(ready, sizeof(ready), "%s/ready", dir);
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(err, sizeof(err), "%s/err", dir);
	snprintf(lerr, sizeof(lerr), "%s/loader.err", dir);
	const char *argv[] = {FAKE, ready, NULL};
	pid_t prog = spawn(argv, out, err);
	cr_assert_eq(wait_nonempty_file(ready, TEST_EVENT_TIMEOUT_S), 0,
		     "fake_cpython never ready");
	snprintf(pid, sizeof(pid), "%d", (int)prog);
	const char *largv[] = {LOADER, "attach", pid, "-d", "1", "-o", "/dev/null", NULL};
	int ls = wait_status(spawn(largv, "/dev/null", lerr));
	char *log = read_file(lerr);
	char maps[64];
	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)prog);
	char *m = read_file(maps);
	kill(prog, SIGTERM);
	wait_status(prog);
	cr_assert(WIFEXITED(ls) && WEXITSTATUS(ls) == EXIT_TARGET, "loader status %#x: %s", ls,
		  log);
	cr_expect_not_null(strstr(log, "CPython 3.12.1"), "the refusal names no version: %s", log);
	cr_expect_not_null(strstr(log, "--inject-malloc"), "the refusal names no way out: %s", log);
	cr_expect_eq(strchr(log, '\n'), log + strlen(log) - 1, "not one line: %s", log);
	cr_expect_null(strstr(m, "memprof"), "something was loaded into it: %s", m);
	free(m);
	free(log);
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

Test(python, threads_walk_their_own_frames, .init = setup, .fini = teardown, .timeout = 300)
{
	char out[128], err[128], stop[128], views[128], lerr[128], path[160], pid[16];

	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(err, sizeof(err), "%s/err", dir);
	snprintf(stop, sizeof(stop), "%s/stop", dir);
	snprintf(views, sizeof(views), "%s/views", dir);
	snprintf(lerr, sizeof(lerr), "%s/loader.err", dir);
	const char *pargv[] = {PYTHON, SCRIPT, "threads", stop, NULL};
	pid_t prog = spawn(pargv, out, err);
	cr_assert_eq(wait_text(out, "ready"), 0, "python3 never got ready: %s", read_file(err));
	snprintf(pid, sizeof(pid), "%d", (int)prog);
	const char *largv[] = {LOADER, "attach", pid,	    "-v",	   "--rate", RATE,
			       "-d",   "2",	 "--lines", "--all-views", views,    NULL};
	int ls = wait_status(spawn(largv, "/dev/null", lerr));
	int fd = open(stop, O_WRONLY | O_CREAT, 0644);
	close(fd);
	int ps = wait_status(prog);
	cr_assert(WIFEXITED(ls) && WEXITSTATUS(ls) == EXIT_OK, "loader status %#x: %s", ls,
		  read_file(lerr));
	cr_assert(WIFEXITED(ps) && WEXITSTATUS(ps) == 0, "python3 status %#x: %s", ps,
		  read_file(err));
	cr_expect_eq(wait_text(out, "done True True True"), 0, "python3's output: %s",
		     read_file(out));
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

Test(python, exit_during_attach, .init = setup, .fini = teardown, .timeout = 300)
{
	char out[128], err[128], stop[128], views[128], lerr[128], path[160], pid[16];
	const struct timespec tick = {0, 10000000};

	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(err, sizeof(err), "%s/err", dir);
	snprintf(stop, sizeof(stop), "%s/stop", dir);
	snprintf(views, sizeof(views), "%s/views", dir);
	snprintf(lerr, sizeof(lerr), "%s/loader.err", dir);
	const char *pargv[] = {PYTHON, SCRIPT, "run", stop, NULL};
	pid_t prog = spawn(pargv, out, err);
	cr_assert_eq(wait_text(out, "ready"), 0, "python3 never got ready: %s", read_file(err));
	snprintf(pid, sizeof(pid), "%d", (int)prog);
	const char *largv[] = {LOADER, "attach",  pid,	      "-v",	     "--rate", RATE, "-d",
			       "600",  "--lines", "--native", "--all-views", views,    NULL};
	pid_t loader = spawn(largv, "/dev/null", lerr);
	cr_assert_eq(wait_text(lerr, "target sampling at rate"), 0, "never sampling: %s",
		     read_file(lerr));
	/* Sampling is on: let the program finish 20 more rounds (hundreds of samples), then end it.
	 */
	char *seen = read_file(out);
	size_t seen_len = seen ? strlen(seen) : 0;
	free(seen);
	for (double waited = 0; waited < TEST_EVENT_TIMEOUT_S; waited += 0.01) {
		char *now = read_file(out);
		int more = now && strlen(now) > seen_len && strstr(now + seen_len, "round ");
		free(now);
		if (more)
			break;
		nanosleep(&tick, NULL);
	}
	int fd = open(stop, O_WRONLY | O_CREAT, 0644);
	close(fd);
	int ps = wait_status(prog);
	int ls = wait_status(loader);
	cr_assert(WIFEXITED(ps) && WEXITSTATUS(ps) == 0, "python3 status %#x: %s", ps,
		  read_file(err));
	cr_assert(WIFEXITED(ls) && WEXITSTATUS(ls) == EXIT_OK, "loader status %#x: %s", ls,
		  read_file(lerr));
	cr_expect_eq(wait_text(out, "done "), 0, "python3's output: %s", read_file(out));
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

Test(python, detach_and_attach_again, .init = setup, .fini = teardown, .timeout = 300)
{
	char out[128], err[128], stop[128], views[2][128], lerr[2][128], path[300], pid[16];

	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(err, sizeof(err), "%s/err", dir);
	snprintf(stop, sizeof(stop), "%s/stop", dir);
	const char *pargv[] = {PYTHON, SCRIPT, "run", stop, NULL};
	pid_t prog = spawn(pargv, out, err);
	cr_assert_eq(wait_text(out, "ready"), 0, "python3 never got ready: %s", read_file(err));
	snprintf(pid, sizeof(pid), "%d", (int)prog);
	for (int i = 0; i < 2; i++) {
		snprintf(views[i], sizeof(views[i]), "%s/views%d", dir, i);
		snprintf(lerr[i], sizeof(lerr[i]), "%s/loader%d.err", dir, i);
		const char *largv[] = {LOADER, "attach", pid,	    "-v",	   "--rate", RATE,
				       "-d",   "1",	 "--lines", "--all-views", views[i], NULL};
		int ls = wait_status(spawn(largv, "/dev/null", lerr[i]));
		cr_assert(WIFEXITED(ls) && WEXITSTATUS(ls) == EXIT_OK, "loader %d status %#x: %s",
			  i, ls, read_file(lerr[i]));
		/* The program saw its allocator wrapped while attached, and its own after. */
		const char *want = i == 0 ? "hooked\nunhooked\n" : "unhooked\nhooked\nunhooked\n";
		for (double waited = 0; waited < TEST_EVENT_TIMEOUT_S; waited += 0.01) {
			char *text = read_file(out);
			char *lines = text ? malloc(strlen(text) + 1) : NULL;
			size_t n = 0;
			/* Only the hooked/unhooked lines, in order. */
			for (char *l = text; lines && l && *l;) {
				char *eol = strchr(l, '\n');
				size_t len = eol ? (size_t)(eol - l + 1) : strlen(l);
				if (!strncmp(l, "hooked\n", 7) || !strncmp(l, "unhooked\n", 9))
					memcpy(lines + n, l, len), n += len;
				l = eol ? eol + 1 : NULL;
			}
			if (lines)
				lines[n] = 0;
			int done = lines && strstr(lines, want);
			free(text);
			free(lines);
			if (done)
				break;
			cr_assert_lt(waited + 0.01, TEST_EVENT_TIMEOUT_S,
				     "the hooks did not come and go with attach %d: %s", i,
				     read_file(out));
			const struct timespec tick = {0, 10000000};
			nanosleep(&tick, NULL);
		}
	}
	int fd = open(stop, O_WRONLY | O_CREAT, 0644);
	close(fd);
	int ps = wait_status(prog);
	cr_assert(WIFEXITED(ps) && WEXITSTATUS(ps) == 0, "python3 status %#x: %s", ps,
		  read_file(err));
	char *log0 = read_file(lerr[0]), *log1 = read_file(lerr[1]);
	cr_expect_not_null(strstr(log0, "had no memprof probes"), "no injection: %s", log0);
	cr_expect_null(strstr(log1, "had no memprof probes"), "injected twice: %s", log1);
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/alloc.folded", views[i]);
		char *folded = read_file(path);
		cr_expect(folded && strstr(folded, ";keep_records ("),
			  "attach %d has no Python frames: %.2000s", i, folded ? folded : "");
		free(folded);
	}
	free(log0);
	free(log1);
}

Test(python, c_code_under_python, .init = setup, .fini = teardown, .timeout = 300)
{
	char out[128], err[128], stop[128], folded[128], lerr[128], pid[16];

	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(err, sizeof(err), "%s/err", dir);
	snprintf(stop, sizeof(stop), "%s/stop", dir);
	snprintf(folded, sizeof(folded), "%s/alloc.folded", dir);
	snprintf(lerr, sizeof(lerr), "%s/loader.err", dir);
	const char *pargv[] = {PYTHON, CTYPES_SCRIPT, stop, NULL};
	pid_t prog = spawn(pargv, out, err);
	cr_assert_eq(wait_text(out, "ready"), 0, "python3 never got ready: %s", read_file(err));
	snprintf(pid, sizeof(pid), "%d", (int)prog);
	const char *largv[] = {LOADER, "attach",  pid,	      "--rate", RATE,	"-d",
			       "1",    "--lines", "--native", "-o",	folded, NULL};
	int ls = wait_status(spawn(largv, "/dev/null", lerr));
	int fd = open(stop, O_WRONLY | O_CREAT, 0644);
	close(fd);
	int ps = wait_status(prog);
	cr_assert(WIFEXITED(ls) && WEXITSTATUS(ls) == EXIT_OK, "loader status %#x: %s", ls,
		  read_file(lerr));
	cr_assert(WIFEXITED(ps) && WEXITSTATUS(ps) == 0, "python3 status %#x: %s", ps,
		  read_file(err));
	char *text = read_file(folded);
	cr_assert_not_null(text);
	int found = 0;
	for (const char *line = text; *line && !found;) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		const char *py = memmem(line, len, "via_ctypes (", 12);

		found = py && memmem(py, len - (size_t)(py - line), ";ffi_call;", 10) != NULL;
		if (!eol)
			break;
		line = eol + 1;
	}
	cr_expect(found, "no ffi_call under via_ctypes: %.3000s", text);
	free(text);
}

Test(python, children_of_a_fork, .init = setup, .fini = teardown, .timeout = 300)
{
	char out[128], err[128], stop[128], folded[128], lerr[128], pid[16];

	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(err, sizeof(err), "%s/err", dir);
	snprintf(stop, sizeof(stop), "%s/stop", dir);
	snprintf(folded, sizeof(folded), "%s/alloc.folded", dir);
	snprintf(lerr, sizeof(lerr), "%s/loader.err", dir);
	const char *pargv[] = {PYTHON, SCRIPT, "fork", stop, NULL};
	pid_t prog = spawn(pargv, out, err);
	cr_assert_eq(wait_text(out, "ready"), 0, "python3 never got ready: %s", read_file(err));
	snprintf(pid, sizeof(pid), "%d", (int)prog);
	const char *largv[] = {LOADER, "attach",  pid,	"--rate", RATE, "-d",
			       "2",    "--lines", "-o", folded,	  NULL};
	int ls = wait_status(spawn(largv, "/dev/null", lerr));
	int fd = open(stop, O_WRONLY | O_CREAT, 0644);
	close(fd);
	int ps = wait_status(prog);
	cr_assert(WIFEXITED(ls) && WEXITSTATUS(ls) == EXIT_OK, "loader status %#x: %s", ls,
		  read_file(lerr));
	cr_assert(WIFEXITED(ps) && WEXITSTATUS(ps) == 0, "python3 status %#x: %s", ps,
		  read_file(err));
	double forks = 0, failed = -1;
	char *text = read_file(out);
	cr_assert_eq(text_value(text, "done forks", &forks), 0, "python3's output: %s", text);
	cr_assert_eq(text_value(text, "failed", &failed), 0, "python3's output: %s", text);
	cr_expect_gt(forks, 0, "no child was forked: %s", text);
	cr_expect_eq(failed, 0, "%.0f of %.0f children failed: %s", failed, forks, read_file(err));
	free(text);
	char *f = read_file(folded);
	cr_expect(f && strstr(f, ";keep_records ("), "the parent has no Python frames: %.2000s",
		  f ? f : "");
	free(f);
}

Test(python, child_forked_while_detached, .init = setup, .fini = teardown, .timeout = 300)
{
	char out[128], err[128], go[128], stop[128], folded[128], lerr[2][128], pid[16];

	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(err, sizeof(err), "%s/err", dir);
	snprintf(go, sizeof(go), "%s/go", dir);
	snprintf(stop, sizeof(stop), "%s/stop", dir);
	snprintf(folded, sizeof(folded), "%s/alloc.folded", dir);
	snprintf(lerr[0], sizeof(lerr[0]), "%s/loader0.err", dir);
	snprintf(lerr[1], sizeof(lerr[1]), "%s/loader1.err", dir);
	const char *pargv[] = {PYTHON, SCRIPT, "child", go, stop, NULL};
	pid_t prog = spawn(pargv, out, err);
	cr_assert_eq(wait_text(out, "ready"), 0, "python3 never got ready: %s", read_file(err));
	/* The library goes in, and the tracer goes. */
	snprintf(pid, sizeof(pid), "%d", (int)prog);
	const char *l0[] = {LOADER, "attach", pid, "-d", "0.5", "-o", "/dev/null", NULL};
	int ls = wait_status(spawn(l0, "/dev/null", lerr[0]));
	cr_assert(WIFEXITED(ls) && WEXITSTATUS(ls) == EXIT_OK, "loader status %#x: %s", ls,
		  read_file(lerr[0]));
	int fd = open(go, O_WRONLY | O_CREAT, 0644);
	close(fd);
	cr_assert_eq(wait_text(out, "child "), 0, "no child: %s", read_file(err));
	double child = 0;
	char *text = read_file(out);
	cr_assert_eq(text_value(text, "child", &child), 0, "%s", text);
	free(text);
	snprintf(pid, sizeof(pid), "%.0f", child);
	const char *l1[] = {LOADER, "attach",  pid,  "--rate", RATE, "-d",
			    "1",    "--lines", "-o", folded,   NULL};
	ls = wait_status(spawn(l1, "/dev/null", lerr[1]));
	fd = open(stop, O_WRONLY | O_CREAT, 0644);
	close(fd);
	int ps = wait_status(prog);
	cr_assert(WIFEXITED(ls) && WEXITSTATUS(ls) == EXIT_OK, "loader status %#x: %s", ls,
		  read_file(lerr[1]));
	cr_assert(WIFEXITED(ps) && WEXITSTATUS(ps) == 0, "python3 status %#x: %s", ps,
		  read_file(err));
	cr_expect_eq(wait_text(out, "child status 0"), 0, "the child failed: %s", read_file(out));
	char *log = read_file(lerr[1]);
	cr_expect_null(strstr(log, "had no memprof probes"), "the child was injected: %s", log);
	free(log);
	char *f = read_file(folded);
	cr_expect(f && strstr(f, ";keep_records ("), "the child was not profiled: %.2000s",
		  f ? f : "");
	free(f);
}
