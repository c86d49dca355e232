/*
 * memprof-bpf attached to programs that run without the malloc host: it
 * injects it (ptrace, dlopen) and attaches.  A multithreaded C program, a
 * C++ program and python3 (PYTHONMALLOC=malloc): each prints exactly what
 * it prints untraced, exits 0, and the alloc view's sites are within 5.7
 * standard deviations of the program's exact counts.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "inject_util.h"

#define ROUNDS "20000"
#define CXX_ROUNDS "20000"
#define PY_ROUNDS "400"

/* Inject, attach until the program exits, compare with an untraced run. */
static void inject_and_check(const char *const argv[], const char *const env[], double min_samples)
{
	struct session s;
	pid_t loader;
	int lstatus;
	char *plain = plain_output(argv, env);

	session_init(&s);
	session_start(&s, argv, env);
	const char *extra[] = {"--rate", INJECT_RATE, "--all-views", s.views, NULL};
	const char *log = session_loader(&s, extra, 1, &loader, &lstatus);
	session_go(&s);
	int pstatus = session_wait(s.prog);
	lstatus = session_wait(loader);
	char *out = slurp(s.out), *err = slurp(s.err), *llog = slurp(log);
	cr_assert(WIFEXITED(pstatus) && WEXITSTATUS(pstatus) == 0, "program status %#x: %s",
		  pstatus, err);
	cr_assert(WIFEXITED(lstatus) && WEXITSTATUS(lstatus) == EXIT_OK, "loader status %#x: %s",
		  lstatus, llog);
	cr_expect_not_null(strstr(llog, "had no memprof probes: loaded "), "%s", llog);
	cr_expect_not_null(strstr(llog, "orphan_ids 0 "), "%s", llog);
	cr_expect_not_null(strstr(llog, "duplicate_ids 0 "), "%s", llog);
	cr_expect_str_eq(out, plain, "the program's output changed");
	char alloc[128];
	snprintf(alloc, sizeof(alloc), "%s/alloc.folded", s.views);
	check_site_shares(s.out, alloc, min_samples);
	free(out);
	free(err);
	free(llog);
	free(plain);
	session_end(&s);
}

Test(inject, multithreaded_c_program)
{
	const char *argv[] = {INJECT_PROGS "/sites", "@GO", ROUNDS, NULL};

	inject_and_check(argv, NULL, 10000);
}

Test(inject, cxx_program_new_delete_and_vector_growth)
{
	const char *argv[] = {INJECT_PROGS "/sites_cxx", "@GO", CXX_ROUNDS, NULL};

	inject_and_check(argv, NULL, 5000);
}

Test(inject, python3_with_pythonmalloc_malloc)
{
	const char *argv[] = {"/usr/bin/python3", INJECT_PROGS "/sites.py", "@GO", PY_ROUNDS, NULL};
	const char *env[] = {"PYTHONMALLOC=malloc", NULL};

	inject_and_check(argv, env, 20000);
}
