/*
 * What the loader says, tried as a user would: a python3 with pymalloc on
 * gets one note naming PYTHONMALLOC=malloc (and none with malloc); the
 * internal stats line only with -v, while lost data is one warning line
 * without it; attach to its own pid is refused (exit 1); list run without
 * privileges counts the processes it could not inspect.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_util.h"
#include "exit_codes.h"

#define PRELOAD "build/libmemprof-preload.so"
#define PYTHON "/usr/bin/python3"
#define NOTE "PYTHONMALLOC=malloc to see every allocation"

static char dir[128], out[192], err[192];

static void setup(void)
{
	tmpdir_make(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(err, sizeof(err), "%s/err", dir);
}

/* Lines of path holding needle. */
static int lines_with(const char *path, const char *needle)
{
	char *text = read_file(path);
	int n = 0;

	for (char *p = text; p && (p = strstr(p, needle)); p++)
		n++;
	free(text);
	return n;
}

/*
 * python3 under the preload (no injection needed), with PYTHONMALLOC=value
 * (NULL: unset), sleeping once it wrote its ready file.
 */
static pid_t python_start(const char *value)
{
	static int n;
	char ready[256], preload[512], cwd[256], env[64];
	pid_t p;

	cr_assert(getcwd(cwd, sizeof(cwd)));
	snprintf(ready, sizeof(ready), "%s/python-%d.ready", dir, n++);
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s/%s", cwd, PRELOAD);
	snprintf(env, sizeof(env), "PYTHONMALLOC=%s", value ? value : "");
	p = fork();
	if (p == 0) {
		unsetenv("PYTHONMALLOC");
		putenv(preload);
		if (value)
			putenv(env);
		execl(PYTHON, PYTHON, "-c",
		      "import sys, time\n"
		      "x = [str(i) for i in range(10000)]\n"
		      "open(sys.argv[1], 'w').write('ready')\n"
		      "time.sleep(120)\n",
		      ready, (char *)NULL);
		_exit(127);
	}
	cr_assert_gt(p, 0);
	cr_assert_eq(wait_file(ready, TEST_EVENT_TIMEOUT_S), 0, "python3 did not start");
	return p;
}

static int attach_briefly(pid_t pid, int verbose)
{
	char spid[16];

	snprintf(spid, sizeof(spid), "%d", (int)pid);
	const char *args[] = {"attach", spid, "-d", "0.2", "-o", "/dev/null", NULL, NULL};
	if (verbose)
		args[6] = "-v";
	return cli_run(out, err, args);
}

Test(cli_messages, python_with_pymalloc_gets_one_note, .init = setup, .timeout = 120)
{
	const char *const values[] = {NULL, "pymalloc", "malloc", "malloc_debug"};
	const int noted[] = {1, 1, 0, 0};

	cr_assert_eq(access(PYTHON, X_OK), 0, "no %s (Debian package python3)", PYTHON);
	for (int i = 0; i < 4; i++) {
		pid_t p = python_start(values[i]);
		char *text;

		cr_expect_eq(attach_briefly(p, 0), EXIT_OK, "attach failed: %s", read_file(err));
		text = read_file(err);
		cr_expect_eq(
		    lines_with(err, NOTE), noted[i], "PYTHONMALLOC %s: %d notes, not %d:\n%s",
		    values[i] ? values[i] : "unset", lines_with(err, NOTE), noted[i], text);
		if (noted[i])
			cr_expect(strstr(text, "pymalloc"), "the note does not name pymalloc");
		free(text);
		kill(p, SIGTERM);
		wait_exit(p);
	}
}

