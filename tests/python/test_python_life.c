/*
 * The Python host's life in a running python3 (Debian's 3.11): attach,
 * detach, attach again, forks, native code under Python, an interpreter it
 * cannot serve.  Runs are driven by events (pyrun.h).
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
 * runs, sees its hooks go (no tracer listens in a child forked while
 * traced: it must not pay for one) and exits 0, and the parent is profiled
 * on.
 *
 * child_forked_while_detached: a child forked after a detach has a watcher
 * of its own: attached, it is profiled (no second injection).
 *
 * embedded_interpreter: a program that is not python3 and embeds CPython
 * through libpython3.11.so gets the Python host, and its profile names the
 * script's functions and lines.
 *
 * unsupported_cpython_refused: a program exporting the CPython API with
 * Py_Version 3.12.1 is refused in one line naming the version, exit 2, and
 * nothing is loaded into it.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exit_codes.h"
#include "pyrun.h"
#include "testlib.h"

/* The hooked and unhooked lines of the program's output, in order (malloc'ed). */
/* Wait until the hooked and unhooked lines end with want. */
static void wait_hook_lines(const char *path, const char *want, int attach)
{
	for (double waited = 0;; waited += 0.01) {
		char *lines = pyrun_hook_lines(path);
		size_t n = strlen(lines), w = strlen(want);
		int done = n >= w && !strcmp(lines + n - w, want);

		free(lines);
		if (done)
			return;
		cr_assert_lt(waited, TEST_EVENT_TIMEOUT_S,
			     "the hooks did not come and go with attach %d: %s", attach,
			     read_file(path));
		const struct timespec tick = {0, 10000000};
		nanosleep(&tick, NULL);
	}
}

Test(python, detach_and_attach_again, .init = pyrun_setup, .fini = pyrun_teardown, .timeout = 300)
{
	char views[2][128], path[300];
	char *log[2];
	struct pyrun r;

	const char *pargv[] = {PYTHON, SCRIPT, "run", r.stop, NULL};
	pyrun_start(&r, pargv, NULL);
	for (int i = 0; i < 2; i++) {
		snprintf(views[i], sizeof(views[i]), "%s/views%d", pyrun_dir, i);
		const char *largs[] = {"--rate", RATE, "--lines", "--all-views", views[i], NULL};
		pyrun_attach(&r, largs);
		pyrun_wait_rounds(&r, 1);
		/* The program saw its allocator wrapped while attached... */
		wait_hook_lines(r.out, i == 0 ? "hooked\n" : "unhooked\nhooked\n", i);
		pyrun_detach(&r);
		/* ... and its own after. */
		wait_hook_lines(r.out,
				i == 0 ? "hooked\nunhooked\n" : "unhooked\nhooked\nunhooked\n", i);
		log[i] = read_file(r.lerr);
	}
	pyrun_finish(&r);
	cr_expect_not_null(strstr(log[0], "had no memprof probes"), "no injection: %s", log[0]);
	cr_expect_null(strstr(log[1], "had no memprof probes"), "injected twice: %s", log[1]);
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/alloc.folded", views[i]);
		char *folded = read_file(path);
		cr_expect(folded && strstr(folded, ";keep_records ("),
			  "attach %d has no Python frames: %.2000s", i, folded ? folded : "");
		free(folded);
		free(log[i]);
	}
}

