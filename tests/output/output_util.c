/* Helpers of the output tests (see output_util.h). */
#include "output_util.h"
#include <criterion/criterion.h>

#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_DIRS 32
static char dirs[MAX_DIRS][32];
static int n_dirs;

static void dirs_remove(void)
{
	char cmd[128];

	for (int i = 0; i < n_dirs; i++) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%.31s'", dirs[i]);
		if (system(cmd)) {
			/* best effort */
		}
	}
}

void out_tmpdir(char *out, size_t len)
{
	char tmpl[] = "/tmp/memprof-output-XXXXXX";

	if (!mkdtemp(tmpl)) {
		out[0] = '\0';
		return;
	}
	snprintf(out, len, "%s", tmpl);
	if (n_dirs < MAX_DIRS) {
		if (!n_dirs)
			atexit(dirs_remove);
		snprintf(dirs[n_dirs++], sizeof(dirs[0]), "%s", tmpl);
	}
}

static pid_t spawn(char *const argv[], char *const env_add, const char *out, const char *err)
{
	pid_t pid = fork();

	if (pid == 0) {
		int o = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(err ? err : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(o, 1);
		dup2(e, 2);
		if (env_add)
			putenv(env_add);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static int wait_exit(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int out_profile(const char *prog, const char *dir, const char *rate, const char *const extra[])
{
	return out_profile_stdout(prog, dir, rate, extra, NULL);
}

int out_profile_stdout(const char *prog, const char *dir, const char *rate,
		       const char *const extra[], const char *stdout_path)
{
	static char preload[512];
	char bin[256], ready[256], go[300], out[256], err[256], pidbuf[16], *argv[32];
	const struct timespec pause = {0, 10000000};
	pid_t p, l;
	int n = 0, code, pcode;
	FILE *f;

	snprintf(bin, sizeof(bin), "%s/%s", PROGS_DIR, prog);
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	snprintf(out, sizeof(out), "%s/%s.out", dir, prog);
	snprintf(err, sizeof(err), "%s/loader.err", dir);
	{
		char cwd[256];

		if (!getcwd(cwd, sizeof(cwd)))
			return -1;
		snprintf(preload, sizeof(preload), "LD_PRELOAD=%s/%s", cwd, PRELOAD_SO);
	}
	argv[0] = bin;
	argv[1] = ready;
	argv[2] = NULL;
	p = spawn(argv, preload, out, NULL);
	if (p <= 0)
		return -1;
	for (int i = 0; i < 1000 && access(ready, F_OK); i++)
		nanosleep(&pause, NULL);
	nanosleep(&pause, NULL); /* the pid is written */
	f = fopen(ready, "r");
	if (!f) {
		kill(p, SIGKILL);
		wait_exit(p);
		return -1;
	}
	fclose(f);
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)p);
	argv[n++] = LOADER_BIN;
	argv[n++] = "attach";
	argv[n++] = pidbuf;
	argv[n++] = "--rate";
	argv[n++] = (char *)rate;
	/* The program starts its work once the loader is ready (wait_tracer.h). */
	snprintf(go, sizeof(go), "%s.go", ready);
	argv[n++] = "--ready-file";
	argv[n++] = go;
	for (int i = 0; extra[i] && n < 30; i++)
		argv[n++] = (char *)extra[i];
	argv[n] = NULL;
	l = spawn(argv, NULL, stdout_path, err);
	code = wait_exit(l);
	pcode = wait_exit(p);
	return pcode == 0 ? code : -1;
}

char *out_command(const char *cmd)
{
	FILE *p = popen(cmd, "r");
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);

	if (!p || !buf) {
		if (p)
			pclose(p);
		free(buf);
		return NULL;
	}
	for (;;) {
		size_t got;

		if (len + 1024 > cap) {
			char *nb = realloc(buf, cap *= 2);

			if (!nb)
				break;
			buf = nb;
		}
		got = fread(buf + len, 1, cap - len - 1, p);
		if (!got)
			break;
		len += got;
	}
	buf[len] = '\0';
	pclose(p);
	return buf;
}

char *out_file(const char *path)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "cat '%s' 2>/dev/null", path);
	return out_command(cmd);
}

int out_source_line(const char *path, const char *needle)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		n++;
		if (strstr(line, needle)) {
			fclose(f);
			return n;
		}
	}
	fclose(f);
	return -1;
}

double out_parse_bytes(const char *s, const char **end)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	char *e;
	double v = strtod(s, &e);

	if (e == s)
		return NAN;
	while (*e == ' ')
		e++;
	for (int u = 4; u >= 0; u--) {
		size_t k = strlen(units[u]);

		if (!strncmp(e, units[u], k)) {
			if (end)
				*end = e + k;
			return v * pow(1024, u);
		}
	}
	return NAN;
}

void out_expect_site_lines(const char *lines, const char *source, const char *const sites[], int n)
{
	for (int s = 0; s < n; s++) {
		char marker[64], want[160];
		int line;

		snprintf(marker, sizeof(marker), "LINE:%s", sites[s]);
		line = out_source_line(source, marker);
		cr_assert_gt(line, 0, "no %s in %s", marker, source);
		snprintf(want, sizeof(want), "%s %s:%d\n", sites[s], source, line);
		cr_expect(strstr(lines, want), "no '%s' in:\n%s", want, lines);
	}
}

static const char *const chromium_flags =
    "--headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
    "--disable-background-networking --disable-component-update --disable-sync";

char *out_chromium_dom(const char *dir, const char *svg, const char *fragment, int width)
{
	static int n;
	char cmd[2048], profile[256], cwd[256];

	cr_assert(getcwd(cwd, sizeof(cwd)));
	snprintf(profile, sizeof(profile), "%s/chromium-%d", dir, n++);
	cr_assert_eq(system("command -v chromium >/dev/null"), 0,
		     "chromium is not installed (Debian package chromium)");
	snprintf(cmd, sizeof(cmd),
		 "mkdir '%s' && HOME='%s' timeout 120 chromium %s --window-size=%d,900 "
		 "--user-data-dir='%s' --dump-dom 'file://%s%s%s#%s' 2>'%s.err'",
		 profile, profile, chromium_flags, width, profile, svg[0] == '/' ? "" : cwd,
		 svg[0] == '/' ? "" : "/", svg, fragment, profile);
	return out_command(cmd);
}

double out_attr_value(const char *dom, const char *attr, const char *key)
{
	char a[64], k[64];
	const char *p, *end;

	snprintf(a, sizeof(a), "%s=\"", attr);
	snprintf(k, sizeof(k), "%s=", key);
	p = strstr(dom, a);
	if (!p)
		return NAN;
	p += strlen(a);
	end = strchr(p, '"');
	for (const char *q = p; end && (q = strstr(q, k)) && q < end; q++)
		if (q == p || q[-1] == ' ')
			return strtod(q + strlen(k), NULL);
	return NAN;
}