Test(cli_messages, stats_only_with_v_and_lost_data_is_one_warning, .init = setup, .timeout = 120)
{
	const char *targs[] = {"--wait-tracers", "1", "--iterations", "100000", NULL};
	char pid[16], tout[256];
	pid_t t;

	snprintf(tout, sizeof(tout), "%s/trigger.out", dir);
	/* A full block map loses data: one warning, no stats line. */
	t = trigger_start(dir, tout, targs);
	cr_assert_gt(t, 0);
	snprintf(pid, sizeof(pid), "%d", (int)t);
	const char *args[] = {"attach", pid,  "--rate",	   "0.01", "--max-blocks",
			      "64",	"-o", "/dev/null", NULL};
	cr_expect_eq(cli_run(out, err, args), EXIT_OK);
	wait_exit(t);
	cr_expect_eq(lines_with(err, "stats:"), 0, "a stats line without -v:\n%s", read_file(err));
	cr_expect_eq(lines_with(err, "memprof-bpf: warning:"), 1, "not one warning:\n%s",
		     read_file(err));
	cr_expect_eq(lines_with(err, "data lost"), 1, "%s", read_file(err));
	cr_expect_eq(lines_with(err, "block map full"), 1, "the cause is not named:\n%s",
		     read_file(err));
	cr_expect_eq(lines_with(err, "raise --max-blocks"), 2, "no remedy:\n%s", read_file(err));

	/* Nothing lost: no warning; -v shows the stats line. */
	t = cli_trigger(dir);
	cr_assert_gt(t, 0);
	cr_expect_eq(attach_briefly(t, 0), EXIT_OK);
	cr_expect_eq(lines_with(err, "stats:") + lines_with(err, "warning:"), 0,
		     "stats or a warning with nothing lost:\n%s", read_file(err));
	cr_expect_eq(attach_briefly(t, 1), EXIT_OK);
	cr_expect_eq(lines_with(err, "memprof-bpf: stats: samples "), 1, "no stats line with -v");
	kill(t, SIGTERM);
	wait_exit(t);
}

Test(cli_messages, attach_to_itself_is_refused, .init = setup)
{
	char cmd[512], *text;
	int rc;

	/* exec keeps the shell's pid, so $$ is the loader's own. */
	snprintf(cmd, sizeof(cmd), "sh -c 'exec %s attach $$ -d 1' >'%s' 2>'%s'", loader_bin(), out,
		 err);
	rc = system(cmd);
	cr_expect(WIFEXITED(rc) && WEXITSTATUS(rc) == EXIT_USAGE, "exit %d", WEXITSTATUS(rc));
	text = read_file(err);
	cr_expect(text && strstr(text, "is this memprof-bpf itself"), "%s", text);
	cr_expect_eq(file_lines(err), 1, "not one line: %s", text);
	free(text);
}

Test(cli_messages, list_without_privileges_counts_what_it_could_not_inspect, .init = setup)
{
	char cmd[512], *text, *at;
	int rc;

	/* nobody may not read root's processes (pid 1 at least). */
	snprintf(cmd, sizeof(cmd),
		 "setpriv --reuid=65534 --regid=65534 --clear-groups %s list >'%s' 2>'%s'",
		 loader_bin(), out, err);
	rc = system(cmd);
	cr_expect(WIFEXITED(rc) && WEXITSTATUS(rc) == EXIT_OK, "exit %d", WEXITSTATUS(rc));
	text = read_file(err);
	at = text ? strstr(text, "note: ") : NULL;
	cr_expect(
	    at && strtol(at + 6, NULL, 10) > 0 &&
		strstr(at, "processes could not be inspected (permission denied: run as root"),
	    "no count of the processes not inspected: %s", text);
	free(text);
}

/* Standard output of a shell command, malloc'ed. */
static char *out_of(const char *cmd)
{
	FILE *p = popen(cmd, "r");
	char *buf = NULL;
	size_t len = 0, n;
	char chunk[4096];
	FILE *m = open_memstream(&buf, &len);

	cr_assert(p && m);
	while ((n = fread(chunk, 1, sizeof(chunk), p)) > 0)
		fwrite(chunk, 1, n, m);
	pclose(p);
	fclose(m);
	return buf;
}

