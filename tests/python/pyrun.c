/* Helpers of the Python host's tests: see pyrun.h. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exit_codes.h"
#include "pyrun.h"
#include "testlib.h"

/* Most arguments a test gives the loader. */
#define PYRUN_MAX_ARGS 32

char pyrun_dir[64];

void pyrun_setup(void)
{
	snprintf(pyrun_dir, sizeof(pyrun_dir), "/tmp/memprof-python-XXXXXX");
	cr_assert_not_null(mkdtemp(pyrun_dir));
	cr_assert_eq(access(PYTHON, X_OK), 0, "no %s (Debian package python3)", PYTHON);
}

void pyrun_teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", pyrun_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", pyrun_dir);
}

void pyrun_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", pyrun_dir, name);
}

pid_t pyrun_spawn(const char *const argv[], const char *out, const char *err)
{
	pid_t pid = test_spawn(argv, NULL, out, err);

	cr_assert_geq(pid, 0);
	return pid;
}

int pyrun_wait_status(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		cr_assert_eq(errno, EINTR, "waitpid: %s", strerror(errno));
	return status;
}

static void tick(void)
{
	const struct timespec t = {0, 10000000};

	nanosleep(&t, NULL);
}

int pyrun_wait_text(const char *path, const char *text)
{
	for (double waited = 0; waited < TEST_EVENT_TIMEOUT_S; waited += 0.01) {
		char *t = read_file(path);
		int found = t && strstr(t, text);

		free(t);
		if (found)
			return 0;
		tick();
	}
	return -1;
}

/* Has pid exited (a zombie, not reaped yet)? */
static int exited(pid_t pid)
{
	char path[64], *stat;
	int z;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	stat = read_file(path);
	/* "PID (comm) S ...": comm may hold spaces and parentheses, the last ')' ends it. */
	const char *close = stat ? strrchr(stat, ')') : NULL;
	z = !close || close[1] == 0 || close[2] == 'Z' || close[2] == 'X';
	free(stat);
	return z;
}

/*
 * Wait until the file at path holds text, failing at once if pid (called
 * who, its stderr in log) ends first, and after the event timeout.
 */
static void wait_text_while(const char *path, const char *text, pid_t pid, const char *who,
			    const char *log)
{
	for (double waited = 0;; waited += 0.01) {
		char *t = read_file(path);
		int found = t && strstr(t, text);

		free(t);
		if (found)
			return;
		cr_assert(!exited(pid), "%s ended before \"%s\": %s", who, text, read_file(log));
		cr_assert_lt(waited, TEST_EVENT_TIMEOUT_S, "no \"%s\" from %s: %s", text, who,
			     read_file(log));
		tick();
	}
}

void pyrun_start(struct pyrun *r, const char *const argv[], const char *const env[])
{
	memset(r, 0, sizeof(*r));
	pyrun_path(r->out, sizeof(r->out), "out");
	pyrun_path(r->err, sizeof(r->err), "err");
	pyrun_path(r->stop, sizeof(r->stop), "stop");
	r->prog = test_spawn(argv, env, r->out, r->err);
	cr_assert_geq(r->prog, 0);
	wait_text_while(r->out, "ready", r->prog, argv[0], r->err);
}

void pyrun_attach(struct pyrun *r, const char *const args[])
{
	const char *argv[PYRUN_MAX_ARGS + 5] = {LOADER, "attach", NULL, "-v"};
	char pid[16], name[32];
	size_t n = 4;

	snprintf(pid, sizeof(pid), "%d", (int)r->prog);
	argv[2] = pid;
	for (size_t i = 0; args && args[i]; i++) {
		cr_assert_lt(n, PYRUN_MAX_ARGS + 4, "too many loader arguments");
		argv[n++] = args[i];
	}
	argv[n] = NULL;
	snprintf(name, sizeof(name), "loader%d.err", r->attaches++);
	pyrun_path(r->lerr, sizeof(r->lerr), name);
	r->loader = pyrun_spawn(argv, "/dev/null", r->lerr);
}

