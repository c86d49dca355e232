/* Process, file and output helpers of the attach tests. */
#include "attach_util.h"

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

#include <linux/types.h>
#include "trace/control.h"
#include "trace/target.h"

#define STATS_PREFIX "memprof-bpf: stats:"
#define MAX_ARGS 32

#define MAX_TMPDIRS 16
static char tmpdirs[MAX_TMPDIRS][64];
static int n_tmpdirs;

/* The test process is ending: remove its temporary directories. */
static void tmpdirs_remove(void)
{
	char cmd[sizeof(tmpdirs) + 32];

	for (int i = 0; i < n_tmpdirs; i++) {
		snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", tmpdirs[i]);
		if (system(cmd))
			fprintf(stderr, "attach tests: could not remove %s\n", tmpdirs[i]);
	}
	n_tmpdirs = 0;
}

void tmpdir_make(char *out, size_t len)
{
	snprintf(out, len, "/tmp/memprof-attach-XXXXXX");
	if (!mkdtemp(out)) {
		out[0] = '\0';
		return;
	}
	if (n_tmpdirs == 0)
		atexit(tmpdirs_remove);
	if (n_tmpdirs < MAX_TMPDIRS)
		snprintf(tmpdirs[n_tmpdirs++], sizeof(tmpdirs[0]), "%s", out);
}

static void redirect(const char *path, int fd)
{
	int f = open(path ? path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (f >= 0) {
		dup2(f, fd);
		close(f);
	}
}

pid_t spawn(char *const argv[], const char *out, const char *err)
{
	pid_t pid = fork();

	if (pid == 0) {
		redirect(out, STDOUT_FILENO);
		redirect(err, STDERR_FILENO);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

int wait_exit(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int wait_file(const char *path, double timeout_s)
{
	return wait_nonempty_file(path, timeout_s);
}

int wait_mapped(pid_t pid, const char *needle)
{
	char maps[64];

	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	return wait_text(maps, needle, TEST_EVENT_TIMEOUT_S);
}

int wait_exec(pid_t pid, const char *path)
{
	const struct timespec pause = {0, 5000000};
	char want[PATH_MAX], exe[64], got[PATH_MAX];

	if (!realpath(path, want))
		return -1;
	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)pid);
	for (double waited = 0; waited < TEST_EVENT_TIMEOUT_S; waited += 0.005) {
		ssize_t n = readlink(exe, got, sizeof(got) - 1);

		if (n > 0) {
			got[n] = '\0';
			if (!strcmp(got, want))
				return 0;
		}
		nanosleep(&pause, NULL);
	}
	return -1;
}

static int build_argv(char *argv[], const char *bin, const char *const args[])
{
	int n = 0;

	argv[n++] = (char *)bin;
	for (int i = 0; args && args[i] && n < MAX_ARGS - 1; i++)
		argv[n++] = (char *)args[i];
	argv[n] = NULL;
	return n;
}

pid_t trigger_start(const char *dir, const char *out, const char *const args[])
{
	return trigger_start_bin(TRIGGER_BIN, dir, out, args);
}

pid_t trigger_start_bin(const char *bin, const char *dir, const char *out, const char *const args[])
{
	char ready[512], *argv[MAX_ARGS];
	const char *all[MAX_ARGS];
	int n = 0;
	pid_t pid;

	snprintf(ready, sizeof(ready), "%s/trigger-%d.ready", dir, (int)rand());
	all[n++] = "--ready-file";
	all[n++] = ready;
	for (int i = 0; args && args[i] && n < MAX_ARGS - 1; i++)
		all[n++] = args[i];
	all[n] = NULL;
	build_argv(argv, bin, all);
	pid = spawn(argv, out, NULL);
	if (pid < 0 || wait_file(ready, TEST_EVENT_TIMEOUT_S) < 0)
		return -1;
	return pid;
}

const char *loader_bin(void)
{
	const char *e = getenv("MEMPROF_BPF_LOADER");

	return e && *e ? e : LOADER_BIN;
}

pid_t loader_start(const char *err_path, const char *const args[])
{
	char *argv[MAX_ARGS];

	build_argv(argv, loader_bin(), args);
	return spawn(argv, NULL, err_path);
}

pid_t loader_start_ready(const char *dir, const char *err_path, const char *const args[], int *code)
{
	static int n_ready;
	char ready[512], *argv[MAX_ARGS];
	const char *all[MAX_ARGS];
	int n = 0;
	pid_t loader;

	snprintf(ready, sizeof(ready), "%s/loader-%d.ready", dir, n_ready++);
	for (int i = 0; args[i] && n < MAX_ARGS - 3; i++)
		all[n++] = args[i];
	all[n++] = "--ready-file";
	all[n++] = ready;
	all[n] = NULL;
	build_argv(argv, loader_bin(), all);
	loader = spawn(argv, NULL, err_path);
	switch (wait_loader_ready(loader, ready, TEST_EVENT_TIMEOUT_S, code)) {
	case 0:
		return loader;
	case 1:
		return 0;
	default:
		return -1;
	}
}

int loader_run_out(const char *out_path, const char *err_path, const char *const args[])
{
	char *argv[MAX_ARGS];

	build_argv(argv, loader_bin(), args);
	return wait_exit(spawn(argv, out_path, err_path));
}

int loader_run(const char *err_path, const char *const args[])
{
	return wait_exit(loader_start(err_path, args));
}

static int site_slot(struct site_table *t, const char *name)
{
	int i = site_table_find(t, name);

	if (i >= 0 || t->n == MAX_SITES)
		return i;
	snprintf(t->name[t->n], SITE_NAME_MAX, "%s", name);
	return t->n++;
}

int site_table_find(const struct site_table *t, const char *name)
{
	for (int i = 0; i < t->n; i++)
		if (!strcmp(t->name[i], name))
			return i;
	return -1;
}

long long site_value(const struct site_table *t, const char *name, int col)
{
	int i = site_table_find(t, name);

	return i < 0 ? 0 : t->v[i][col];
}

int site_table_read_folded(const char *path, struct site_table *t)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t len = 0;

	memset(t, 0, sizeof(*t));
	if (!f)
		return -1;
	while (getline(&line, &len, f) > 0) {
		char *sp = strrchr(line, ' '), *site = NULL, *p;
		int i;

		if (!sp)
			continue;
		*sp = '\0';
		/* The innermost frame naming a site. */
		for (p = strtok(line, ";"); p; p = strtok(NULL, ";"))
			if (!strncmp(p, "site_", 5))
				site = p;
		i = site_slot(t, site ? site : "(no site)");
		if (i >= 0)
			t->v[i][0] += atoll(sp + 1);
	}
	free(line);
	fclose(f);
	return 0;
}

int site_table_read_lines(const char *path, struct site_table *t)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t len = 0;

	memset(t, 0, sizeof(*t));
	if (!f)
		return -1;
	while (getline(&line, &len, f) > 0) {
		char name[SITE_NAME_MAX], *tok;
		int i, col = 0;

		if (sscanf(line, "site %63s", name) != 1)
			continue;
		i = site_slot(t, name);
		if (i < 0)
			continue;
		strtok(line, " \n");
		strtok(NULL, " \n");
		while ((tok = strtok(NULL, " \n")) && (tok = strtok(NULL, " \n")) && col < 5)
			t->v[i][col++] = atoll(tok);
	}
	free(line);
	fclose(f);
	return 0;
}

