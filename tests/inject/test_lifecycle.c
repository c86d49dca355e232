/*
 * The malloc host injected into a running C program, over its life: blocks
 * allocated before the injection freed, reallocated and sized after it;
 * inject, detach, attach again (no second injection); a fork after the
 * injection; a library dlopen'ed after the injection (its calls redirected
 * too); a thread blocked in a system call when the injector uses it.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "inject_util.h"
#include "testlib.h"

#define LIB "libmemprof-preload.so"

struct outcome {
	char *out, *log;
};

/* Run inject-sites with args, inject and attach at rate, until it exits. */
static struct outcome run_sites(struct session *s, const char *const argv[],
				const char *const env[], const char *rate)
{
	pid_t loader;
	int lstatus;

	session_start(s, argv, env);
	const char *extra[] = {"--rate", rate, "--all-views", s->views, NULL};
	const char *log = session_loader(s, extra, 1, &loader, &lstatus);
	session_go(s);
	int pstatus = session_wait(s->prog);
	lstatus = session_wait(loader);
	struct outcome o = {slurp(s->out), slurp(log)};
	char *err = slurp(s->err);
	cr_assert(WIFEXITED(pstatus) && WEXITSTATUS(pstatus) == 0, "program status %#x: %s",
		  pstatus, err);
	cr_assert(WIFEXITED(lstatus) && WEXITSTATUS(lstatus) == EXIT_OK, "loader status %#x: %s",
		  lstatus, o.log);
	cr_expect_not_null(strstr(o.log, "orphan_ids 0 "), "%s", o.log);
	cr_expect_not_null(strstr(o.log, "duplicate_ids 0 "), "%s", o.log);
	free(err);
	return o;
}

static void outcome_free(struct outcome *o)
{
	free(o->out);
	free(o->log);
}

Test(inject, blocks_from_before_the_injection)
{
	/* Sampling 1 word in 20: many sampled blocks next to the old ones. */
	const char *argv[] = {INJECT_PROGS "/sites", "@GO", "4000", NULL};
	char *plain = plain_output(argv, NULL);
	struct session s;

	session_init(&s);
	struct outcome o = run_sites(&s, argv, NULL, "0.05");
	cr_expect_not_null(strstr(o.out, "pre_blocks=ok\n"), "%s", o.out);
	cr_expect_str_eq(o.out, plain);
	outcome_free(&o);
	free(plain);
	session_end(&s);
}

Test(inject, inject_detach_attach_again)
{
	const char *argv[] = {INJECT_PROGS "/sites", "@GO", "20000", NULL};
	struct session s;
	pid_t loader;
	int status;

	session_init(&s);
	session_start(&s, argv, NULL);
	/* First: inject, attach for a second, detach. */
	const char *first[] = {"-d", "1", "-o", "/dev/null", NULL};
	const char *log1 = session_loader(&s, first, 0, &loader, &status);
	char *text = slurp(log1);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == EXIT_OK, "%s", text);
	cr_expect_not_null(strstr(text, "loaded "), "%s", text);
	free(text);
	int mapped = maps_count(s.prog, LIB);
	cr_assert_gt(mapped, 0, "the library is not mapped after the first run");
	/* Second: the probes are there; no second injection. */
	const char *second[] = {"--rate", INJECT_RATE, "--all-views", s.views, NULL};
	const char *log2 = session_loader(&s, second, 1, &loader, &status);
	session_go(&s);
	int pstatus = session_wait(s.prog);
	status = session_wait(loader);
	text = slurp(log2);
	cr_assert(WIFEXITED(pstatus) && WEXITSTATUS(pstatus) == 0, "program status %#x", pstatus);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == EXIT_OK, "%s", text);
	cr_expect_null(strstr(text, "loaded "), "injected twice: %s", text);
	free(text);
	char alloc[128];
	snprintf(alloc, sizeof(alloc), "%s/alloc.folded", s.views);
	check_site_shares(s.out, alloc, 10000);
	session_end(&s);
}

Test(inject, fork_after_the_injection)
{
	const char *argv[] = {INJECT_PROGS "/sites", "@GO", "10000", "--fork", NULL};
	char *plain = plain_output(argv, NULL);
	struct session s;

	session_init(&s);
	struct outcome o = run_sites(&s, argv, NULL, INJECT_RATE);
	cr_expect_not_null(strstr(o.out, "child=0\n"), "%s", o.out);
	cr_expect_str_eq(o.out, plain);
	outcome_free(&o);
	free(plain);
	session_end(&s);
}

