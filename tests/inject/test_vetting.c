/*
 * Only the library the loader checked reaches the target.  The loader reads
 * the malloc host from a file that is root's alone (it and every directory
 * above it: owned by root, writable by nobody else) and hands the target
 * those bytes in a sealed memfd; nothing is opened by path inside the
 * target's mount namespace.  So a library planted at the host's path in a
 * private mount namespace never runs, and a --preload file that others can
 * change is refused (exit 3, one line) before the target is touched.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "inject_util.h"

#define LIB "libmemprof-preload.so"

/* The hammer of test_kill (two threads) stops, with every byte right. */
static void hammer_finishes(struct session *s, const char *stop)
{
	cr_assert_eq(close(open(stop, O_WRONLY | O_CREAT, 0644)), 0);
	session_expect_finish(s, "errors 0");
}

Test(inject_vetting, a_library_planted_in_the_targets_namespace_never_runs)
{
	char lib[4096], mark[160], markenv[192], stop[128];
	struct session s;
	pid_t loader;
	int status;

	cr_assert_not_null(realpath(INJECT_BUILD_DIR "/" LIB, lib));
	session_init(&s);
	snprintf(mark, sizeof(mark), "%s/planted-ran", s.dir);
	snprintf(markenv, sizeof(markenv), "PLANTED_MARK=%s", mark);
	snprintf(stop, sizeof(stop), "%s/stop", s.dir);
	/* In its own mount namespace, the target sees planted.so at the host's path. */
	const char *argv[] = {"/usr/bin/unshare",
			      "--mount",
			      "--propagation",
			      "private",
			      "/bin/sh",
			      "-c",
			      "mount --bind \"$1\" \"$2\" && exec \"$3\" \"$4\" \"$5\" 2",
			      "sh",
			      INJECT_PROGS "/planted.so",
			      lib,
			      INJECT_PROGS "/hammer",
			      "@READY",
			      stop,
			      NULL};
	const char *env[] = {markenv, NULL};
	session_start(&s, argv, env);
	const char *extra[] = {"-d", "0.3", "-o", "/dev/null", NULL};
	char *text = slurp(session_loader(&s, extra, 0, &loader, &status));
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == EXIT_OK, "loader status %#x: %s",
		  status, text);
	cr_expect_not_null(strstr(text, "loaded "), "not injected: %s", text);
	free(text);
	cr_expect_neq(access(mark, F_OK), 0, "the planted library ran in the target");
	cr_expect_gt(maps_count(s.prog, "/memfd:" LIB), 0, "the target does not map the memfd");
	cr_expect_eq(maps_count(s.prog, lib), 0, "the target mapped the file at the path");
	hammer_finishes(&s, stop);
	session_end(&s);
}

/*
 * --preload of a copy of the host made untrustworthy by `spoil` (a shell
 * command run in the copy's directory, on the file lib.so): refused with
 * exit 3 and `why`, and the target is not touched.
 */
static void refuse_copy(const char *spoil, const char *why)
{
	char dir[128], copy[160], cmd[512], stop[128];
	struct session s;
	pid_t loader;
	int status;

	session_init(&s);
	snprintf(dir, sizeof(dir), "%s/libdir", s.dir);
	snprintf(copy, sizeof(copy), "%s/lib.so", dir);
	snprintf(stop, sizeof(stop), "%s/stop", s.dir);
	snprintf(cmd, sizeof(cmd), "mkdir -m 755 '%s' && cp '%s/%s' '%s' && cd '%s' && %s", dir,
		 INJECT_BUILD_DIR, LIB, copy, dir, spoil);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	const char *argv[] = {INJECT_PROGS "/hammer", "@READY", stop, "2", NULL};
	session_start(&s, argv, NULL);
	const char *extra[] = {"--preload", copy, "-d", "0.3", "-o", "/dev/null", NULL};
	char *text = slurp(session_loader(&s, extra, 0, &loader, &status));
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == EXIT_DENIED,
		  "loader status %#x, expected exit %d: %s", status, EXIT_DENIED, text);
	cr_expect_not_null(strstr(text, why), "no '%s' in: %s", why, text);
	cr_expect_eq(maps_count(s.prog, "memfd:"), 0, "something was loaded anyway");
	free(text);
	hammer_finishes(&s, stop);
	session_end(&s);
}

Test(inject_vetting, refuses_a_library_not_owned_by_root)
{
	refuse_copy("chown 65534 lib.so", "is not owned by root");
}

Test(inject_vetting, refuses_a_library_others_can_write)
{
	refuse_copy("chmod 666 lib.so", "is writable by group or others");
}

Test(inject_vetting, refuses_a_library_in_a_directory_others_can_write)
{
	refuse_copy("chmod 777 .", "is writable by group or others");
}

Test(inject_vetting, refuses_a_file_that_is_not_a_shared_library)
{
	refuse_copy("head -c 4096 /dev/urandom > lib.so", "is not an x86-64 shared library");
}

/* A directory writable by all but sticky (as /tmp) is no risk: accepted. */
Test(inject_vetting, accepts_a_library_below_a_sticky_directory)
{
	char dir[128], sub[160], copy[192], cmd[1024], stop[128];
	struct session s;
	pid_t loader;
	int status;

	session_init(&s);
	snprintf(dir, sizeof(dir), "%s/sticky", s.dir);
	snprintf(sub, sizeof(sub), "%s/lib", dir);
	snprintf(copy, sizeof(copy), "%s/lib.so", sub);
	snprintf(stop, sizeof(stop), "%s/stop", s.dir);
	snprintf(cmd, sizeof(cmd), "mkdir -m 1777 '%s' && mkdir -m 755 '%s' && cp '%s/%s' '%s'",
		 dir, sub, INJECT_BUILD_DIR, LIB, copy);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	const char *argv[] = {INJECT_PROGS "/hammer", "@READY", stop, "2", NULL};
	session_start(&s, argv, NULL);
	const char *extra[] = {"--preload", copy, "-d", "0.3", "-o", "/dev/null", NULL};
	char *text = slurp(session_loader(&s, extra, 0, &loader, &status));
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == EXIT_OK, "loader status %#x: %s",
		  status, text);
	cr_expect_gt(maps_count(s.prog, "/memfd:lib.so"), 0, "not loaded: %s", text);
	free(text);
	hammer_finishes(&s, stop);
	session_end(&s);
}
