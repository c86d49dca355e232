/*
 * A running python3 survives its loader's death at any instant of an
 * attach: during the injection of the Python host, while the host's
 * watcher takes the GIL and puts its hooks in, while sampling.  Each trial
 * starts a fresh `three_funcs.py run`, attaches the loader and sends it
 * SIGKILL (one trial in four SIGINT) at a random instant: anywhere in its
 * first KILL_WINDOW_S, just after the injector seized the thread, or just
 * after the target began sampling.  Then the program must go on with its
 * rounds, see its own allocator back if it saw ours (the hooks go with the
 * tracer: no program pays for a dead one), stop when told and exit 0.
 *
 * MEMPROF_TEST_SEED fixes the draws (the seed is printed);
 * MEMPROF_TEST_LONG=1 runs KILL_TRIALS_LONG trials.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pyrun.h"
#include "testlib.h"

#define KILL_TRIALS 24
#define KILL_TRIALS_LONG 400
/* Kills drawn uniformly in the loader's first KILL_WINDOW_S (its start-up
 * and the injection take most of it)... */
#define KILL_WINDOW_S 1.0
/* ... or within this long after the injector seized the thread... */
#define KILL_AFTER_SEIZE_S 0.004
/* ... or within this long after the target began sampling. */
#define KILL_AFTER_SAMPLING_S 0.05

/* Is pid under ptrace (its TracerPid)? */
static int seized(pid_t pid)
{
	char path[64], *status;
	double tracer = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	status = read_file(path);
	int rc = status && text_value(status, "TracerPid:", &tracer) == 0 && tracer != 0;
	free(status);
	return rc;
}

/* Has the loader pid ended?  Reaps it. */
static int ended(pid_t pid)
{
	int status;

	return waitpid(pid, &status, WNOHANG) == pid;
}

/* Wait until done(arg) holds or the loader ends: 1 if the loader ended (reaped). */
static int wait_for(pid_t loader, int (*done)(const void *), const void *arg, const char *what)
{
	for (double end = test_now_s() + TEST_EVENT_TIMEOUT_S; test_now_s() < end;
	     test_sleep_s(0.0005)) {
		if (done(arg))
			return 0;
		if (ended(loader))
			return 1;
	}
	cr_assert_fail("the loader neither ended nor %s", what);
	return 0;
}

/* Seized now, or the injection is over already (the seize was too short to see). */
static int is_seized(const void *arg)
{
	const struct pyrun *run = arg;
	char *log;
	int done;

	if (seized(run->prog))
		return 1;
	log = read_file(run->lerr);
	done = log && strstr(log, "had no memprof probes");
	free(log);
	return done;
}

static int is_sampling(const void *arg)
{
	char *log = read_file(arg);
	int on = log && strstr(log, "target sampling at rate");

	free(log);
	return on;
}

/* The last of "hooked" / "unhooked" in the program's output: 1, 0, or -1 (neither). */
/* 1: the program's last hook line says hooked, 0: unhooked, -1: none yet. */
static int last_hook_line(const char *path)
{
	char *lines = pyrun_hook_lines(path);
	size_t n = strlen(lines);
	int last = !n ? -1 : n >= 9 && !strcmp(lines + n - 9, "unhooked\n") ? 0 : 1;

	free(lines);
	return last;
}

static void trial(int r, unsigned seed)
{
	int sig = r % 4 == 3 ? SIGINT : SIGKILL, reaped = 0;
	struct pyrun run;

	pyrun_setup();
	const char *pargv[] = {PYTHON, SCRIPT, "run", run.stop, NULL};
	pyrun_start(&run, pargv, NULL);
	const char *largs[] = {"--rate", RATE, "-o", "/dev/null", NULL};
	pyrun_attach(&run, largs);
	switch (r % 3) {
	case 0:
		test_sleep_s(test_uniform() * KILL_WINDOW_S);
		break;
	case 1:
		reaped = wait_for(run.loader, is_seized, &run, "seized the program");
		test_sleep_s(test_uniform() * KILL_AFTER_SEIZE_S);
		break;
	default:
		reaped = wait_for(run.loader, is_sampling, run.lerr, "saw it sampling");
		test_sleep_s(test_uniform() * KILL_AFTER_SAMPLING_S);
	}
	if (!reaped) {
		kill(run.loader, sig);
		pyrun_wait_status(run.loader);
	}
	run.loader = 0;
	/* The program goes on... */
	pyrun_wait_more_rounds(&run, 1);
	/* ... without our hooks once the tracer is gone. */
	for (double end = test_now_s() + TEST_EVENT_TIMEOUT_S; last_hook_line(run.out) == 1;
	     test_sleep_s(0.01))
		cr_assert_lt(test_now_s(), end, "seed %u trial %d (signal %d): the hooks stay: %s",
			     seed, r, sig, read_file(run.out));
	pyrun_finish(&run);
	cr_assert_eq(pyrun_wait_text(run.out, "done "), 0, "seed %u trial %d: %s", seed, r,
		     read_file(run.out));
	pyrun_teardown();
}

Test(python_kill, loader_killed_at_random_instants, .timeout = 3600)
{
	const char *seed_env = getenv("MEMPROF_TEST_SEED"), *long_env = getenv("MEMPROF_TEST_LONG");
	unsigned seed = seed_env ? (unsigned)strtoul(seed_env, NULL, 0) : (unsigned)time(NULL);
	int n = long_env && *long_env == '1' ? KILL_TRIALS_LONG : KILL_TRIALS;

	fprintf(stderr, "python kill: seed %u (MEMPROF_TEST_SEED), %d trials\n", seed, n);
	srand(seed);
	for (int r = 0; r < n; r++)
		trial(r, seed);
}