/*
 * A library loaded after the injection allocates at its own site: the
 * program's output is unchanged, and that site's share is right (its calls
 * to malloc were redirected too).
 */
static void check_late_library(const char *const argv[], const char *const env[], const char *site)
{
	char *plain = plain_output(argv, env);
	struct session s;
	char alloc[128], line[64];

	session_init(&s);
	struct outcome o = run_sites(&s, argv, env, INJECT_RATE);
	cr_expect_str_eq(o.out, plain);
	snprintf(line, sizeof(line), "site %s words ", site);
	cr_expect_not_null(strstr(o.out, line), "%s", o.out);
	snprintf(alloc, sizeof(alloc), "%s/alloc.folded", s.views);
	check_site_shares(s.out, alloc, 10000);
	outcome_free(&o);
	free(plain);
	session_end(&s);
}

/* The program dlopens a library (the host redirects from its dlopen). */
Test(inject, dlopen_after_the_injection)
{
	const char *argv[] = {INJECT_PROGS "/sites",	  "@GO", "20000", "--dlopen",
			      INJECT_PROGS "/libsite.so", NULL};

	check_late_library(argv, NULL, "site_in_library");
}

/*
 * An object the C library loads by itself (an NSS module, looked for on
 * LD_LIBRARY_PATH): no dlopen of the program's runs, yet the host finds it
 * (the loader's count of objects added, read by every slow path and by the
 * idle flusher).
 */
Test(inject, an_object_the_c_library_loads_itself)
{
	const char *argv[] = {INJECT_PROGS "/sites", "@GO", "20000", "--nss", "memproftest", NULL};
	const char *env[] = {"LD_LIBRARY_PATH=" INJECT_PROGS, NULL};

	check_late_library(argv, env, "site_in_nss");
}

/*
 * The thread used is blocked in a system call: it restarts as if never
 * stopped.  The injection starts once the thread is blocked in call nr, and
 * the call ends only when the test ends it, after the loader is done.
 */
static void inject_during(const char *call, long nr)
{
	struct session s;
	char fifo[128];
	pid_t loader;
	int status;

	session_init(&s);
	snprintf(fifo, sizeof(fifo), "%s/fifo", s.dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0, "mkfifo: %s", strerror(errno));
	const char *argv[] = {INJECT_PROGS "/syscalls", call, "@READY", fifo, NULL};
	session_start(&s, argv, NULL);
	cr_assert_eq(wait_in_syscall(s.prog, nr, TEST_EVENT_TIMEOUT_S), 0,
		     "the program never blocked in system call %ld", nr);
	if (nr == SYS_clock_nanosleep) {
		/* A sleep begun again by the injection would be off by this much. */
		const struct timespec into_the_sleep = {1, 0};
		nanosleep(&into_the_sleep, NULL);
	}
	const char *extra[] = {"-d", "0.2", "-o", "/dev/null", NULL};
	const char *log = session_loader(&s, extra, 0, &loader, &status);
	char *text = slurp(log);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == EXIT_OK, "%s", text);
	cr_expect_not_null(strstr(text, "loaded "), "%s", text);
	free(text);
	if (nr == SYS_clock_nanosleep) {
		cr_assert_eq(kill(s.prog, SIGUSR1), 0);
	} else {
		int fd = open(fifo, O_WRONLY);
		cr_assert_geq(fd, 0, "open %s: %s", fifo, strerror(errno));
		cr_assert_eq(write(fd, "x", 1), 1);
		close(fd);
	}
	int pstatus = session_wait(s.prog);
	char *out = slurp(s.out);
	cr_expect(WIFEXITED(pstatus) && WEXITSTATUS(pstatus) == 0, "program status %#x", pstatus);
	cr_expect_str_eq(out, "result=ok\n");
	free(out);
	session_end(&s);
}

Test(inject, a_blocked_nanosleep_restarts)
{
	inject_during("sleep", SYS_clock_nanosleep);
}

Test(inject, a_blocked_read_restarts)
{
	inject_during("read", SYS_read);
}
