/*
 * Faults found by hand (issue 11), each a test: vfork children, outputs
 * that cannot be written, missing privileges, signals, empty profiles,
 * notes that name the true cause, and small command-line cases.  Run any
 * of them against another loader build with MEMPROF_BPF_LOADER=PATH.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <linux/types.h>
#include "memprof_probe_abi.h"
#include "attach_util.h"
#include "exit_codes.h"
#include "output/folded.h"

#define CAPSH "/usr/sbin/capsh"
#define UNSHARE "/usr/bin/unshare"
#define STATIC_BIN "build/tests/attach/progs/static-sleeper"
#define ATTACHED_NOTE "memprof-bpf: attached to"

static char dir[128], err[192], tout[192], ready_path[192];

static void setup(void)
{
	tmpdir_make(dir, sizeof(dir));
	cr_assert(dir[0], "mkdtemp failed");
	snprintf(err, sizeof(err), "%s/loader.err", dir);
	snprintf(tout, sizeof(tout), "%s/trigger.out", dir);
	snprintf(ready_path, sizeof(ready_path), "%s/loader.ready", dir);
}

static void expect_one_line(const char *needle)
{
	char *text = read_file(err);

	cr_expect_eq(file_lines(err), 1, "stderr is not one line: %s", text ? text : "");
	cr_expect(file_contains(err, needle), "stderr lacks '%s': %s", needle, text ? text : "");
	free(text);
}

static void expect_text(const char *path, const char *needle)
{
	char *text = read_file(path);

	cr_expect(text && strstr(text, needle), "%s lacks '%s': %s", path, needle,
		  text ? text : "(unreadable)");
	free(text);
}

/* A trigger sampling for up to 60 s; pid as text in pid. */
static pid_t trigger_running(char *pid, size_t len, const char *extra, const char *val)
{
	const char *targs[] = {"--seconds", "60", extra, val, NULL};
	pid_t t = trigger_start(dir, tout, targs);

	cr_assert_gt(t, 0, "trigger did not start");
	snprintf(pid, len, "%d", (int)t);
	return t;
}

static void trigger_end(pid_t t)
{
	kill(t, SIGCONT);
	kill(t, SIGTERM);
	wait_exit(t);
}

static double requested_rate(pid_t t)
{
	struct memprof_probe_control ctl;

	cr_assert_eq(target_control(t, &ctl), 0);
	return ctl.requested_rate;
}

/* ---- vfork: the child's samples are the parent's ---- */

Test(robust, vfork_children_count_for_the_parent, .init = setup)
{
	struct site_table trig, alloc;
	char pid[16], views[192], path[256], ready[256];

	snprintf(ready, sizeof(ready), "%s/loader.ready", dir);
	/* It starts once the loader is attached (its --ready-file). */
	const char *targs[] = {"--wait-tracers",
			       "1",
			       "--start-file",
			       ready,
			       "--iterations",
			       "100000",
			       "--vfork-every",
			       "2",
			       NULL};
	const char *sites[] = {"site_short_lived", "site_medium_lived", "site_long_lived",
			       "site_major_blocks"};
	pid_t t = trigger_start(dir, tout, targs);

	cr_assert_gt(t, 0);
	snprintf(pid, sizeof(pid), "%d", (int)t);
	snprintf(views, sizeof(views), "%s/views", dir);
	const char *largs[] = {"attach",      pid,   "-v",	     "--rate", "0.01",
			       "--all-views", views, "--ready-file", ready,    NULL};
	cr_assert_eq(loader_run(err, largs), EXIT_OK);
	cr_assert_eq(wait_exit(t), 0);
	cr_assert_eq(site_table_read_lines(tout, &trig), 0);
	snprintf(path, sizeof(path), "%s/alloc.folded", views);
	cr_assert_eq(site_table_read_folded(path, &alloc), 0);
	/* Every sample fired, in the trigger or its vfork children, is seen. */
	for (int s = 0; s < 4; s++)
		cr_expect_eq(site_value(&alloc, sites[s], 0), site_value(&trig, sites[s], 4),
			     "alloc %s: vfork children's samples lost", sites[s]);
	cr_expect_eq(loader_stat(err, "orphan_ids"), 0, "false orphans");
}

/* ---- outputs ---- */

/*
 * The loader fails before tracing: it never attached (args write the
 * --ready-file ready_path) and left no rate in the target.
 */
static void expect_output_refused(const char *const *args, const char *reason, pid_t t)
{
	cr_expect_eq(loader_run(err, args), EXIT_FAILED);
	cr_expect_neq(access(ready_path, F_OK), 0, "the output was checked only after tracing");
	expect_one_line(reason);
	cr_expect_eq(requested_rate(t), 0, "a rate was left in the target");
}

