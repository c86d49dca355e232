/* Helpers shared by every test area: see testlib.h. */
#include "testlib.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* One step of every wait below. */
#define WAIT_STEP_NS 5000000L

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void wait_step(void)
{
	const struct timespec step = {0, WAIT_STEP_NS};

	nanosleep(&step, NULL);
}

int wait_nonempty_file(const char *path, double timeout_s)
{
	for (double end = mono_s() + timeout_s; mono_s() < end; wait_step()) {
		struct stat st;

		if (!stat(path, &st) && st.st_size > 0)
			return 0;
	}
	return -1;
}

int wait_loader_ready(pid_t loader, const char *path, double timeout_s, int *code)
{
	for (double end = mono_s() + timeout_s; mono_s() < end; wait_step()) {
		struct stat st;
		int status;

		/* The file is renamed into place whole: existing means written. */
		if (!stat(path, &st))
			return 0;
		if (waitpid(loader, &status, WNOHANG) == loader) {
			*code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
			return 1;
		}
	}
	return -1;
}

int wait_in_syscall(pid_t tid, long nr, double timeout_s)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)tid);
	for (double end = mono_s() + timeout_s; mono_s() < end; wait_step()) {
		char *text = read_file(path);
		char *rest;
		int blocked;

		if (!text)
			return -1;
		/* "running", or the call's number and arguments. */
		blocked = strtol(text, &rest, 10) == nr && rest != text;
		free(text);
		if (blocked)
			return 0;
	}
	return -1;
}

double binomial_bound(double n, double p)
{
	return TEST_SIGMAS * sqrt(n * p * (1 - p));
}

double poisson_bound(double mean)
{
	return TEST_SIGMAS * sqrt(mean);
}

int within_binomial(double observed, double n, double p)
{
	return fabs(observed - n * p) <= binomial_bound(n, p);
}

int within_poisson(double observed, double mean)
{
	return fabs(observed - mean) <= poisson_bound(mean);
}

char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);

	if (!f || !buf) {
		free(buf);
		if (f)
			fclose(f);
		return NULL;
	}
	/* Read to the end: /proc files and pipes have no size to ask. */
	for (;;) {
		size_t n = fread(buf + len, 1, cap - len - 1, f);

		len += n;
		if (n == 0)
			break;
		if (len + 1 == cap) {
			char *p = realloc(buf, cap * 2);

			if (!p)
				break;
			buf = p;
			cap *= 2;
		}
	}
	if (ferror(f)) {
		free(buf);
		buf = NULL;
	} else {
		buf[len] = '\0';
	}
	fclose(f);
	return buf;
}

int text_value(const char *text, const char *key, double *out)
{
	size_t klen = strlen(key);

	for (const char *p = text; p && (p = strstr(p, key)); p++) {
		char *end;
		double v;

		if ((p != text && !isspace((unsigned char)p[-1])) || p[klen] != ' ' ||
		    isspace((unsigned char)p[klen + 1]))
			continue;
		v = strtod(p + klen + 1, &end);
		if (end == p + klen + 1)
			continue;
		*out = v;
		return 0;
	}
	return -1;
}

int file_value(const char *path, const char *key, double *out)
{
	char *text = read_file(path);
	int rc = text ? text_value(text, key, out) : -1;

	free(text);
	return rc;
}

pid_t test_spawn(const char *const argv[], const char *const env[], const char *out,
		 const char *err)
{
	pid_t parent = getpid(), pid = fork();

	if (pid != 0)
		return pid;
	int o = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int e = open(err ? err : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (prctl(PR_SET_PDEATHSIG, SIGTERM) || getppid() != parent || o < 0 || e < 0 ||
	    dup2(o, 1) < 0 || dup2(e, 2) < 0)
		_exit(126);
	unsetenv("LD_PRELOAD");
	for (size_t i = 0; env && env[i]; i++)
		putenv((char *)env[i]);
	execv(argv[0], (char *const *)argv);
	_exit(127);
}

double test_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void test_sleep_s(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};

	nanosleep(&ts, NULL);
}

double test_uniform(void)
{
	return (double)rand() / ((double)RAND_MAX + 1);
}
