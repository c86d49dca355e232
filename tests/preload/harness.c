/* tests/preload harness: see harness.h. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#ifndef PRELOAD_BUILD_DIR
#define PRELOAD_BUILD_DIR "build"
#endif

/* Most environment entries passed on. */
#define HARNESS_MAX_ENV 512

extern char **environ;

/* A fresh copy each time (the test process is short-lived). */
static const char *absolute(const char *rel)
{
	char *out = realpath(rel, NULL);

	if (!out)
		cr_assert_fail("missing %s (%s): build it with make", rel, strerror(errno));
	return out;
}

const char *preload_library(void)
{
	return absolute(PRELOAD_BUILD_DIR "/libmemprof-preload.so");
}

const char *preload_prog(const char *name)
{
	char rel[PATH_MAX];

	snprintf(rel, sizeof(rel), "%s/tests/preload/progs/%s", PRELOAD_BUILD_DIR, name);
	return absolute(rel);
}

static char *slurp(int fd)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);

	cr_assert_not_null(buf);
	lseek(fd, 0, SEEK_SET);
	for (;;) {
		if (len + 1 == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			cr_assert_not_null(buf);
		}
		ssize_t n = read(fd, buf + len, cap - len - 1);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = 0;
	close(fd);
	return buf;
}

static int temp_file(void)
{
	char name[] = "/tmp/preload-test-XXXXXX";
	int fd = mkstemp(name);

	cr_assert(fd >= 0, "mkstemp: %s", strerror(errno));
	unlink(name);
	return fd;
}

static void build_env(const char **envp, const char *const env[], int preload)
{
	static char ld_preload[PATH_MAX + 16];
	size_t n = 0;

	for (size_t i = 0; env && env[i] && n < HARNESS_MAX_ENV - 2; i++)
		envp[n++] = env[i];
	if (preload) {
		snprintf(ld_preload, sizeof(ld_preload), "LD_PRELOAD=%s", preload_library());
		envp[n++] = ld_preload;
	}
	for (char **e = environ; *e && n < HARNESS_MAX_ENV - 1; e++) {
		if (!strncmp(*e, "LD_PRELOAD=", 11) || !strncmp(*e, "MEMPROF_", 8))
			continue;
		envp[n++] = *e;
	}
	envp[n] = NULL;
}

static pid_t start(const char *const argv[], const char *const env[], int preload, int out, int err)
{
	const char *envp[HARNESS_MAX_ENV];

	build_env(envp, env, preload);
	fflush(NULL);
	pid_t pid = fork();
	cr_assert(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		dup2(out, 1);
		dup2(err, 2);
		execve(argv[0], (char *const *)argv, (char *const *)envp);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	return pid;
}

int wait_program(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		cr_assert(errno == EINTR, "waitpid: %s", strerror(errno));
	return status;
}

pid_t spawn_program(const char *const argv[], const char *const env[], int preload,
		    const char *out_path, const char *err_path)
{
	int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	cr_assert(out >= 0 && err >= 0, "cannot create %s or %s", out_path, err_path);
	pid_t pid = start(argv, env, preload, out, err);
	close(out);
	close(err);
	return pid;
}

void run_program(const char *const argv[], const char *const env[], int preload,
		 struct run_result *r)
{
	int out = temp_file(), err = temp_file();
	pid_t pid = start(argv, env, preload, out, err);
	int status = wait_program(pid);

	r->status = status;
	r->out = slurp(out);
	r->err = slurp(err);
	if (!run_ok(r))
		cr_log_warn("%s: status %#x\nstdout:\n%s\nstderr:\n%s", argv[0], status, r->out,
			    r->err);
}

void run_result_free(struct run_result *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

int run_ok(const struct run_result *r)
{
	return WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0;
}

const char *result_str(const struct run_result *r, const char *key)
{
	size_t klen = strlen(key);
	const char *found = NULL;

	for (const char *line = r->out; line && *line;) {
		if (!strncmp(line, key, klen) && line[klen] == '=')
			found = line + klen + 1;
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return found;
}

long long result_num(const struct run_result *r, const char *key)
{
	const char *v = result_str(r, key);

	cr_assert_not_null(v, "the program printed no %s=...; stdout:\n%s\nstderr:\n%s", key,
			   r->out, r->err);
	return strtoll(v, NULL, 10);
}
