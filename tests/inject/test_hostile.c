/*
 * Targets that make an injection hard: a thread calling setegid() in a
 * loop (glibc's SIGSETXID broadcast, which an injected thread must never
 * hold off).  The injection completes, the target goes on and exits 0.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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
	int pstatus = session_wait(s.prog);
	s.prog = 0;
	char *out = slurp(s.out);
	cr_expect(WIFEXITED(pstatus) && WEXITSTATUS(pstatus) == 0, "program status %#x", pstatus);
	cr_expect_not_null(strstr(out, "setxid calls "), "%s", out);
	free(out);
	session_end(&s);
}