/* Lines of text, from offset on, that start with "round". */
static int rounds_in(const char *text, size_t from)
{
	int n = 0;

	if (!text || strlen(text) <= from)
		return 0;
	for (const char *l = text + from; l && *l;) {
		n += !strncmp(l, "round", 5);
		l = strchr(l, '\n');
		l = l ? l + 1 : NULL;
	}
	return n;
}

void pyrun_wait_more_rounds(struct pyrun *r, int n)
{
	char *text = read_file(r->out);
	size_t from = text ? strlen(text) : 0;

	free(text);
	/* From a line's start: "ready" ends with one. */
	for (double waited = 0;; waited += 0.01) {
		text = read_file(r->out);
		int seen = rounds_in(text, from);

		free(text);
		if (seen >= n)
			return;
		cr_assert(!exited(r->prog), "python3 ended after %d of %d rounds: %s", seen, n,
			  read_file(r->err));
		cr_assert_lt(waited, TEST_EVENT_TIMEOUT_S, "%d of %d rounds: %s", seen, n,
			     read_file(r->out));
		tick();
	}
}

void pyrun_wait_rounds(struct pyrun *r, int n)
{
	wait_text_while(r->lerr, "target sampling at rate", r->loader, "the loader", r->lerr);
	pyrun_wait_more_rounds(r, n);
}

static void expect_loader_ok(struct pyrun *r)
{
	int ls = pyrun_wait_status(r->loader);

	r->loader = 0;
	cr_assert(WIFEXITED(ls) && WEXITSTATUS(ls) == EXIT_OK, "loader status %#x: %s", ls,
		  read_file(r->lerr));
}

void pyrun_detach(struct pyrun *r)
{
	cr_assert_gt(r->loader, 0);
	kill(r->loader, SIGINT);
	expect_loader_ok(r);
}

void pyrun_finish(struct pyrun *r)
{
	int fd = open(r->stop, O_WRONLY | O_CREAT, 0644);

	cr_assert_geq(fd, 0);
	close(fd);
	int ps = pyrun_wait_status(r->prog);
	if (r->loader > 0)
		expect_loader_ok(r);
	cr_assert(WIFEXITED(ps) && WEXITSTATUS(ps) == 0, "python3 status %#x: %s", ps,
		  read_file(r->err));
}

int pyrun_script_line(const char *text)
{
	char *s = read_file(SCRIPT);
	const char *at = s ? strstr(s, text) : NULL;
	int line = 1;

	if (!at) {
		free(s);
		return 0;
	}
	for (const char *c = s; c < at; c++)
		line += *c == '\n';
	free(s);
	return line;
}

double pyrun_weight_with(const char *path, const char *key)
{
	char *text = read_file(path);
	double sum = 0;

	cr_assert_not_null(text, "no %s", path);
	for (char *line = text; *line;) {
		char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		char *sp = memrchr(line, ' ', len);

		if (sp && memmem(line, (size_t)(sp - line), key, strlen(key)))
			sum += strtod(sp + 1, NULL);
		if (!end)
			break;
		line = end + 1;
	}
	free(text);
	return sum;
}

double pyrun_snapshots_weight_with(const char *dir, const char *key)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	double sum = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)) != NULL) {
		char path[512];
		size_t len = strlen(e->d_name);

		if (len < 7 || strcmp(e->d_name + len - 7, ".folded"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		sum += pyrun_weight_with(path, key);
	}
	closedir(d);
	return sum;
}

char *pyrun_hook_lines(const char *path)
{
	char *text = read_file(path);
	char *lines = malloc(text ? strlen(text) + 1 : 1);
	size_t n = 0;

	cr_assert_not_null(lines);
	for (char *l = text; l && *l;) {
		char *eol = strchr(l, '\n');
		size_t len = eol ? (size_t)(eol - l + 1) : strlen(l);
		if (!strncmp(l, "hooked\n", 7) || !strncmp(l, "unhooked\n", 9))
			memcpy(lines + n, l, len), n += len;
		l = eol ? eol + 1 : NULL;
	}
	lines[n] = 0;
	free(text);
	return lines;
}
