/* tests/inject helpers: see inject_util.h. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "inject_util.h"
#include "testlib.h"

/* A program or loader the test starts (testlib.h's test_spawn). */
static pid_t spawn(const char *const argv[], const char *const env[], const char *out,
		   const char *err)
{
	pid_t pid = test_spawn(argv, env, out, err);

	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	return pid;
}

void session_init(struct session *s)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->dir, sizeof(s->dir), "/tmp/inject-test-XXXXXX");
	cr_assert_not_null(mkdtemp(s->dir));
	snprintf(s->go, sizeof(s->go), "%s/go", s->dir);
	snprintf(s->ready, sizeof(s->ready), "%s/ready", s->dir);
	snprintf(s->out, sizeof(s->out), "%s/out", s->dir);
	snprintf(s->err, sizeof(s->err), "%s/err", s->dir);
	snprintf(s->views, sizeof(s->views), "%s/views", s->dir);
}

void session_start(struct session *s, const char *const argv[], const char *const env[])
{
	const char *args[16], *ready = NULL;
	char go_ready[128];
	struct stat st;
	size_t n = 0;

	cr_assert(stat(argv[0], &st) == 0, "%s is not built", argv[0]);
	snprintf(go_ready, sizeof(go_ready), "%s.ready", s->go);
	for (; argv[n] && n < 15; n++) {
		args[n] = argv[n];
		if (!strcmp(argv[n], "@GO"))
			args[n] = s->go, ready = go_ready;
		else if (!strcmp(argv[n], "@READY"))
			args[n] = ready = s->ready;
	}
	args[n] = NULL;
	cr_assert_not_null(ready, "%s: a program of these tests says when it is ready", argv[0]);
	s->prog = spawn(args, env, s->out, s->err);
	/* It built its heap history and reached its wait (or its call). */
	if (wait_nonempty_file(ready, TEST_EVENT_TIMEOUT_S))
		cr_assert_fail("%s never got ready: %s", argv[0], slurp(s->err));
}

const char *session_loader(struct session *s, const char *const extra[], int wait_sampling,
			   pid_t *loader, int *status)
{
	static char log[128];
	char pid[16];
	const char *argv[32] = {INJECT_LOADER, "attach", pid, "-v"};
	size_t n = 4;

	snprintf(pid, sizeof(pid), "%d", (int)s->prog);
	for (size_t i = 0; extra && extra[i] && n < 31; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	snprintf(log, sizeof(log), "%s/loader%d.err", s->dir, s->loaders++);
	*loader = spawn(argv, NULL, "/dev/null", log);
	if (!wait_sampling) {
		*status = session_wait(*loader);
		return log;
	}
	for (double waited = 0; waited < TEST_EVENT_TIMEOUT_S; waited += 0.01) {
		char *text = access(log, R_OK) == 0 ? slurp(log) : NULL;
		int ready = text && strstr(text, "target sampling at rate") != NULL;
		free(text);
		if (ready)
			return log;
		if (waitpid(*loader, status, WNOHANG) == *loader) {
			text = slurp(log);
			cr_assert_fail("the loader ended before sampling started (status %#x): %s",
				       *status, text);
		}
		const struct timespec tick = {0, 10000000};
		nanosleep(&tick, NULL);
	}
	cr_assert_fail("the target never started sampling");
	return log;
}

void session_go(struct session *s)
{
	int fd = open(s->go, O_WRONLY | O_CREAT, 0644);

	cr_assert_geq(fd, 0);
	close(fd);
}

int session_wait(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		cr_assert_eq(errno, EINTR, "waitpid: %s", strerror(errno));
	return status;
}

void session_end(struct session *s)
{
	char cmd[128];

	if (s->prog > 0 && kill(s->prog, 0) == 0) {
		kill(s->prog, SIGKILL);
		session_wait(s->prog);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", s->dir);
	cr_expect_eq(system(cmd), 0);
}

char *plain_output(const char *const argv[], const char *const env[])
{
	struct session s;
	const char *args[16];
	size_t n = 0;

	session_init(&s);
	session_go(&s);
	for (; argv[n] && n < 15; n++)
		args[n] = strcmp(argv[n], "@GO") ? argv[n] : s.go;
	args[n] = NULL;
	pid_t p = spawn(args, env, s.out, s.err);
	int status = session_wait(p);
	char *err = slurp(s.err);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "plain run: status %#x: %s",
		  status, err);
	free(err);
	char *out = slurp(s.out);
	session_end(&s);
	return out;
}

char *slurp(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t len = 0;

	cr_assert_not_null(f, "cannot open %s: %s", path, strerror(errno));
	FILE *mem = open_memstream(&buf, &len);
	cr_assert_not_null(mem);
	char chunk[4096];
	size_t got;
	while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0)
		fwrite(chunk, 1, got, mem);
	fclose(f);
	fclose(mem);
	return buf;
}

int maps_count(pid_t pid, const char *needle)
{
	char path[64];
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	char *text = slurp(path);
	for (char *p = text; (p = strstr(p, needle)); p++)
		n++;
	free(text);
	return n;
}

