/*
 * memprof-bpf attached to programs that run without the malloc host: it
 * injects it (ptrace, dlopen) and attaches.  A multithreaded C program, a
 * C++ program and python3 (PYTHONMALLOC=malloc, --inject-malloc): each prints exactly what
 * it prints untraced, exits 0, and the alloc view's sites are within 5.7
 * standard deviations of the program's exact counts (posix_memalign's site
 * among them), and no mapping that was read-only (the GOT's RELRO pages)
 * is left writable.
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

/* Inject, attach until the program exits, compare with an untraced run.  option: one
 * more loader option, or NULL. */
static void inject_and_check(const char *const argv[], const char *const env[], double min_samples,
			     const char *option)
{
	struct session s;
	pid_t loader;
	int lstatus;
	char *plain = plain_output(argv, env);

	session_init(&s);
	session_start(&s, argv, env);
	char *maps_before = maps_snapshot(s.prog), gained[256] = "";
	const char *extra[] = {"--rate", INJECT_RATE, "--all-views", s.views, option, NULL};
	const char *log = session_loader(&s, extra, 1, &loader, &lstatus);
	/* The host rewrote GOT slots: the RELRO pages are read-only again. */
	char *maps_after = maps_snapshot(s.prog);
	cr_expect_eq(maps_gained_write(maps_before, maps_after, gained, sizeof(gained)), 0,
		     "a read-only mapping stayed writable after the injection: %s", gained);
	free(maps_before);
	free(maps_after);
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

	inject_and_check(argv, NULL, 10000, NULL);
}

Test(inject, cxx_program_new_delete_and_vector_growth)
{
	const char *argv[] = {INJECT_PROGS "/sites_cxx", "@GO", CXX_ROUNDS, NULL};

	inject_and_check(argv, NULL, 5000, NULL);
}

Test(inject, python3_with_pythonmalloc_malloc)
{
	const char *argv[] = {"/usr/bin/python3", INJECT_PROGS "/sites.py", "@GO", PY_ROUNDS, NULL};
	const char *env[] = {"PYTHONMALLOC=malloc", NULL};

	/* The malloc host, not the Python host a CPython 3.11 gets by default. */
	inject_and_check(argv, env, 20000, "--inject-malloc");
}

/*
 * A report names the code that asked for the memory, not the allocation
 * wrappers of a runtime nobody here wrote: perl's every allocation goes
 * through Perl_safesysmalloc or Perl_safesysrealloc (the stacks keep them).
 */
Test(inject, report_sites_are_past_the_runtime_allocation_wrappers)
{
	const char *argv[] = {"/usr/bin/perl", INJECT_PROGS "/sites.pl", "@GO", "300", NULL};
	char report[300], alloc[300];
	struct session s;
	pid_t loader;
	int lstatus;

	session_init(&s);
	session_start(&s, argv, NULL);
	snprintf(report, sizeof(report), "%s/report.txt", s.views);
	const char *extra[] = {"--rate", INJECT_RATE,	"--format", "text", "-o",
			       report,	 "--all-views", s.views,    NULL};
	const char *log = session_loader(&s, extra, 1, &loader, &lstatus);
	session_go(&s);
	cr_assert_eq(session_wait(s.prog), 0, "perl failed");
	lstatus = session_wait(loader);
	cr_assert(WIFEXITED(lstatus) && WEXITSTATUS(lstatus) == EXIT_OK, "loader: %s", slurp(log));
	char *text = slurp(report);
	snprintf(alloc, sizeof(alloc), "%s/alloc.folded", s.views);
	char *folded = slurp(alloc);
	cr_assert(text && folded);
	/* The stacks go through the wrappers; the sites do not stop there. */
	cr_expect_not_null(strstr(folded, ";Perl_safesys"), "no wrapper in the stacks:\n%.2000s",
			   folded);
	const char *sites = strstr(text, "-- by site");
	cr_assert_not_null(sites, "%s", text);
	cr_expect_null(strstr(sites, " Perl_safesys"), "a wrapper as a site:\n%.3000s", text);
	cr_expect_not_null(strstr(sites, " Perl_"), "no interpreter function as a site:\n%.3000s",
			   text);
	free(text);
	free(folded);
	session_end(&s);
}
