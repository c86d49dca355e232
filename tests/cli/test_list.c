/*
 * list finds the processes with memprof probes: a runtime (the trigger),
 * the preload and an OCaml program, not sampling at first, then sampling
 * for one tracer at its rate while attach runs.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_util.h"
#include "exit_codes.h"

#define PRELOAD "build/libmemprof-preload.so"
#define OCAML_SITES "build/tests/ocaml/progs/sites"

/* The list's line of pid, copied into line (empty if none). */
static void line_of(const char *out, pid_t pid, char *line, size_t len)
{
	char *text = read_file(out), *p, key[32];

	line[0] = '\0';
	if (!text)
		return;
	snprintf(key, sizeof(key), "\n%d ", (int)pid);
	p = strstr(text, key);
	if (p)
		snprintf(line, len, "%.*s", (int)strcspn(p + 1, "\n"), p + 1);
	free(text);
}

static pid_t start_env(char *const argv[], const char *env)
{
	pid_t p = fork();

	if (p == 0) {
		if (env)
			putenv((char *)env);
		freopen("/dev/null", "w", stdout);
		execv(argv[0], argv);
		_exit(127);
	}
	return p;
}

Test(cli_list, finds_the_targets)
{
	char dir[128], out[256], err[256], lerr[256], line[512], pid[16];
	char *sleeper[] = {"/bin/sleep", "30", NULL};
	char ready[256];
	char *ocaml[] = {OCAML_SITES, "100000000", ready, NULL};
	const struct timespec pause = {0, 50000000};
	char go[300];
	pid_t t, pre, ml, loader;
	int code;

	tmpdir_make(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(err, sizeof(err), "%s/err", dir);
	snprintf(lerr, sizeof(lerr), "%s/loader.err", dir);
	snprintf(ready, sizeof(ready), "%s/ocaml.ready", dir);
	snprintf(go, sizeof(go), "%s.go", ready); /* it runs at once (gate.ml) */
	cr_assert_eq(close(open(go, O_WRONLY | O_CREAT, 0644)), 0);
	t = cli_trigger(dir);
	pre = start_env(sleeper, "LD_PRELOAD=" PRELOAD);
	ml = start_env(ocaml, NULL);
	cr_assert(t > 0 && pre > 0 && ml > 0);
	cr_assert_eq(wait_file(ready, TEST_EVENT_TIMEOUT_S), 0, "the OCaml program did not start");
	cr_assert_eq(wait_mapped(pre, "libmemprof-preload.so"), 0, "the preload never mapped");
	const char *list[] = {"list", NULL};
	cr_expect_eq(cli_run(out, err, list), EXIT_OK);
	line_of(out, t, line, sizeof(line));
	cr_expect(strstr(line, " runtime ") && strstr(line, " no "), "trigger: '%s'", line);
	line_of(out, pre, line, sizeof(line));
	cr_expect(strstr(line, " preload ") && strstr(line, "libmemprof-preload.so"),
		  "preloaded sleep: '%s'", line);
	line_of(out, ml, line, sizeof(line));
	cr_expect(strstr(line, " ocaml "), "OCaml program: '%s'", line);
	cr_expect(file_contains(out, "PID"), "no header");

	/* Attached: sampling for one tracer at the rate asked. */
	snprintf(pid, sizeof(pid), "%d", (int)t);
	const char *largs[] = {"attach", pid, "--rate", "0.001", "-o", "/dev/null", NULL};
	loader = loader_start_ready(dir, lerr, largs, &code);
	cr_assert_gt(loader, 0, "the loader did not attach (exit %d)", code);
	/* The trigger says so at its next safe point. */
	for (double waited = 0; waited < TEST_EVENT_TIMEOUT_S; waited += 0.05) {
		nanosleep(&pause, NULL);
		cli_run(out, err, list);
		line_of(out, t, line, sizeof(line));
		if (strstr(line, " tracer "))
			break;
	}
	cr_expect(strstr(line, " tracer ") && strstr(line, " 0.001 "), "attached trigger: '%s'",
		  line);
	{
		char *tok = strstr(line, "0.001"), *end;
		long tracers = tok ? strtol(tok + 5, &end, 10) : -1;

		cr_expect_eq(tracers, 1, "tracers in '%s'", line);
	}
	kill(loader, SIGINT);
	wait_exit(loader);
	kill(t, SIGTERM);
	kill(pre, SIGTERM);
	kill(ml, SIGTERM);
	wait_exit(t);
	wait_exit(pre);
	wait_exit(ml);
}