struct sites {
	int n;
	char name[INJECT_MAX_SITES][64];
	double words[INJECT_MAX_SITES], samples[INJECT_MAX_SITES];
};

static int site_index(const struct sites *t, const char *frame)
{
	for (int i = 0; i < t->n; i++)
		if (!strcmp(t->name[i], frame))
			return i;
	return -1;
}

void check_site_shares(const char *program_out, const char *folded, double min_samples)
{
	struct sites t = {.n = 0};
	char *out = slurp(program_out), *text;

	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		char name[64];
		double w;
		if (sscanf(line, "site %63s words %lf", name, &w) == 2 && t.n < INJECT_MAX_SITES) {
			snprintf(t.name[t.n], sizeof(t.name[t.n]), "%s", name);
			t.words[t.n++] = w;
		}
	}
	free(out);
	cr_assert_gt(t.n, 1, "the program printed no sites");
	text = slurp(folded);
	for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *space = strrchr(line, ' ');
		if (!space)
			continue;
		*space = 0;
		/* The innermost frame named like a site. */
		for (char *f = line + strlen(line); f >= line; f--) {
			if (f > line && f[-1] != ';')
				continue;
			char frame[256];
			size_t len = strcspn(f, ";");
			snprintf(frame, sizeof(frame), "%.*s", (int)len, f);
			int i = site_index(&t, frame);
			if (i >= 0) {
				t.samples[i] += atof(space + 1) / INJECT_BYTES_PER_SAMPLE;
				break;
			}
			if (f == line)
				break;
		}
	}
	free(text);
	double total_words = 0, total_n = 0;
	for (int i = 0; i < t.n; i++) {
		total_words += t.words[i];
		total_n += t.samples[i];
	}
	cr_assert_geq(total_n, min_samples, "only %.0f samples in the sites", total_n);
	for (int i = 0; i < t.n; i++) {
		double p = t.words[i] / total_words;
		cr_expect(within_binomial(t.samples[i], total_n, p),
			  "%s: %.0f samples, expected %.1f +- %.1f (%g sd; exact share %.4f)",
			  t.name[i], t.samples[i], total_n * p, binomial_bound(total_n, p),
			  TEST_SIGMAS, p);
	}
}

/* Whether some thread of pid has a tracer. */
int inject_traced(pid_t pid)
{
	char path[64], line[256];
	struct dirent *de;
	int found = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return 0;
	while (!found && (de = readdir(d))) {
		char status[400];
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(status, sizeof(status), "%s/%s/status", path, de->d_name);
		f = fopen(status, "re");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "TracerPid:", 10)) {
				found = strtol(line + 10, NULL, 10) != 0;
				break;
			}
		fclose(f);
	}
	closedir(d);
	return found;
}

int wait_traced(pid_t pid, double timeout_s)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!inject_traced(pid)) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) * 1e-9 >
		    timeout_s)
			return -1;
	}
	return 0;
}

char *maps_snapshot(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	return slurp(path);
}

/* The permissions of the region starting at start in a maps text, or NULL. */
static const char *perms_at(const char *maps, unsigned long start)
{
	for (const char *line = maps; line && *line; line = strchr(line, '\n'), line += !!line) {
		unsigned long lo;
		int used;

		if (sscanf(line, "%lx-%*x %n", &lo, &used) >= 1 && lo == start)
			return line + used;
	}
	return NULL;
}

int maps_gained_write(const char *before, const char *after, char *what, size_t len)
{
	int n = 0;

	for (const char *line = after; line && *line; line = strchr(line, '\n'), line += !!line) {
		unsigned long lo;
		char perms[8];
		const char *was;

		if (sscanf(line, "%lx-%*x %7s", &lo, perms) != 2 || perms[1] != 'w')
			continue;
		was = perms_at(before, lo);
		if (was && was[1] == '-' && !strstr(line, "/memfd:")) {
			if (!n++) {
				const char *end = strchr(line, '\n');
				snprintf(what, len, "%.*s",
					 (int)(end ? end - line : (long)strlen(line)), line);
			}
		}
	}
	return n;
}

void session_expect_finish(struct session *s, const char *holds)
{
	int status = session_wait(s->prog);
	char *out;

	s->prog = 0;
	out = slurp(s->out);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "program status %#x: %s", status,
		  out);
	cr_expect_not_null(strstr(out, holds), "no '%s' in the program's output: %s", holds, out);
	free(out);
}

char *session_inject_briefly(struct session *s)
{
	const char *extra[] = {"-d", "0.3", "-o", "/dev/null", NULL};
	pid_t loader;
	int status;
	char *text = slurp(session_loader(s, extra, 0, &loader, &status));

	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == EXIT_OK, "loader status %#x: %s",
		  status, text);
	cr_expect_not_null(strstr(text, "had no memprof probes: loaded "), "not injected: %s",
			   text);
	return text;
}

void fifo_put(const char *fifo, const char *bytes)
{
	int fd = open(fifo, O_WRONLY);

	cr_assert_geq(fd, 0, "%s: %s", fifo, strerror(errno));
	cr_assert_eq(write(fd, bytes, strlen(bytes)), (ssize_t)strlen(bytes));
	close(fd);
}