Test(robust, bad_output_path_fails_before_tracing, .init = setup)
{
	char pid[16], out[256];
	pid_t t = trigger_running(pid, sizeof(pid), NULL, NULL);

	snprintf(out, sizeof(out), "%s/no-such-dir/out.folded", dir);
	const char *args[] = {"attach",	      pid,	  "-d", "20", "-o", out,
			      "--ready-file", ready_path, NULL};
	expect_output_refused(args, "No such file or directory", t);
	trigger_end(t);
}

Test(robust, all_views_onto_a_file_fails_before_tracing, .init = setup)
{
	char pid[16], file[256];
	pid_t t = trigger_running(pid, sizeof(pid), NULL, NULL);

	snprintf(file, sizeof(file), "%s/a-file", dir);
	close(open(file, O_WRONLY | O_CREAT, 0644));
	const char *args[] = {"attach",	      pid,	  "-d", "20", "--all-views", file,
			      "--ready-file", ready_path, NULL};
	expect_output_refused(args, "Not a directory", t);
	trigger_end(t);
}

Test(robust, read_only_mount_fails_before_tracing, .init = setup)
{
	char pid[16], ro[256], script[1024];
	pid_t t = trigger_running(pid, sizeof(pid), NULL, NULL), l;

	snprintf(ro, sizeof(ro), "%s/ro", dir);
	cr_assert_eq(mkdir(ro, 0755), 0);
	/* A read-only tmpfs, in a mount namespace of the loader's own. */
	snprintf(script, sizeof(script),
		 "mount -t tmpfs -o ro none %s && exec %s attach %s -d 20 -o %s/out.folded "
		 "--ready-file %s",
		 ro, loader_bin(), pid, ro, ready_path);
	char *argv[] = {UNSHARE, "-m", "/bin/sh", "-c", script, NULL};
	l = spawn(argv, NULL, err);
	cr_expect_eq(wait_exit(l), EXIT_FAILED);
	cr_expect_neq(access(ready_path, F_OK), 0, "the output was checked only after tracing");
	expect_one_line("Read-only file system");
	trigger_end(t);
}

/* The profile that could not be written is in the file the error names. */
static void expect_fallback(void)
{
	char *text = read_file(err), *at = text ? strstr(text, "the profile is in ") : NULL;
	char path[256];

	cr_assert(at, "no fallback file named: %s", text ? text : "");
	cr_assert_eq(sscanf(at, "the profile is in %255s", path), 1);
	cr_expect_gt(file_lines(path), 0, "fallback %s is empty", path);
	cr_expect_geq(loader_stat(err, "samples"), 1, "no stats line (-v)");
	unlink(path);
	free(text);
}

Test(robust, unwritable_stdout_keeps_the_profile, .init = setup)
{
	char pid[16];
	pid_t t = trigger_running(pid, sizeof(pid), NULL, NULL);
	const char *args[] = {"attach", pid, "-v", "-d", "0.5", "--rate", "0.01", NULL};

	cr_expect_eq(loader_run_out("/dev/full", err, args), EXIT_FAILED);
	expect_text(err, "No space left on device");
	expect_fallback();
	trigger_end(t);
}

Test(robust, sigpipe_on_stdout_is_an_output_error, .init = setup)
{
	char pid[16];
	int p[2];
	pid_t t = trigger_running(pid, sizeof(pid), NULL, NULL), l;

	cr_assert_eq(pipe(p), 0);
	l = fork();
	if (l == 0) {
		int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(p[1], STDOUT_FILENO);
		dup2(e, STDERR_FILENO);
		close(p[0]);
		/* The reader is gone (as with `| head -1` once it is done). */
		execl(loader_bin(), loader_bin(), "attach", pid, "-v", "-d", "0.5", "--rate",
		      "0.01", (char *)NULL);
		_exit(127);
	}
	close(p[0]);
	close(p[1]);
	cr_expect_eq(wait_exit(l), EXIT_FAILED, "killed by SIGPIPE, or no error");
	expect_text(err, "Broken pipe");
	expect_fallback();
	trigger_end(t);
}

Test(robust, output_replaced_whole_never_half_written, .init = setup)
{
	char pid[16], out[256];
	pid_t t = trigger_running(pid, sizeof(pid), NULL, NULL), l;
	FILE *f;

	snprintf(out, sizeof(out), "%s/out.folded", dir);
	f = fopen(out, "w");
	cr_assert(f);
	fputs("old profile 1\n", f);
	fclose(f);
	const char *args[] = {"attach", pid, "-d", "30", "-o", out, "-v", NULL};
	l = loader_start(err, args);
	cr_assert_eq(wait_text(err, ATTACHED_NOTE, TEST_EVENT_TIMEOUT_S), 0);
	kill(l, SIGKILL);
	wait_exit(l);
	expect_text(out, "old profile 1\n");
	cr_expect_eq(file_lines(out), 1);
	/* A complete run replaces it. */
	const char *args2[] = {"attach", pid, "-d", "0.5", "--rate", "0.01", "-o", out, NULL};
	cr_expect_eq(loader_run(err, args2), EXIT_OK);
	cr_expect(!file_contains(out, "old profile"));
	cr_expect_gt(file_lines(out), 0);
	trigger_end(t);
}

