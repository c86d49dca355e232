/*
 * A target that exits at any instant of the loader's start-up: the loader
 * says so in one line and exits 2 (it exited while being attached, whatever
 * step noticed), or, once attached, writes what it collected and exits 0.
 * Never another code, a second line of error, or a hang.
 *
 * The kill instants are drawn from the start-up time measured here first,
 * so they cover every step (scan, BPF load, rate, uprobes) on any machine.
 * MEMPROF_TEST_SEED fixes the draw (the seed is printed);
 * MEMPROF_TEST_LONG=1 runs STARTUP_RUNS_LONG kills instead of STARTUP_RUNS.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attach_util.h"
#include "exit_codes.h"
#include <linux/types.h>
#include "memprof_probe_abi.h"

#define STARTUP_RUNS 12
#define STARTUP_RUNS_LONG 200

/* The loader's exit code; the test fails if it is still running at the bound. */
static int wait_loader(pid_t l)
{
	for (double end = test_now_s() + TEST_EVENT_TIMEOUT_S; test_now_s() < end;
	     test_sleep_s(0.005)) {
		int st;

		if (waitpid(l, &st, WNOHANG) == l)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	}
	kill(l, SIGKILL);
	wait_exit(l);
	cr_assert_fail("the loader hangs after its target exited");
	return -1;
}

static pid_t start_trigger(const char *dir)
{
	char out[300];
	const char *targs[] = {"--seconds", "600", NULL};
	pid_t t;

	snprintf(out, sizeof(out), "%s/trigger.out", dir);
	t = trigger_start(dir, out, targs);
	cr_assert_gt(t, 0, "the trigger did not start");
	return t;
}

/* One start-up: the time from the loader's start to its --ready-file. */
static double measure_startup(const char *dir)
{
	char err[300], pid[16];
	pid_t t = start_trigger(dir), l;
	double t0;
	int code;

	snprintf(err, sizeof(err), "%s/measure.err", dir);
	snprintf(pid, sizeof(pid), "%d", (int)t);
	const char *args[] = {"attach", pid, "-d", "600", "-o", "/dev/null", NULL};
	t0 = test_now_s();
	l = loader_start_ready(dir, err, args, &code);
	cr_assert_gt(l, 0, "the loader did not attach (exit %d): %s", code, read_file(err));
	t0 = test_now_s() - t0;
	kill(l, SIGINT);
	cr_assert_eq(wait_exit(l), EXIT_OK);
	kill(t, SIGKILL);
	wait_exit(t);
	return t0;
}

Test(startup, a_target_exiting_at_any_instant_of_the_attach, .timeout = 1800)
{
	char dir[128], err[256], out[256], ready[256], pid[16];
	const char *seed_env = getenv("MEMPROF_TEST_SEED"), *long_env = getenv("MEMPROF_TEST_LONG");
	unsigned seed = seed_env ? (unsigned)strtoul(seed_env, NULL, 0) : (unsigned)time(NULL);
	int runs = long_env && *long_env == '1' ? STARTUP_RUNS_LONG : STARTUP_RUNS;
	int before = 0, after = 0;
	double startup;

	tmpdir_make(dir, sizeof(dir));
	snprintf(err, sizeof(err), "%s/loader.err", dir);
	snprintf(out, sizeof(out), "%s/out.folded", dir);
	snprintf(ready, sizeof(ready), "%s/loader.ready", dir);
	startup = measure_startup(dir);
	srand(seed);
	fprintf(stderr, "startup: seed %u (MEMPROF_TEST_SEED), %d kills, start-up %.3f s\n", seed,
		runs, startup);
	for (int r = 0; r < runs; r++) {
		pid_t t = start_trigger(dir), l;
		/* Even runs: anywhere in the start-up; odd: just after the attach. */
		double u = (double)rand() / RAND_MAX;
		int code;
		char *text;

		snprintf(pid, sizeof(pid), "%d", (int)t);
		unlink(out);
		unlink(ready);
		const char *args[] = {"attach",	      pid,   "-d", "600", "-o", out,
				      "--ready-file", ready, NULL};
		l = loader_start(err, args);
		if (r % 2 == 0) {
			test_sleep_s(u * startup * 1.2);
		} else {
			cr_assert_eq(wait_file(ready, TEST_EVENT_TIMEOUT_S), 0, "run %d: no attach",
				     r);
			test_sleep_s(u * 0.2);
		}
		kill(t, SIGKILL);
		wait_exit(t);
		code = wait_loader(l);
		text = read_file(err);
		cr_assert_not_null(text);
		if (code == EXIT_TARGET) {
			before++;
			cr_expect_eq(file_lines(err), 1, "run %d: not one line: %s", r, text);
			cr_expect(strstr(text, "exited while being attached") ||
				      strstr(text, "no process with pid"),
				  "run %d: %s", r, text);
		} else {
			after++;
			cr_expect_eq(code, EXIT_OK, "run %d: exit %d: %s", r, code, text);
			cr_expect(strstr(text, "exited; writing what was collected"), "run %d: %s",
				  r, text);
			cr_expect(access(out, F_OK) == 0, "run %d: no profile written", r);
		}
		cr_expect(!strstr(text, "cannot"), "run %d: an error besides the exit: %s", r,
			  text);
		free(text);
	}
	fprintf(stderr, "startup: %d exits before the attach, %d after\n", before, after);
	cr_expect_gt(after, 0, "no kill landed after the attach");
}