long long loader_stat(const char *err_path, const char *key)
{
	char *text = read_file(err_path), *p = text ? strstr(text, STATS_PREFIX) : NULL;
	double v;
	int rc = p ? text_value(p, key, &v) : -1;

	free(text);
	return rc ? -1 : (long long)v;
}

int file_lines(const char *path)
{
	char *text = read_file(path);
	int n = 0;

	if (!text)
		return -1;
	for (char *p = text; *p; p++)
		n += *p == '\n';
	free(text);
	return n;
}

int file_contains(const char *path, const char *needle)
{
	char *text = read_file(path);
	int found = text && strstr(text, needle);

	free(text);
	return found;
}

int target_control(pid_t pid, struct memprof_probe_control *out)
{
	struct symbolizer *sym = symbolizer_new();
	struct target t = {0};
	char err[256];
	int rc = -1;

	if (sym && target_scan(pid, sym, &t, err, sizeof(err)) == TARGET_OK && t.control_addr)
		rc = control_read(pid, t.control_addr, out) ? -1 : 0;
	target_free(&t);
	symbolizer_free(sym);
	return rc;
}

int wait_target_control(pid_t pid, int (*done)(const struct memprof_probe_control *))
{
	const struct timespec pause = {0, 5000000};
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		struct memprof_probe_control c;

		if (target_control(pid, &c) == 0 && done(&c))
			return 0;
		nanosleep(&pause, NULL);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) < TEST_EVENT_TIMEOUT_S);
	return -1;
}

int control_sampled_once(const struct memprof_probe_control *c)
{
	return c->samples > 0;
}

int control_sampling_on(const struct memprof_probe_control *c)
{
	return c->active_rate != 0;
}

int control_sampling_off(const struct memprof_probe_control *c)
{
	return c->active_rate == 0 && c->flags == 0;
}

int wait_text(const char *path, const char *needle, double timeout_s)
{
	const struct timespec pause = {0, 10000000};

	for (double waited = 0; waited < timeout_s; waited += 0.01) {
		if (file_contains(path, needle))
			return 0;
		nanosleep(&pause, NULL);
	}
	return -1;
}
