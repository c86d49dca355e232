#include "ocaml_util.h"
#include "testlib.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/types.h>

#include "memprof_probe_abi.h"

void ocaml_tmpdir(char *out, size_t len)
{
	snprintf(out, len, "/tmp/memprof-ocaml-XXXXXX");
	cr_assert_not_null(mkdtemp(out), "mkdtemp");
}

pid_t ocaml_spawn(const char *const argv[], const char *out, const char *err)
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0, "fork");
	if (pid == 0) {
		int o = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(err ? err : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (o < 0 || e < 0)
			_exit(126);
		dup2(o, 1);
		dup2(e, 2);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

int ocaml_wait(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

pid_t ocaml_start(const char *dir, const char *out, const char *const argv[])
{
	char ready[512];
	const struct timespec pause = {0, 10000000};
	pid_t pid = ocaml_spawn(argv, out, NULL);

	snprintf(ready, sizeof(ready), "%s/ready", dir);
	for (int i = 0; i < 1000; i++) {
		FILE *f = fopen(ready, "r");
		int got = 0;

		if (f) {
			got = fgetc(f) != EOF;
			fclose(f);
		}
		if (got)
			return pid;
		nanosleep(&pause, NULL);
	}
	cr_assert_fail("%s did not start", argv[0]);
	return -1;
}

static int attach(pid_t pid, const char *seconds, const char *rate, const char *dir,
		  const char *extra)
{
	char spid[32], views[512], err[512];

	snprintf(spid, sizeof(spid), "%d", (int)pid);
	snprintf(views, sizeof(views), "%s/views", dir);
	snprintf(err, sizeof(err), "%s/loader.err", dir);
	const char *argv[] = {OCAML_LOADER, "attach",	   spid,  "-d",	 seconds, "--rate",
			      rate,	    "--all-views", views, extra, NULL};
	return ocaml_wait(ocaml_spawn(argv, NULL, err));
}

int ocaml_attach(pid_t pid, const char *seconds, const char *rate, const char *dir)
{
	return attach(pid, seconds, rate, dir, NULL);
}

int ocaml_attach_verbose(pid_t pid, const char *seconds, const char *rate, const char *dir)
{
	return attach(pid, seconds, rate, dir, "-v");
}

/* Sum of the weights of the lines whose innermost frame is frame (NULL: all). */
static double folded_sum(const char *path, const char *frame)
{
	char *text = read_file(path), *save = NULL;
	double sum = 0;

	cr_assert_not_null(text, "cannot read %s", path);
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(line, ' '), *inner;

		if (!sp)
			continue;
		*sp = '\0';
		inner = strrchr(line, ';');
		inner = inner ? inner + 1 : line;
		if (!frame || !strcmp(inner, frame))
			sum += strtod(sp + 1, NULL);
	}
	free(text);
	return sum;
}

double folded_frame_sum(const char *path, const char *frame)
{
	return folded_sum(path, frame);
}

double folded_total(const char *path)
{
	return folded_sum(path, NULL);
}

int file_has(const char *path, const char *needle)
{
	char *text = read_file(path);
	int found = text && strstr(text, needle);

	free(text);
	return found;
}

double out_value(const char *path, const char *key)
{
	double v;

	return file_value(path, key, &v) ? -1 : v;
}
