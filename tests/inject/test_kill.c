/*
 * The target survives the loader's death at any instant of an injection.
 * Each trial starts a fresh 16-thread malloc hammer (tests/inject/progs/
 * hammer.c), starts the loader on it (which injects the malloc host), and
 * sends the loader SIGKILL, SIGINT or SIGTERM at a random instant: either
 * anywhere in its first KILL_WINDOW_S, or just after the injector seized a
 * thread (its TracerPid), where the call is made.  Then the hammer is told
 * to stop: it must finish its work and exit 0 with no corrupted byte, and
 * the loader must be gone.  No target death, no hang.
 *
 * MEMPROF_TEST_SEED fixes the draws (the seed is printed);
 * MEMPROF_TEST_LONG=1 runs KILL_TRIALS_LONG trials per signal.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "inject_util.h"
#include "testlib.h"

#define KILL_TRIALS 60
#define KILL_TRIALS_LONG 1000
/* Kills drawn uniformly in the loader's first KILL_WINDOW_S... */
#define KILL_WINDOW_S 0.3
/* ... or within this long after a thread of the target was seized. */
#define KILL_AFTER_SEIZE_S 0.004

/* A wait status, or -1 if pid is still running after timeout_s. */
static int wait_bounded(pid_t pid, double timeout_s)
{
	for (double end = test_now_s() + timeout_s; test_now_s() < end; test_sleep_s(0.002)) {
		int status;

		if (waitpid(pid, &status, WNOHANG) == pid)
			return status;
	}
	return -1;
}

/* One trial: 0 when the target came through, else a message. */
static void trial(int sig, int r, unsigned seed)
{
	struct session s;
	char stop[128], pid[16], log[128];
	pid_t loader;
	int status, reaped = 0;

	session_init(&s);
	snprintf(stop, sizeof(stop), "%s/stop", s.dir);
	snprintf(log, sizeof(log), "%s/loader.err", s.dir);
	const char *argv[] = {INJECT_PROGS "/hammer", "@READY", stop, "16", NULL};
	session_start(&s, argv, NULL);
	snprintf(pid, sizeof(pid), "%d", (int)s.prog);
	loader = fork();
	cr_assert_geq(loader, 0);
	if (loader == 0) {
		int e = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (e < 0 || dup2(e, 2) < 0)
			_exit(126);
		execl(INJECT_LOADER, INJECT_LOADER, "attach", pid, "-d", "0.3", "-o", "/dev/null",
		      (char *)NULL);
		_exit(127);
	}
	if (r % 2 == 0) {
		test_sleep_s(test_uniform() * KILL_WINDOW_S);
	} else {
		double end = test_now_s() + TEST_EVENT_TIMEOUT_S;

		/* (A loader that is done before a seize is seen is reaped here.) */
		while (!inject_traced(s.prog) && test_now_s() < end &&
		       !(reaped = waitpid(loader, &status, WNOHANG) == loader))
			;
		test_sleep_s(test_uniform() * KILL_AFTER_SEIZE_S);
	}
	if (!reaped)
		kill(loader, sig);
	/*
	 * The target goes on: it stops when told to, with every byte right.
	 * It is asked first, while the loader may still be on its way out.
	 */
	cr_assert_eq(close(open(stop, O_WRONLY | O_CREAT, 0644)), 0);
	status = wait_bounded(s.prog, TEST_EVENT_TIMEOUT_S);
	if (status == -1) {
		char cmd[400];

		snprintf(cmd, sizeof(cmd),
			 "cd /proc/%d/task && for t in *; do echo \"thread $t: $(grep State "
			 "$t/status) $(cat $t/syscall) $(cat $t/wchan)\"; cat $t/stack; done >&2; "
			 "gdb -batch -p %d -ex 'thread apply all bt' -ex 'info registers' >&2",
			 (int)s.prog, (int)s.prog);
		if (system(cmd))
			fprintf(stderr, "(no status)\n");
		session_end(&s); /* kills it */
		cr_assert_fail("seed %u trial %d (signal %d): the target hangs", seed, r, sig);
	}
	s.prog = 0;
	char *out = slurp(s.out);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "seed %u trial %d (signal %d): target status %#x: %s", seed, r, sig, status, out);
	cr_expect_not_null(strstr(out, "errors 0"), "seed %u trial %d: %s", seed, r, out);
	free(out);
	/*
	 * The loader exits too.  After SIGKILL nothing of it runs: only the
	 * kernel's side of its exit is left (unregistering uprobes can take
	 * long on a loaded machine), so a slow exit is logged, not blamed.
	 */
	status = reaped ? 0 : wait_bounded(loader, TEST_EVENT_TIMEOUT_S);
	if (status == -1) {
		char cmd[160];

		snprintf(cmd, sizeof(cmd),
			 "cat /proc/%d/stack >&2; gdb -batch -p %d -ex 'thread apply all bt' >&2",
			 (int)loader, (int)loader);
		fprintf(stderr, "kill: trial %d: the loader is still exiting, in the kernel:\n", r);
		if (system(cmd))
			fprintf(stderr, "(no stack)\n");
		kill(loader, SIGKILL);
		waitpid(loader, NULL, 0);
	}
	if (sig != SIGKILL)
		cr_expect_neq(status, -1, "seed %u trial %d (signal %d): the loader did not exit",
			      seed, r, sig);
	session_end(&s);
}

static void kill_trials(int sig)
{
	const char *seed_env = getenv("MEMPROF_TEST_SEED"), *long_env = getenv("MEMPROF_TEST_LONG");
	unsigned seed = seed_env ? (unsigned)strtoul(seed_env, NULL, 0) : (unsigned)time(NULL);
	int n = long_env && *long_env == '1' ? KILL_TRIALS_LONG : KILL_TRIALS;

	fprintf(stderr, "kill: signal %d, seed %u (MEMPROF_TEST_SEED), %d trials\n", sig, seed, n);
	srand(seed);
	for (int r = 0; r < n; r++)
		trial(sig, r, seed);
}

Test(inject_kill, sigkill_at_random_instants, .timeout = 7200)
{
	kill_trials(SIGKILL);
}

Test(inject_kill, sigint_at_random_instants, .timeout = 7200)
{
	kill_trials(SIGINT);
}

Test(inject_kill, sigterm_at_random_instants, .timeout = 7200)
{
	kill_trials(SIGTERM);
}
