/* Process and CSV helpers of the lifetime and timeline tests. */
#include "lifetimes_util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_DIRS 16
static char dirs[MAX_DIRS][64];
static int n_dirs;

static void dirs_remove(void)
{
	char cmd[sizeof(dirs[0]) + 32];

	for (int i = 0; i < n_dirs; i++) {
		snprintf(cmd, sizeof(cmd), "rm -rf -- '%.63s'", dirs[i]);
		if (system(cmd))
			fprintf(stderr, "lifetimes tests: could not remove %s\n", dirs[i]);
	}
}

void lt_tmpdir(char *out, size_t len)
{
	snprintf(out, len, "/tmp/memprof-lifetimes-XXXXXX");
	if (!mkdtemp(out)) {
		out[0] = '\0';
		return;
	}
	if (!n_dirs)
		atexit(dirs_remove);
	if (n_dirs < MAX_DIRS)
		snprintf(dirs[n_dirs++], sizeof(dirs[0]), "%s", out);
}

static pid_t start(char *const argv[], const char *env, const char *out, const char *err)
{
	pid_t pid = fork();

	if (pid == 0) {
		int fo = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int fe = open(err ? err : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fo >= 0)
			dup2(fo, STDOUT_FILENO);
		if (fe >= 0)
			dup2(fe, STDERR_FILENO);
		if (env)
			putenv((char *)env);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static int wait_code(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int lt_run(const char *mode, const char *dir, const char *rate, const char *const extra[])
{
	const char *modes[] = {mode};

	return lt_run_multi(modes, 1, dir, rate, extra, NULL);
}

int lt_start_progs(const char *const modes[], int n_progs, const char *dir, pid_t *p)
{
	static char env[600];
	char cwd[400], ready[LT_MAX_PROGS][256], out[256], *argv[4];
	const struct timespec pause = {0, 10000000};

	if (!getcwd(cwd, sizeof(cwd)) || n_progs < 1 || n_progs > LT_MAX_PROGS)
		return -1;
	snprintf(env, sizeof(env), "LD_PRELOAD=%s/%s", cwd, PRELOAD_SO);
	for (int k = 0; k < n_progs; k++) {
		/* The first program's files keep their names: ready, prog.out. */
		snprintf(ready[k], sizeof(ready[k]), k ? "%s/ready%d" : "%s/ready", dir, k);
		snprintf(out, sizeof(out), k ? "%s/prog%d.out" : "%s/prog.out", dir, k);
		argv[0] = PROG_BIN;
		argv[1] = ready[k];
		argv[2] = (char *)modes[k];
		argv[3] = NULL;
		p[k] = start(argv, env, out, NULL);
		if (p[k] <= 0) {
			while (k-- > 0)
				kill(p[k], SIGKILL), wait_code(p[k]);
			return -1;
		}
	}
	for (int k = 0; k < n_progs; k++)
		for (int i = 0; i < 1000; i++) {
			char *line = lt_first_line(ready[k]);
			int got = line && atoi(line) == (int)p[k];

			free(line);
			if (got)
				break;
			nanosleep(&pause, NULL);
		}
	return 0;
}

pid_t lt_start_loader(const pid_t *p, int n_progs, const char *dir, const char *rate,
		      const char *const extra[])
{
	char err[256], go[256], link[256], pidbuf[LT_MAX_PROGS][16], *argv[48];
	int n = 0;

	snprintf(err, sizeof(err), "%s/loader.err", dir);
	/*
	 * The programs start their work once the loader is ready
	 * (wait_tracer.h): its --ready-file is the first program's READY.go,
	 * and every other program's READY.go names it.
	 */
	snprintf(go, sizeof(go), "%s/ready.go", dir);
	for (int k = 1; k < n_progs && k < LT_MAX_PROGS; k++) {
		snprintf(link, sizeof(link), "%s/ready%d.go", dir, k);
		if (symlink("ready.go", link) && errno != EEXIST)
			return -1;
	}
	argv[n++] = LOADER_BIN;
	argv[n++] = "attach";
	for (int k = 0; k < n_progs && k < LT_MAX_PROGS; k++) {
		snprintf(pidbuf[k], sizeof(pidbuf[k]), "%d", (int)p[k]);
		argv[n++] = pidbuf[k];
	}
	argv[n++] = "--rate";
	argv[n++] = (char *)rate;
	argv[n++] = "--ready-file";
	argv[n++] = go;
	for (int i = 0; extra && extra[i] && n < 46; i++)
		argv[n++] = (char *)extra[i];
	argv[n] = NULL;
	return start(argv, NULL, NULL, err);
}

int lt_finish(pid_t loader, const pid_t *p, int n_progs)
{
	int code = wait_code(loader), pcode = 0;

	for (int k = 0; k < n_progs; k++) {
		if (code != 0)
			kill(p[k], SIGKILL);
		pcode |= wait_code(p[k]);
	}
	return pcode == 0 ? code : -1;
}

int lt_run_multi(const char *const modes[], int n_progs, const char *dir, const char *rate,
		 const char *const extra[], int *pids)
{
	pid_t p[LT_MAX_PROGS], l;

	if (lt_start_progs(modes, n_progs, dir, p))
		return -1;
	for (int k = 0; pids && k < n_progs; k++)
		pids[k] = (int)p[k];
	l = lt_start_loader(p, n_progs, dir, rate, extra);
	return lt_finish(l, p, n_progs);
}

char *lt_first_line(const char *path)
{
	char *text = read_file(path), *nl;

	if (text && (nl = strchr(text, '\n')))
		*nl = '\0';
	return text;
}

/* Field i of a CSV line (unquoted), into out. */
static int field(const char *line, int i, char *out, size_t len)
{
	const char *p = line, *end;

	for (int k = 0; k < i; k++) {
		p = strchr(p, ',');
		if (!p)
			return -1;
		p++;
	}
	end = p + strcspn(p, ",\n");
	snprintf(out, len, "%.*s", (int)(end - p), p);
	return 0;
}

int lt_csv_cell(const char *path, const char *site, const char *col, char *out, size_t len)
{
	char *text = read_file(path), *line, *save = NULL, cell[256];
	int idx = -1, rc = -1;

	if (!text)
		return -1;
	line = strtok_r(text, "\n", &save);
	for (int i = 0; line && !field(line, i, cell, sizeof(cell)); i++)
		if (!strcmp(cell, col)) {
			idx = i;
			break;
		}
	while (idx >= 0 && (line = strtok_r(NULL, "\n", &save)))
		if (!field(line, 0, cell, sizeof(cell)) && !strcmp(cell, site)) {
			rc = field(line, idx, out, len);
			break;
		}
	free(text);
	return rc;
}

double lt_csv_num(const char *path, const char *site, const char *col)
{
	char cell[256], *end;
	double v;

	if (lt_csv_cell(path, site, col, cell, sizeof(cell)) || !cell[0])
		return NAN;
	v = strtod(cell, &end);
	return *end ? NAN : v;
}

int lt_log2_us(double ms)
{
	return (int)floor(log2(ms * 1000));
}