/* The man page's section from ".SH name" to the next ".SH", malloc'ed. */
static char *man_section(const char *name)
{
	char *man = read_file("docs/memprof-bpf.1"), key[64], *at, *end;

	cr_assert(man, "no docs/memprof-bpf.1");
	snprintf(key, sizeof(key), "\n.SH %s\n", name);
	at = strstr(man, key);
	cr_assert(at, "no %s section in the man page", name);
	at += strlen(key);
	end = strstr(at, "\n.SH ");
	if (end)
		*end = '\0';
	memmove(man, at, strlen(at) + 1);
	return man;
}

/*
 * The man page lists every variable the code reads (getenv and the host's
 * environment names), and the exit codes --help gives, 0 to 4.
 */
Test(cli_messages, man_page_has_the_environment_and_the_exit_codes, .init = setup)
{
	char *env = man_section("ENVIRONMENT"), *status = man_section("EXIT STATUS");
	char *names = out_of("grep -rhoE 'getenv\\(\"[A-Za-z_]+\"\\)|_ENV_[A-Z_]+ \"[A-Z_]+\"' "
			     "userspace runtime-probes/core runtime-probes/hosts/preload "
			     "| grep -oE '\"[A-Za-z_]+\"' | tr -d '\"' | sort -u");
	char *help, *tok, *save = NULL;
	int n = 0;

	cr_assert(names && *names, "no getenv found in the sources");
	for (tok = strtok_r(names, "\n", &save); tok; tok = strtok_r(NULL, "\n", &save)) {
		cr_expect(strstr(env, tok), "%s is read but not in the man page's ENVIRONMENT",
			  tok);
		n++;
	}
	cr_expect_geq(n, 5, "only %d variables found", n);
	help = out_of("build/memprof-bpf attach --help");
	cr_assert(help && strstr(help, "Exit codes: "));
	for (int code = 0; code <= 4; code++) {
		char in_help[16], in_man[16];

		snprintf(in_help, sizeof(in_help), "%d ", code);
		snprintf(in_man, sizeof(in_man), ".TP\n%d\n", code);
		cr_expect(strstr(strstr(help, "Exit codes: "), in_help), "exit %d not in --help",
			  code);
		cr_expect(strstr(status, in_man), "exit %d not in the man page", code);
	}
	cr_expect(!strstr(status, ".TP\n5\n"), "an exit code --help does not give");
	free(env);
	free(status);
	free(names);
	free(help);
}

/*
 * The kernel memory the stack table takes: --help computes it (the
 * tracer's figures, one source), and the README and the man page say the
 * same numbers.
 */
Test(cli_messages, stack_memory_figures_agree_with_help, .init = setup)
{
	char *help = out_of("build/memprof-bpf attach --help"), *at, want[64];
	char *readme = read_file("README.md"), *man = read_file("docs/memprof-bpf.1");
	int mib = 0;
	double kib = 0;

	cr_assert(help && readme && man);
	at = strstr(help, "--max-stacks N");
	cr_assert(at, "no --max-stacks in --help");
	at = strstr(at, "about ");
	cr_assert(at && sscanf(at, "about %d MiB", &mib) == 1, "no MiB figure in --help");
	at = strstr(at, ", and ");
	cr_assert(at && sscanf(at, ", and %lf KiB", &kib) == 1, "no KiB figure in --help");
	snprintf(want, sizeof(want), "about %d MiB of", mib);
	cr_expect(strstr(readme, want), "README.md does not say \"%s\"", want);
	cr_expect(strstr(man, want), "the man page does not say \"%s\"", want);
	snprintf(want, sizeof(want), "%.1f KiB more per stack", kib);
	cr_expect(strstr(readme, want), "README.md does not say \"%s\"", want);
	cr_expect(strstr(man, want), "the man page does not say \"%s\"", want);
	free(help);
	free(readme);
	free(man);
}
