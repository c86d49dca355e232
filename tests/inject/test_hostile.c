/*
 * Targets that make an injection hard: a thread calling setegid() in a
 * loop (glibc's SIGSETXID broadcast, which an injected thread must never
 * hold off), and two loaders racing to inject it.  The injection completes
 * once, the target goes on and exits 0.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "inject_util.h"
#include "testlib.h"

Test(inject_hostile, a_setxid_loop_in_another_thread, .timeout = 300)
{
	struct session s;
	char stop[128];
	pid_t loader;
	int status;

	session_init(&s);
	snprintf(stop, sizeof(stop), "%s/stop", s.dir);
	const char *argv[] = {INJECT_PROGS "/setxid", "@READY", stop, NULL};
	session_start(&s, argv, NULL);
	const char *extra[] = {"-d", "0.3", "-o", "/dev/null", NULL};
	const char *log = session_loader(&s, extra, 0, &loader, &status);
	char *text = slurp(log);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == EXIT_OK, "%s", text);
	cr_expect_not_null(strstr(text, "loaded "), "%s", text);
	free(text);
	cr_assert_eq(close(open(stop, O_WRONLY | O_CREAT, 0644)), 0);
	session_expect_finish(&s, "setxid calls ");
	session_end(&s);
}

/* The distinct files (inodes) of process pid's mappings whose name holds needle. */
static int mapped_files(pid_t pid, const char *needle)
{
	char path[64], line[512];
	unsigned long inodes[64];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long inode;
		int seen = 0;

		if (!strstr(line, needle) || sscanf(line, "%*s %*s %*s %*s %lu", &inode) != 1)
			continue;
		for (int i = 0; i < n; i++)
			seen |= inodes[i] == inode;
		if (!seen && n < 64)
			inodes[n++] = inode;
	}
	fclose(f);
	return n;
}

static pid_t start_loader(pid_t prog, const char *log)
{
	char pid[16];
	pid_t loader = fork();

	cr_assert_geq(loader, 0);
	if (loader == 0) {
		int e = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		snprintf(pid, sizeof(pid), "%d", (int)prog);
		if (e < 0 || dup2(e, 2) < 0)
			_exit(126);
		execl(INJECT_LOADER, INJECT_LOADER, "attach", pid, "-d", "0.3", "-o", "/dev/null",
		      (char *)NULL);
		_exit(127);
	}
	return loader;
}

/*
 * Two loaders on one process without probes: the first is stopped while it
 * holds a thread of the target (mid-injection), the second starts then.
 * The second waits for the first (the injection lock) instead of injecting
 * a copy of its own, and traces once the first has loaded the library:
 * one copy in the target, both loaders exit 0.  A thread is held for a
 * few milliseconds only: when the first loader injects before the test
 * saw it hold one (a busy machine), the run is made again on a fresh
 * target (at most SEIZE_TRIES times).
 */
#define SEIZE_TRIES 5

/* Wait until a thread of pid is traced (1), or the loader has exited (0: waited for). */
static int traced_or_loader_done(pid_t pid, pid_t loader, int *status)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (inject_traced(pid))
			return 1;
		if (waitpid(loader, status, WNOHANG) == loader)
			return 0;
		clock_gettime(CLOCK_MONOTONIC, &t);
		cr_assert((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) * 1e-9 <
			      TEST_EVENT_TIMEOUT_S,
			  "the first loader neither seized a thread nor ended");
	}
}