/*
 * --ready-file: written whole, with the traced PID, once every probe is
 * attached (the trigger's sample semaphore is up by then); an older file is
 * removed first, even when the attach then fails; a path that cannot be
 * written fails in one line before the target is touched.
 */
Test(startup, the_ready_file_says_attached)
{
	char dir[128], err[256], ready[256], pid[16], bad[300], *text;
	struct memprof_probe_control ctl;
	pid_t t, l;
	int code;
	FILE *f;

	tmpdir_make(dir, sizeof(dir));
	snprintf(err, sizeof(err), "%s/loader.err", dir);
	snprintf(ready, sizeof(ready), "%s/loader-0.ready", dir);
	t = start_trigger(dir);
	snprintf(pid, sizeof(pid), "%d", (int)t);
	const char *args[] = {"attach", pid,  "-d",	   "600", "--rate",
			      "0.01",	"-o", "/dev/null", NULL};
	l = loader_start_ready(dir, err, args, &code);
	cr_assert_gt(l, 0, "the loader did not attach (exit %d)", code);
	text = read_file(ready);
	cr_assert_not_null(text);
	cr_expect_eq(strtol(text, NULL, 10), (long)t, "ready file: '%s'", text);
	cr_expect_eq(file_lines(ready), 1);
	free(text);
	cr_assert_eq(target_control(t, &ctl), 0);
	cr_expect_eq(ctl.requested_rate, 0.01, "the rate was not asked for before ready");
	kill(l, SIGINT);
	cr_expect_eq(wait_exit(l), EXIT_OK);
	cr_expect_eq(access(ready, F_OK), 0, "the ready file was removed at the end");

	/* An older file goes at the start, even when the attach fails. */
	f = fopen(ready, "w");
	cr_assert(f && fputs("stale\n", f) >= 0 && !fclose(f));
	kill(t, SIGKILL);
	wait_exit(t);
	const char *gone[] = {"attach", pid, "--ready-file", ready, NULL};
	cr_expect_eq(loader_run(err, gone), EXIT_TARGET);
	cr_expect_neq(access(ready, F_OK), 0, "a stale ready file survived");

	/* A path that cannot be written: one line, exit 4, the target untouched. */
	t = start_trigger(dir);
	snprintf(pid, sizeof(pid), "%d", (int)t);
	snprintf(bad, sizeof(bad), "%s/no/such/dir/ready", dir);
	const char *badargs[] = {"attach", pid, "--rate", "0.02", "--ready-file", bad, NULL};
	cr_expect_eq(loader_run(err, badargs), EXIT_FAILED);
	cr_expect_eq(file_lines(err), 1);
	cr_expect(file_contains(err, "cannot write"), "%s", read_file(err));
	cr_assert_eq(target_control(t, &ctl), 0);
	cr_expect_neq(ctl.requested_rate, 0.02, "the rate was written before the failure");
	kill(t, SIGKILL);
	wait_exit(t);
}