/* ---- privileges ---- */

Test(robust, missing_cap_sys_admin_is_named_and_leaves_no_rate, .init = setup)
{
	char pid[16], cmd[512];
	pid_t t = trigger_running(pid, sizeof(pid), NULL, NULL), l;

	snprintf(cmd, sizeof(cmd), "exec %s attach %s -d 1", loader_bin(), pid);
	/* CAP_BPF and CAP_PERFMON, without CAP_SYS_ADMIN. */
	char *argv[] = {CAPSH, "--drop=cap_sys_admin", "--", "-c", cmd, NULL};
	l = spawn(argv, NULL, err);
	cr_expect_eq(wait_exit(l), EXIT_DENIED);
	expect_one_line("CAP_SYS_ADMIN");
	cr_expect_eq(requested_rate(t), 0, "the requested rate was left in the target");
	trigger_end(t);
}

/* ---- signals ---- */

Test(robust, sighup_stops_like_sigterm_with_output, .init = setup)
{
	char pid[16], out[256];
	pid_t t = trigger_running(pid, sizeof(pid), NULL, NULL), l;

	snprintf(out, sizeof(out), "%s/out.folded", dir);
	const char *args[] = {"attach", pid, "--rate", "0.01", "-o", out, "-v", NULL};
	l = loader_start(err, args);
	cr_assert_eq(wait_text(err, ATTACHED_NOTE, TEST_EVENT_TIMEOUT_S), 0);
	cr_assert_eq(wait_target_control(t, control_sampled_once), 0, "the target never sampled");
	kill(l, SIGHUP);
	cr_expect_eq(wait_exit(l), EXIT_OK);
	cr_expect_gt(file_lines(out), 0, "no profile written");
	cr_expect_gt(loader_stat(err, "samples"), 0);
	trigger_end(t);
}

/* ---- empty profiles: one note says why ---- */

Test(robust, empty_profile_of_a_stopped_target_says_so, .init = setup)
{
	char pid[16];
	pid_t t = trigger_running(pid, sizeof(pid), NULL, NULL);
	const char *args[] = {"attach", pid, "-d", "0.6", NULL};

	kill(t, SIGSTOP);
	cr_expect_eq(loader_run(err, args), EXIT_OK);
	expect_text(err, "no samples: process");
	expect_text(err, "was stopped");
	trigger_end(t);
}

Test(robust, empty_profile_of_an_idle_target_says_so, .init = setup)
{
	char pid[16];
	pid_t t = trigger_running(pid, sizeof(pid), "--idle", "1");
	const char *args[] = {"attach", pid, "-d", "0.6", NULL};

	cr_expect_eq(loader_run(err, args), EXIT_OK);
	expect_text(err, "never allocated");
	trigger_end(t);
}

Test(robust, empty_profile_at_a_tiny_rate_gives_the_expected_count, .init = setup)
{
	char pid[16];
	pid_t t = trigger_running(pid, sizeof(pid), NULL, NULL);
	const char *args[] = {"attach", pid, "-d", "1", "--rate", "1e-300", NULL};

	cr_expect_eq(loader_run(err, args), EXIT_OK);
	expect_text(err, "rate 1e-300 is too low");
	expect_text(err, "expected samples");
	trigger_end(t);
}

/* ---- notes name the true cause ---- */

Test(robust, orphans_of_a_full_block_map_are_blamed_on_it, .init = setup)
{
	const char *targs[] = {"--wait-tracers", "1", "--iterations", "100000", NULL};
	char pid[16], out[256];
	pid_t t = trigger_start(dir, tout, targs);

	cr_assert_gt(t, 0);
	snprintf(pid, sizeof(pid), "%d", (int)t);
	snprintf(out, sizeof(out), "%s/out.folded", dir);
	const char *args[] = {"attach",	      pid,  "-v", "--rate", "0.01",
			      "--max-blocks", "64", "-o", out,	    NULL};
	cr_expect_eq(loader_run(err, args), EXIT_OK);
	wait_exit(t);
	cr_expect_gt(loader_stat(err, "orphans_map_full"), 0);
	expect_text(err, "while the block map was full");
	cr_expect(!file_contains(err, "another tracer or"), "blames another tracer");
	cr_expect(!file_contains(err, "before this tracer attached"), "blames the attach time");
}

/* ---- command line and targets ---- */