Test(inject_hostile, a_second_loader_waits_for_the_first_injection, .timeout = 300)
{
	struct session s;
	char stop[128], log[2][128];
	pid_t loaders[2];
	int injected = 0, caught = 0, status;

	for (int try = 0; try < SEIZE_TRIES && !caught; try++) {
		session_init(&s);
		snprintf(stop, sizeof(stop), "%s/stop", s.dir);
		const char *argv[] = {INJECT_PROGS "/hammer", "@READY", stop, "4", NULL};
		session_start(&s, argv, NULL);
		for (int i = 0; i < 2; i++)
			snprintf(log[i], sizeof(log[i]), "%s/loader%d.log", s.dir, i);
		loaders[0] = start_loader(s.prog, log[0]);
		caught = traced_or_loader_done(s.prog, loaders[0], &status);
		if (!caught) {
			char *text = slurp(log[0]);

			cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == EXIT_OK,
				  "the first loader failed: status %#x: %s", status, text);
			free(text);
			session_end(&s);
		}
	}
	cr_assert(caught, "the first loader injected before it was seen holding a thread, %d times",
		  SEIZE_TRIES);
	cr_assert_eq(kill(loaders[0], SIGSTOP), 0);
	loaders[1] = start_loader(s.prog, log[1]);
	/* The second one waits (sleeps) for the lock; or, unlocked, goes on. */
	wait_in_syscall(loaders[1], SYS_clock_nanosleep, TEST_EVENT_TIMEOUT_S);
	cr_assert_eq(kill(loaders[0], SIGCONT), 0);
	for (int i = 0; i < 2; i++) {
		int status = session_wait(loaders[i]);
		char *text = slurp(log[i]);

		cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == EXIT_OK,
			  "loader %d: status %#x: %s", i, status, text);
		injected += strstr(text, "loaded ") != NULL;
		free(text);
	}
	cr_expect_eq(injected, 1, "%d loaders injected", injected);
	cr_expect_eq(mapped_files(s.prog, "/memfd:libmemprof-preload.so"), 1,
		     "not one copy of the library");
	cr_assert_eq(close(open(stop, O_WRONLY | O_CREAT, 0644)), 0);
	session_expect_finish(&s, "errors 0");
	session_end(&s);
}

/*
 * The only thread the injector may use has a 16 KiB stack, most of it in
 * use (the main thread waits in pthread_join): dlopen runs on the stub's
 * own stack, the thread's frames are untouched and its read goes on.
 */
