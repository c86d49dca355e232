/*
 * top through a pseudo-terminal (forkpty): the table shows the trigger's
 * sites, the view keys change the sort, q quits with exit 0 and writes -o.
 * Without a terminal it prints the table periodically.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli_util.h"
#include "exit_codes.h"

static char screen[1 << 20];
static size_t screen_len;

/* Read the pty into screen until needle shows up after from, or timeout. */
static int wait_screen(int fd, size_t from, const char *needle, double timeout_s)
{
	for (double waited = 0; waited < timeout_s; waited += 0.05) {
		struct pollfd p = {.fd = fd, .events = POLLIN};

		if (poll(&p, 1, 50) > 0) {
			ssize_t n = read(fd, screen + screen_len, sizeof(screen) - 1 - screen_len);

			if (n > 0)
				screen_len += (size_t)n;
			screen[screen_len] = '\0';
		}
		if (from < screen_len && strstr(screen + from, needle))
			return 0;
	}
	return -1;
}

Test(cli_top, keys_through_a_pty)
{
	char dir[128], pid[16], outp[256];
	struct winsize ws = {.ws_row = 30, .ws_col = 120};
	pid_t t, top;
	int fd;
	size_t mark;

	tmpdir_make(dir, sizeof(dir));
	snprintf(outp, sizeof(outp), "%s/top.folded", dir);
	t = cli_trigger(dir);
	cr_assert_gt(t, 0);
	snprintf(pid, sizeof(pid), "%d", (int)t);
	top = forkpty(&fd, NULL, NULL, &ws);
	cr_assert_geq(top, 0);
	if (top == 0) {
		execl(LOADER_BIN, LOADER_BIN, "top", pid, "--rate", "0.01", "-n", "6", "-o", outp,
		      (char *)NULL);
		_exit(127);
	}
	cr_expect_eq(wait_screen(fd, 0, "site_long_lived", 15), 0, "no site on screen: %s", screen);
	cr_expect(strstr(screen, "sort: live"), "not sorted by live first");
	cr_expect(strstr(screen, "ALLOC/s"));
	mark = screen_len;
	cr_assert_eq(write(fd, "p", 1), 1);
	cr_expect_eq(wait_screen(fd, mark, "sort: promoted", 5), 0, "p did not sort by promoted");
	mark = screen_len;
	cr_assert_eq(write(fd, "a", 1), 1);
	cr_expect_eq(wait_screen(fd, mark, "sort: alloc rate", 5), 0, "a did not sort by rate");
	cr_assert_eq(write(fd, "q", 1), 1);
	/* Drain the pty until top exits. */
	for (int i = 0; i < 300; i++) {
		const struct timespec pause = {0, 50000000};
		int st;

		wait_screen(fd, screen_len, "\x01", 0.05);
		nanosleep(&pause, NULL);
		if (waitpid(top, &st, WNOHANG) == top) {
			cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == EXIT_OK, "top: status %d",
				  st);
			top = 0;
			break;
		}
	}
	if (top > 0) {
		kill(top, SIGKILL);
		waitpid(top, NULL, 0);
		cr_expect(0, "q did not quit");
	}
	close(fd);
	kill(t, SIGTERM);
	wait_exit(t);
	cr_expect(file_contains(outp, "site_long_lived"), "-o not written on quit");
}

Test(cli_top, without_a_terminal)
{
	char dir[128], pid[16], out[256], err[256];
	pid_t t;
	char *text;
	int tables = 0;

	tmpdir_make(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(err, sizeof(err), "%s/err", dir);
	t = cli_trigger(dir);
	cr_assert_gt(t, 0);
	snprintf(pid, sizeof(pid), "%d", (int)t);
	/* Refreshes on each second from the attach: 1, 2, 3 and 4 s, one of
	 * them spare for a refresh that overran its second on a busy machine. */
	const char *args[] = {"top", pid, "-d", "4.5", "--rate", "0.01", "-n", "2", NULL};
	cr_expect_eq(cli_run(out, err, args), EXIT_OK);
	kill(t, SIGTERM);
	wait_exit(t);
	text = read_file(out);
	cr_assert(text);
	for (char *p = text; (p = strstr(p, "memprof-bpf top:")); p++)
		tables++;
	cr_expect(tables >= 3, "%d tables in 4.5 s", tables);
	cr_expect(!strchr(text, '\033'), "escape sequences without a terminal");
	cr_expect(strstr(text, "site_"), "no site in the table");
	free(text);
}