/* -o with --all-views: both are written (-o used to be ignored). */
Test(robust, output_and_all_views_are_both_written, .init = setup)
{
	char pid[16], out[256], views[256], path[300];
	pid_t t = trigger_running(pid, sizeof(pid), NULL, NULL);

	snprintf(out, sizeof(out), "%s/out.folded", dir);
	snprintf(views, sizeof(views), "%s/views", dir);
	const char *args[] = {"attach", pid, "-d",	    "0.5", "--rate", "0.01",
			      "-o",	out, "--all-views", views, NULL};
	cr_expect_eq(loader_run(err, args), EXIT_OK);
	cr_expect_gt(file_lines(out), 0, "-o was ignored with --all-views");
	snprintf(path, sizeof(path), "%s/alloc.folded", views);
	cr_expect_gt(file_lines(path), 0, "no %s", path);
	trigger_end(t);
}

Test(robust, small_command_line_cases, .init = setup)
{
	const char *trailing[] = {"attach", "1", "-d", "1", "--bogus", NULL};
	const char *plus[] = {"attach", "+12", NULL};
	const char *space[] = {"attach", " 12", NULL};

	cr_expect_eq(loader_run(err, trailing), EXIT_USAGE);
	expect_one_line("unknown option '--bogus'");
	cr_expect_eq(loader_run(err, plus), EXIT_USAGE);
	expect_one_line("bad pid");
	cr_expect_eq(loader_run(err, space), EXIT_USAGE);
	expect_one_line("bad pid");
}

Test(robust, kernel_thread_and_static_program_are_named, .init = setup)
{
	const char *kthread[] = {"attach", "2", NULL};
	char *argv[] = {STATIC_BIN, "30", NULL}, pid[16];
	pid_t s = spawn(argv, NULL, NULL);

	cr_expect_eq(loader_run(err, kthread), EXIT_TARGET);
	expect_one_line("kernel thread");
	cr_assert_gt(s, 0);
	cr_assert_eq(wait_exec(s, STATIC_BIN), 0, "%s did not start", STATIC_BIN);
	snprintf(pid, sizeof(pid), "%d", (int)s);
	const char *args[] = {"attach", pid, NULL};
	cr_expect_eq(loader_run(err, args), EXIT_TARGET);
	expect_one_line("statically linked");
	kill(s, SIGKILL);
	wait_exit(s);
}

Test(robust, workload_sites_help, .init = setup)
{
	char *argv[] = {WORKLOAD_BIN, "--help", NULL}, out[256];

	snprintf(out, sizeof(out), "%s/help.out", dir);
	cr_expect_eq(wait_exit(spawn(argv, out, err)), 0);
	expect_text(out, "usage: workload-sites");
}

/* ---- every output of every command goes through outfile.c ---- */

Test(robust, snapshot_dir_onto_a_file_fails_before_tracing, .init = setup)
{
	char pid[16], file[256];
	pid_t t = trigger_running(pid, sizeof(pid), NULL, NULL);

	snprintf(file, sizeof(file), "%s/a-file", dir);
	close(open(file, O_WRONLY | O_CREAT, 0644));
	const char *args[] = {"attach",		pid,  "-d", "20", "--every", "1",
			      "--snapshot-dir", file, NULL};
	expect_output_refused(args, "Not a directory", t);
	trigger_end(t);
}

Test(robust, top_output_checked_before_tracing, .init = setup)
{
	char pid[16], out[256];
	pid_t t = trigger_running(pid, sizeof(pid), NULL, NULL);

	snprintf(out, sizeof(out), "%s/no-such-dir/top.folded", dir);
	const char *args[] = {"top", pid, "-d", "20", "-o", out, NULL};
	expect_output_refused(args, "No such file or directory", t);
	trigger_end(t);
}

Test(robust, unwritable_diff_output_keeps_the_diff, .init = setup)
{
	char a[256], b[256], *text, *at, path[256];
	FILE *f;

	snprintf(a, sizeof(a), "%s/a.folded", dir);
	snprintf(b, sizeof(b), "%s/b.folded", dir);
	f = fopen(a, "w");
	cr_assert(f);
	fputs("main;work;site_a 1000\nmain;site_b 500\n", f);
	fclose(f);
	f = fopen(b, "w");
	cr_assert(f);
	fputs("main;work;site_a 3000\nmain;site_b 400\n", f);
	fclose(f);
	const char *args[] = {"diff", a, b, "-o", "/dev/full", NULL};
	cr_expect_eq(loader_run(err, args), EXIT_FAILED);
	expect_one_line("No space left on device");
	text = read_file(err);
	at = text ? strstr(text, "the profile is in ") : NULL;
	cr_assert(at, "no fallback file named: %s", text ? text : "");
	cr_assert_eq(sscanf(at, "the profile is in %255s", path), 1);
	expect_text(path, "site_a");
	unlink(path);
	free(text);
}