Test(inject_hostile, a_thread_with_a_small_full_stack, .timeout = 300)
{
	struct session s;
	char fifo[128], note[64];
	pid_t tid;

	session_init(&s);
	snprintf(fifo, sizeof(fifo), "%s/fifo", s.dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	const char *argv[] = {INJECT_PROGS "/smallstack", "@READY", fifo, NULL};
	session_start(&s, argv, NULL);
	char *ready = slurp(s.ready);
	tid = (pid_t)strtol(ready, NULL, 10);
	free(ready);
	cr_assert_eq(wait_in_syscall(tid, SYS_read, TEST_EVENT_TIMEOUT_S), 0,
		     "the small thread never blocked in read");
	char *text = session_inject_briefly(&s);
	snprintf(note, sizeof(note), "its thread %d paused", (int)tid);
	cr_expect_not_null(strstr(text, note), "the small thread was not the one used: %s", text);
	free(text);
	fifo_put(fifo, "x");
	session_expect_finish(&s, "result=ok\n");
	session_end(&s);
}

/*
 * The thread used holds values in xmm0-xmm15 across the injection (it
 * spins on a flag in its own code): they are all there afterwards.
 */
Test(inject_hostile, the_fp_registers_of_the_thread_used, .timeout = 300)
{
	struct session s;
	char stop[128], note[64];
	pid_t tid;

	session_init(&s);
	snprintf(stop, sizeof(stop), "%s/stop", s.dir);
	const char *argv[] = {INJECT_PROGS "/fpstate", "@READY", stop, NULL};
	session_start(&s, argv, NULL);
	char *ready = slurp(s.ready);
	tid = (pid_t)strtol(ready, NULL, 10);
	free(ready);
	char *text = session_inject_briefly(&s);
	snprintf(note, sizeof(note), "its thread %d paused", (int)tid);
	cr_expect_not_null(strstr(text, note), "the spinning thread was not the one used: %s",
			   text);
	free(text);
	cr_assert_eq(close(open(stop, O_WRONLY | O_CREAT, 0644)), 0);
	session_expect_finish(&s, "result=ok\n");
	session_end(&s);
}

/*
 * A library bound to a private allocator (RTLD_DEEPBIND) keeps it after the
 * injection: its GOT slots, which do not hold the process's allocator, are
 * left alone, so its blocks never reach another allocator (whose free of a
 * foreign block would abort).
 */
Test(inject_hostile, a_library_with_a_private_allocator, .timeout = 300)
{
	struct session s;
	char stop[128];

	session_init(&s);
	snprintf(stop, sizeof(stop), "%s/stop", s.dir);
	const char *argv[] = {INJECT_PROGS "/privmain", "@READY", stop, INJECT_PROGS, NULL};
	session_start(&s, argv, NULL);
	char *text = session_inject_briefly(&s);
	free(text);
	cr_assert_eq(close(open(stop, O_WRONLY | O_CREAT, 0644)), 0);
	session_expect_finish(&s, "result=ok\n");
	session_end(&s);
}

/*
 * The only thread sleeps in read() under a frame whose unwritten array
 * holds stale return addresses into free (an earlier, deeper call chain
 * left them): its real call chain is safe, so it is used.  Judged by its
 * stack words, it would be refused for ever.
 */
Test(inject_hostile, stale_allocator_words_in_a_live_frame, .timeout = 300)
{
	struct session s;
	char fifo[128];

	session_init(&s);
	snprintf(fifo, sizeof(fifo), "%s/fifo", s.dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	const char *argv[] = {INJECT_PROGS "/stale_words", "@READY", fifo, NULL};
	session_start(&s, argv, NULL);
	cr_assert_eq(wait_in_syscall(s.prog, SYS_read, TEST_EVENT_TIMEOUT_S), 0,
		     "the program never blocked in read");
	char *text = session_inject_briefly(&s);
	cr_expect_not_null(strstr(text, "judged by their call chain 1"), "%s", text);
	free(text);
	fifo_put(fifo, "x");
	session_expect_finish(&s, "result=ok\n");
	session_end(&s);
}

/*
 * The main thread waits in pthread_join (unsafe: join takes the stack-cache
 * lock) while two threads allocate: every thread stopped is judged by its
 * unwound chain, the refused main thread too, and none by a scan.
 */
Test(inject_hostile, threads_refused_by_their_chain_are_counted_so, .timeout = 300)
{
	struct session s;
	char stop[128];

	session_init(&s);
	snprintf(stop, sizeof(stop), "%s/stop", s.dir);
	const char *argv[] = {INJECT_PROGS "/hammer", "@READY", stop, "2", NULL};
	session_start(&s, argv, NULL);
	cr_assert_eq(wait_in_syscall(s.prog, SYS_futex, TEST_EVENT_TIMEOUT_S), 0,
		     "the main thread never waited in pthread_join");
	char *text = session_inject_briefly(&s);
	cr_expect_not_null(
	    strstr(text, "by the chain and a stack scan above it 0, by a stack scan 0"), "%s",
	    text);
	cr_expect_null(strstr(text, "judged by their call chain 0"), "%s", text);
	free(text);
	cr_assert_eq(close(open(stop, O_WRONLY | O_CREAT, 0644)), 0);
	session_expect_finish(&s, "errors 0\n");
	session_end(&s);
}

/*
 * bash waiting in `read` (its large frames keep stale words of earlier
 * calls into the allocator): injected, then it reads its line and exits 0.
 */
Test(inject_hostile, bash_waiting_in_read, .timeout = 300)
{
	struct session s;
	char fifo[128];

	session_init(&s);
	snprintf(fifo, sizeof(fifo), "%s/fifo", s.dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	const char *argv[] = {
	    "/bin/bash", "-c",	   "echo ready > \"$1\"; read x <> \"$2\"; echo \"got $x\"",
	    "bash",	 "@READY", fifo,
	    NULL};
	session_start(&s, argv, NULL);
	cr_assert_eq(wait_in_syscall(s.prog, SYS_read, TEST_EVENT_TIMEOUT_S), 0,
		     "bash never blocked in read");
	char *text = session_inject_briefly(&s);
	free(text);
	fifo_put(fifo, "line\n");
	session_expect_finish(&s, "got line\n");
	session_end(&s);
}
