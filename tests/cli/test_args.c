/*
 * The command line: every bad argument gets one line on stderr and exit 1
 * (nothing on stdout), --help works on every subcommand, and the GNU forms
 * (--opt=value, -d5) are accepted.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli_util.h"
#include "exit_codes.h"

static char dir[128], out[192], err[192];

static void setup(void)
{
	tmpdir_make(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(err, sizeof(err), "%s/err", dir);
}

#define MAX_ARGV 8
static const char *const bad[][MAX_ARGV] = {
    {NULL},
    {"frob", NULL},
    {"--frob", NULL},
    {"attach", NULL},
    {"attach", "abc", NULL},
    {"attach", "+12", NULL},
    {"attach", "0", NULL},
    {"attach", "-5", NULL},
    {"attach", "99999999999", NULL},
    {"attach", "1", "1", NULL},
    {"attach", "1", "-d", NULL},
    {"attach", "1", "-d", "0", NULL},
    {"attach", "1", "-dx", NULL},
    {"attach", "1", "--duration=-1", NULL},
    {"attach", "1", "--rate", NULL},
    {"attach", "1", "--rate", "2", NULL},
    {"attach", "1", "--rate=nan", NULL},
    {"attach", "1", "--view", "nope", NULL},
    {"attach", "1", "--format", "xml", NULL},
    {"attach", "1", "--max-blocks", "0", NULL},
    {"attach", "1", "--max-blocks", "-3", NULL},
    {"attach", "1", "--no-dwarf=yes", NULL},
    {"attach", "1", "--bogus", NULL},
    {"attach", "1", "-x", NULL},
    {"attach", "1", "--every", "1", NULL},
    {"attach", "1", "--every", "0.01", "--snapshot-dir", "d", NULL},
    {"attach", "1", "--snapshot-dir", "d", NULL},
    {"top", NULL},
    {"top", "1", "2", NULL},
    {"top", "1", "-n", "0", NULL},
    {"top", "1", "--sort", "size", NULL},
    {"top", "1", "--every", "1", NULL},
    {"list", "x", NULL},
    {"list", "--all", NULL},
    {"diff", NULL},
    {"diff", "a", NULL},
    {"diff", "a", "b", "c", NULL},
    {"diff", "a", "b", "--format", "svg", NULL},
    {"diff", "/nonexistent/a", "/nonexistent/b", NULL},
};

Test(cli_args, every_bad_argument_is_one_line_and_exit_1, .init = setup)
{
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char what[256] = "";

		for (int k = 0; bad[i][k]; k++)
			snprintf(what + strlen(what), sizeof(what) - strlen(what), " %s",
				 bad[i][k]);
		cr_expect_eq(cli_run(out, err, bad[i]), EXIT_USAGE, "memprof-bpf%s: not exit 1",
			     what);
		cr_expect_eq(file_lines(err), 1, "memprof-bpf%s: stderr is not one line", what);
		cr_expect(file_contains(err, "memprof-bpf: "), "memprof-bpf%s: no prefix", what);
		cr_expect_eq(file_lines(out), 0, "memprof-bpf%s: wrote to stdout", what);
	}
}

Test(cli_args, messages_kept, .init = setup)
{
	const char *pid[] = {"attach", "+12", NULL};
	const char *val[] = {"attach", "1", "--rate", NULL};
	const char *unk[] = {"attach", "1", "--bogus=1", NULL};

	cli_run(out, err, pid);
	cr_expect(file_contains(err, "bad pid '+12'"));
	cli_run(out, err, val);
	cr_expect(file_contains(err, "option --rate needs a value"));
	cli_run(out, err, unk);
	cr_expect(file_contains(err, "unknown option '--bogus'"));
}

Test(cli_args, help_on_every_subcommand, .init = setup)
{
	static const char *const cmds[] = {"attach", "top", "list", "diff"};
	char needle[64];

	for (size_t i = 0; i < 4; i++) {
		const char *args[] = {cmds[i], "--help", NULL};

		cr_expect_eq(cli_run(out, err, args), EXIT_OK, "%s --help", cmds[i]);
		snprintf(needle, sizeof(needle), "usage: memprof-bpf %s", cmds[i]);
		cr_expect(file_contains(out, needle), "%s --help lacks its usage", cmds[i]);
		cr_expect_eq(file_lines(err), 0);
	}
	const char *top[] = {"--help", NULL};
	cr_expect_eq(cli_run(out, err, top), EXIT_OK);
	cr_expect(file_contains(out, "memprof-bpf diff BASE NEW"));
}

/* "-d5", "--rate=0.01", options before the PID: all accepted. */
Test(cli_args, gnu_forms, .init = setup)
{
	char pid[16], folded[256];
	pid_t t = cli_trigger(dir);

	cr_assert_gt(t, 0);
	snprintf(pid, sizeof(pid), "%d", (int)t);
	snprintf(folded, sizeof(folded), "--output=%s/p.folded", dir);
	const char *args[] = {"attach", "-d1", "--rate=0.01", folded, pid, NULL};
	cr_expect_eq(cli_run(out, err, args), EXIT_OK);
	kill(t, SIGTERM);
	wait_exit(t);
	snprintf(folded, sizeof(folded), "%s/p.folded", dir);
	cr_expect_gt(folded_sum(folded, NULL), 0, "nothing profiled");
	/* Not a terminal: no status line. */
	cr_expect(!file_contains(err, "elapsed"));
}
