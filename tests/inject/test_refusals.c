/*
 * What memprof-bpf must not inject into, and says so in one line: a static
 * program (exit 2), a Go one (exit 2), one whose main thread has exited (exit 2), a
 * seccomp-filtered one (exit 3), any program with
 * --no-inject (exit 2), a stopped one (exit 2).  A process that already has
 * the probes (started under LD_PRELOAD) is attached to without injection.
 * The targets carry on unharmed.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "inject_util.h"
#include "testlib.h"

#define LIB "libmemprof-preload.so"

/* Lines of the log the loader wrote itself (not libbpf's). */
static int loader_lines(const char *log)
{
	int n = 0;

	for (const char *p = log; (p = strstr(p, "memprof-bpf: ")); p++)
		n++;
	return n;
}

/* The loader refuses with `code` and one line holding `why`. */
static void expect_refusal(struct session *s, const char *const extra[], int code, const char *why)
{
	pid_t loader;
	int status;
	const char *log = session_loader(s, extra, 0, &loader, &status);
	char *text = slurp(log);

	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == code,
		  "loader status %#x, expected exit %d: %s", status, code, text);
	cr_expect_not_null(strstr(text, why), "no '%s' in: %s", why, text);
	cr_expect_eq(loader_lines(text), 1, "not one line: %s", text);
	cr_expect_eq(maps_count(s->prog, LIB), 0, "the library was loaded anyway");
	cr_expect_eq(kill(s->prog, 0), 0, "the target died");
	free(text);
}

/*
 * Every thread is inside code a dlopen must not interrupt (one blocked in
 * malloc_stats, the main one in pthread_join): no injection, exit 2 after
 * the safe-point search, the process as it was, and a line that says to
 * start it with LD_PRELOAD= the library instead.
 */
Test(inject, finds_no_safe_moment_in_a_process_inside_its_allocator, .timeout = 120)
{
	const char *argv[] = {INJECT_PROGS "/in_allocator", "@READY", NULL};
	struct session s;

	session_init(&s);
	session_start(&s, argv, NULL);
	char *ready = slurp(s.ready);
	pid_t tid = (pid_t)strtol(ready, NULL, 10);
	free(ready);
	cr_assert_eq(wait_in_syscall(tid, SYS_write, TEST_EVENT_TIMEOUT_S), 0,
		     "the thread never blocked in malloc_stats' write");
	/* Says what to do instead: start it with the library preloaded. */
	expect_refusal(&s, NULL, EXIT_TARGET,
		       "; not injecting: start the program with LD_PRELOAD=/");
	session_end(&s);
}

/* Its main thread exited, another runs on: said as it is, not "no process". */
Test(inject, refuses_a_process_whose_main_thread_exited)
{
	const char *argv[] = {INJECT_PROGS "/leader_exits", "@READY", NULL};
	struct session s;

	session_init(&s);
	session_start(&s, argv, NULL);
	expect_refusal(&s, NULL, EXIT_TARGET, "main thread has exited");
	session_end(&s);
}

Test(inject, refuses_a_static_program)
{
	const char *argv[] = {INJECT_PROGS "/static_wait", "@READY", NULL};
	struct session s;

	session_init(&s);
	session_start(&s, argv, NULL);
	expect_refusal(&s, NULL, EXIT_TARGET, "statically linked");
	session_end(&s);
}

Test(inject, refuses_a_go_program)
{
	const char *argv[] = {INJECT_PROGS "/go_like", "@READY", NULL};
	struct session s;

	session_init(&s);
	session_start(&s, argv, NULL);
	expect_refusal(&s, NULL, EXIT_TARGET, "is a Go program");
	session_end(&s);
}

/* seccomp_wait with its filter in place (mode: NULL, main thread, or "thread"): refused. */
static void refuse_filtered(const char *mode, const char *why)
{
	const char *argv[] = {INJECT_PROGS "/seccomp_wait", "@READY", mode, NULL};
	struct session s;

	session_init(&s);
	session_start(&s, argv, NULL);
	char *out = slurp(s.out);
	cr_assert_str_eq(out, "filtered\n", "the filter is not in place");
	free(out);
	expect_refusal(&s, NULL, EXIT_DENIED, why);
	session_end(&s);
}

Test(inject, refuses_a_seccomp_filtered_program)
{
	refuse_filtered(NULL, "seccomp");
}

Test(inject, refuses_a_program_with_a_seccomp_filter_on_another_thread)
{
	refuse_filtered("thread", "runs under a seccomp filter");
}

/* The target is refused, then runs its workload to the end, untouched. */
static void refuse_then_finish(const char *const extra[], int stop, int code, const char *why)
{
	const char *argv[] = {INJECT_PROGS "/sites", "@GO", "2000", NULL};
	struct session s;

	session_init(&s);
	session_start(&s, argv, NULL);
	if (stop)
		cr_assert_eq(kill(s.prog, SIGSTOP), 0);
	expect_refusal(&s, extra, code, why);
	if (stop)
		cr_assert_eq(kill(s.prog, SIGCONT), 0);
	session_go(&s);
	int status = session_wait(s.prog);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "program status %#x", status);
	session_end(&s);
}

Test(inject, no_inject_refuses_a_program_without_probes)
{
	const char *extra[] = {"--no-inject", NULL};

	refuse_then_finish(extra, 0, EXIT_TARGET, "--no-inject");
}

Test(inject, refuses_a_stopped_program)
{
	refuse_then_finish(NULL, 1, EXIT_TARGET, "is stopped");
}

Test(inject, never_injects_a_process_that_has_the_probes)
{
	const char *argv[] = {INJECT_PROGS "/sites", "@GO", "2000", NULL};
	char preload[256];
	struct session s;
	pid_t loader;
	int status;

	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s",
		 realpath(INJECT_BUILD_DIR "/" LIB, NULL));
	const char *env[] = {preload, NULL};
	session_init(&s);
	session_start(&s, argv, env);
	int mapped = maps_count(s.prog, LIB);
	cr_assert_gt(mapped, 0, "not preloaded");
	const char *extra[] = {"-d", "0.5", "-o", "/dev/null", NULL};
	const char *log = session_loader(&s, extra, 0, &loader, &status);
	char *text = slurp(log);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == EXIT_OK, "%s", text);
	cr_expect_null(strstr(text, "loaded "), "injected into a preloaded process: %s", text);
	cr_expect_eq(maps_count(s.prog, LIB), mapped);
	free(text);
	session_go(&s);
	status = session_wait(s.prog);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "program status %#x", status);
	session_end(&s);
}