Test(python, c_code_under_python, .init = pyrun_setup, .fini = pyrun_teardown, .timeout = 300)
{
	char folded[128];
	struct pyrun r;

	pyrun_path(folded, sizeof(folded), "alloc.folded");
	const char *pargv[] = {PYTHON, CTYPES_SCRIPT, r.stop, NULL};
	pyrun_start(&r, pargv, NULL);
	const char *largs[] = {"--rate", RATE, "--lines", "--native", "-o", folded, NULL};
	pyrun_attach(&r, largs);
	/* 5 rounds of 100 calls of 50,000 bytes: about 300 samples. */
	pyrun_wait_rounds(&r, 5);
	pyrun_finish(&r);
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

/* Children forked while the parent is hooked. */
#define FORK_HOOKED_CHILDREN 3

Test(python, children_of_a_fork, .init = pyrun_setup, .fini = pyrun_teardown, .timeout = 300)
{
	char folded[128];
	struct pyrun r;

	pyrun_path(folded, sizeof(folded), "alloc.folded");
	const char *pargv[] = {PYTHON, SCRIPT, "fork", r.stop, NULL};
	pyrun_start(&r, pargv, NULL);
	const char *largs[] = {"--rate", RATE, "--lines", "-o", folded, NULL};
	pyrun_attach(&r, largs);
	/* Each round line is a child forked and ended; sampling on, the parent is hooked. */
	pyrun_wait_rounds(&r, FORK_HOOKED_CHILDREN);
	pyrun_finish(&r);
	double forks = 0, failed = -1, hooked = 0;
	char *text = read_file(r.out);
	cr_assert_eq(text_value(text, "done forks", &forks), 0, "python3's output: %s", text);
	cr_assert_eq(text_value(text, "failed", &failed), 0, "python3's output: %s", text);
	cr_assert_eq(text_value(text, "hooked", &hooked), 0, "python3's output: %s", text);
	cr_expect_geq(hooked, FORK_HOOKED_CHILDREN, "%.0f children forked hooked: %s", hooked,
		      text);
	/* A child fails when its hooks stay (exit 3) or when it crashes. */
	cr_expect_eq(failed, 0, "%.0f of %.0f children failed: %s", failed, forks,
		     read_file(r.err));
	free(text);
	char *f = read_file(folded);
	cr_expect(f && strstr(f, ";keep_records ("), "the parent has no Python frames: %.2000s",
		  f ? f : "");
	free(f);
}

Test(python, child_forked_while_detached, .init = pyrun_setup, .fini = pyrun_teardown,
     .timeout = 300)
{
	char go[128], folded[128];
	struct pyrun r;

	pyrun_path(go, sizeof(go), "go");
	pyrun_path(folded, sizeof(folded), "alloc.folded");
	const char *pargv[] = {PYTHON, SCRIPT, "child", go, r.stop, NULL};
	pyrun_start(&r, pargv, NULL);
	/* The library goes in, and the tracer goes. */
	pyrun_attach(&r, NULL);
	cr_assert_eq(pyrun_wait_text(r.lerr, "target sampling at rate"), 0, "never sampling: %s",
		     read_file(r.lerr));
	pyrun_detach(&r);
	int fd = open(go, O_WRONLY | O_CREAT, 0644);
	close(fd);
	cr_assert_eq(pyrun_wait_text(r.out, "child "), 0, "no child: %s", read_file(r.err));
	double child = 0;
	char *text = read_file(r.out);
	cr_assert_eq(text_value(text, "child", &child), 0, "%s", text);
	free(text);
	/* The child's own run: its rounds, its loader. */
	struct pyrun c = r;
	c.prog = (pid_t)child;
	const char *largs[] = {"--rate", RATE, "--lines", "-o", folded, NULL};
	pyrun_attach(&c, largs);
	pyrun_wait_rounds(&c, 2);
	pyrun_detach(&c);
	char *log = read_file(c.lerr);
	cr_expect_null(strstr(log, "had no memprof probes"), "the child was injected: %s", log);
	free(log);
	pyrun_finish(&r);
	cr_expect_eq(pyrun_wait_text(r.out, "child status 0"), 0, "the child failed: %s",
		     read_file(r.out));
	char *f = read_file(folded);
	cr_expect(f && strstr(f, ";keep_records ("), "the child was not profiled: %.2000s",
		  f ? f : "");
	free(f);
}

Test(python, embedded_interpreter, .init = pyrun_setup, .fini = pyrun_teardown, .timeout = 300)
{
	char folded[128], want[64];
	struct pyrun r;

	pyrun_path(folded, sizeof(folded), "alloc.folded");
	const char *pargv[] = {EMBED, SCRIPT, "run", r.stop, NULL};
	pyrun_start(&r, pargv, NULL);
	const char *largs[] = {"--rate", RATE, "--lines", "-o", folded, NULL};
	pyrun_attach(&r, largs);
	pyrun_wait_rounds(&r, 2);
	pyrun_detach(&r);
	pyrun_finish(&r);
	char *log = read_file(r.lerr);
	cr_expect_not_null(strstr(log, "libmemprof-python.so"), "not the Python host: %s", log);
	free(log);
	char *f = read_file(folded);
	snprintf(want, sizeof(want), "/three_funcs.py:%d);",
		 pyrun_script_line("bytes(RECORD_BYTES)"));
	cr_expect(f && strstr(f, ";keep_records (/") && strstr(f, want),
		  "keep_records or its line %s is not in the embedding program's profile: %.2000s",
		  want, f ? f : "");
	free(f);
}

Test(python, unsupported_cpython_refused, .init = pyrun_setup, .fini = pyrun_teardown,
     .timeout = 120)
{
	char ready[128], out[128], err[128], lerr[128], pid[16];

	pyrun_path(ready, sizeof(ready), "ready");
	pyrun_path(out, sizeof(out), "out");
	pyrun_path(err, sizeof(err), "err");
	pyrun_path(lerr, sizeof(lerr), "loader.err");
	const char *argv[] = {FAKE, ready, NULL};
	pid_t prog = pyrun_spawn(argv, out, err);
	cr_assert_eq(wait_nonempty_file(ready, TEST_EVENT_TIMEOUT_S), 0,
		     "fake_cpython never ready");
	snprintf(pid, sizeof(pid), "%d", (int)prog);
	const char *largv[] = {LOADER, "attach", pid, "-d", "1", "-o", "/dev/null", NULL};
	int ls = pyrun_wait_status(pyrun_spawn(largv, "/dev/null", lerr));
	char *log = read_file(lerr);
	char maps[64];
	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)prog);
	char *m = read_file(maps);
	kill(prog, SIGTERM);
	pyrun_wait_status(prog);
	cr_assert(WIFEXITED(ls) && WEXITSTATUS(ls) == EXIT_TARGET, "loader status %#x: %s", ls,
		  log);
	cr_expect_not_null(strstr(log, "CPython 3.12.1"), "the refusal names no version: %s", log);
	cr_expect_not_null(strstr(log, "--inject-malloc"), "the refusal names no way out: %s", log);
	cr_expect_eq(strchr(log, '\n'), log + strlen(log) - 1, "not one line: %s", log);
	cr_expect_null(strstr(m, "memprof"), "something was loaded into it: %s", m);
	free(m);
	free(log);
}
