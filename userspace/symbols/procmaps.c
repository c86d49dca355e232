/*
 * Parse /proc/PID/maps: only file-backed regions are kept.  Each file is
 * read where the target sees it, checked against the device and inode the
 * mapping names: the path itself when this loader sees the same file there
 * (it outlives the target), else through /proc/PID/root (the target's
 * mount namespace and root), else /proc/PID/map_files (the mapping itself).
 */
#include "procmaps.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <linux/types.h>

#include "memprof_probe_abi.h"

#define DELETED_SUFFIX " (deleted)"

/* Is the file at path the one the mapping names (device and inode)? */
static int same_file(const char *path, const struct map_region *r)
{
	struct stat st;

	return !stat(path, &st) && st.st_ino == r->inode && major(st.st_dev) == r->dev_major &&
	       minor(st.st_dev) == r->dev_minor;
}

/* Where to open r's file (malloc'ed); pid < 0: r->path as is. */
static char *open_path_of(const struct map_region *r, pid_t pid)
{
	size_t len = strlen(r->path) + 96;
	char *p = malloc(len);

	if (!p || pid < 0) {
		free(p);
		return strdup(r->path);
	}
	/*
	 * The path as this loader sees it, when it is the mapped file (same
	 * device and inode): it stays readable once the target has exited,
	 * for the symbolizer, which runs after the tracing.
	 */
	if (!r->deleted && same_file(r->path, r)) {
		free(p);
		return strdup(r->path);
	}
	snprintf(p, len, "/proc/%d/root%s", (int)pid, r->path);
	if (!r->deleted && same_file(p, r))
		return p;
	/* Deleted, replaced, or hidden from /proc/PID/root: the mapping itself. */
	snprintf(p, len, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, r->start, r->end);
	return p;
}

static int region_push(struct proc_maps *m, size_t *cap, const struct map_region *r, pid_t pid)
{
	struct map_region *nr;
	const struct map_region *prev;

	if (m->n == *cap) {
		size_t ncap = *cap ? 2 * *cap : 64;
		struct map_region *v = realloc(m->regions, ncap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		m->regions = v;
		*cap = ncap;
	}
	/* Taken after the growth: realloc may move the array. */
	prev = m->n ? &m->regions[m->n - 1] : NULL;
	nr = &m->regions[m->n];
	*nr = *r;
	nr->path = strdup(r->path);
	/* Consecutive regions of one file share its open path. */
	if (prev && prev->inode == r->inode && prev->dev_major == r->dev_major &&
	    prev->dev_minor == r->dev_minor && prev->deleted == r->deleted &&
	    !strcmp(prev->path, r->path))
		nr->open_path = strdup(prev->open_path);
	else
		nr->open_path = open_path_of(r, pid);
	if (!nr->path || !nr->open_path) {
		free(nr->path);
		free(nr->open_path);
		return -ENOMEM;
	}
	m->n++;
	return 0;
}

int proc_maps_parse(FILE *f, pid_t pid, struct proc_maps *out)
{
	char *line = NULL;
	size_t len = 0, cap = 0;
	int err = 0;

	out->regions = NULL;
	out->n = 0;
	while (!err && getline(&line, &len, f) > 0) {
		struct map_region r = {0};
		size_t len_path;
		char perms[8];
		int path_at = -1;

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n",
			   &r.start, &r.end, perms, &r.offset, &r.dev_major, &r.dev_minor, &r.inode,
			   &path_at) < 7 ||
		    path_at < 0 || r.end < r.start)
			continue;
		r.path = line + path_at;
		/* Anonymous, [heap], [vdso]... */
		if (r.path[0] != '/')
			continue;
		len_path = strlen(r.path);
		if (len_path > strlen(DELETED_SUFFIX) &&
		    !strcmp(r.path + len_path - strlen(DELETED_SUFFIX), DELETED_SUFFIX)) {
			r.path[len_path - strlen(DELETED_SUFFIX)] = '\0';
			r.deleted = 1;
		}
		r.exec = strchr(perms, 'x') != NULL;
		err = region_push(out, &cap, &r, pid);
	}
	free(line);
	if (err)
		proc_maps_free(out);
	return err;
}

int proc_maps_read(pid_t pid, struct proc_maps *out)
{
	char name[64];
	FILE *f;
	int err;

	out->regions = NULL;
	out->n = 0;
	pid = proc_live_tid(pid);
	snprintf(name, sizeof(name), "/proc/%d/maps", (int)pid);
	f = fopen(name, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	err = proc_maps_parse(f, pid, out);
	fclose(f);
	return err;
}

void proc_maps_free(struct proc_maps *m)
{
	for (size_t i = 0; i < m->n; i++) {
		free(m->regions[i].path);
		free(m->regions[i].open_path);
	}
	free(m->regions);
	m->regions = NULL;
	m->n = 0;
}

const struct map_region *proc_maps_find(const struct proc_maps *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < m->regions[mid].start)
			hi = mid;
		else if (addr >= m->regions[mid].end)
			lo = mid + 1;
		else
			return &m->regions[mid];
	}
	return NULL;
}

const struct map_region *proc_maps_first_of(const struct proc_maps *m, const char *path)
{
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->regions[i].path, path))
			return &m->regions[i];
	return NULL;
}

/*
 * /proc/<where>/stat into buf: what follows the command name (") state
 * ..."), or NULL.
 */
static const char *stat_fields(const char *where, char *buf, size_t len)
{
	char name[96];
	size_t n;
	FILE *f;
	char *p;

	snprintf(name, sizeof(name), "/proc/%s/stat", where);
	f = fopen(name, "re");
	if (!f)
		return NULL;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] ? p + 2 : NULL;
}

static int dead_state(char c)
{
	return c == 'Z' || c == 'X' || c == 'x';
}

int proc_for_each_thread(pid_t pid, int (*fn)(pid_t tid, char state, void *arg), void *arg)
{
	char path[64], where[64], buf[512];
	struct dirent *de;
	int rc = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return -1;
	while (!rc && (de = readdir(d))) {
		long t = strtol(de->d_name, NULL, 10);
		const char *f;

		if (t <= 0)
			continue;
		snprintf(where, sizeof(where), "%d/task/%ld", (int)pid, t);
		f = stat_fields(where, buf, sizeof(buf));
		rc = fn((pid_t)t, f ? *f : '?', arg);
	}
	closedir(d);
	return rc;
}

static int first_live(pid_t tid, char state, void *arg)
{
	pid_t *out = arg;

	if (state == '?' || dead_state(state))
		return 0;
	*out = tid;
	return 1;
}

pid_t proc_live_tid(pid_t pid)
{
	char where[64], buf[512];
	const char *f;
	pid_t tid = pid;

	snprintf(where, sizeof(where), "%d", (int)pid);
	f = stat_fields(where, buf, sizeof(buf));
	if (!f || !dead_state(*f))
		return pid;
	proc_for_each_thread(pid, first_live, &tid);
	return tid;
}

int proc_exited(pid_t pid)
{
	char where[32], buf[512];
	const char *f;

	snprintf(where, sizeof(where), "%d", (int)proc_live_tid(pid));
	f = stat_fields(where, buf, sizeof(buf));
	return !f || dead_state(*f);
}

/* The state letter and CPU time (user + system, clock ticks) of a stat file's
 * fields after the name; 0 or -1. */
static int stat_state_cpu(const char *after_name, char *state, double *cpu_s)
{
	unsigned long long utime, stime;
	long hz = sysconf(_SC_CLK_TCK);

	/* After the name: state (3), then fields 4..13, utime (14), stime (15). */
	if (!after_name ||
	    sscanf(after_name, "%c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu %llu", state,
		   &utime, &stime) != 3)
		return -1;
	*cpu_s = (double)(utime + stime) / (hz > 0 ? hz : 100);
	return 0;
}

int proc_state(pid_t pid, char *state, double *cpu_s)
{
	char where[32], buf[1024];
	const char *f;

	/* A leader that has exited shows Z; its live threads say the state. */
	snprintf(where, sizeof(where), "%d", (int)pid);
	f = stat_fields(where, buf, sizeof(buf));
	if (f && dead_state(*f)) {
		pid_t live = proc_live_tid(pid);

		if (live != pid) {
			snprintf(where, sizeof(where), "%d/task/%d", (int)pid, (int)live);
			f = stat_fields(where, buf, sizeof(buf));
		}
	}
	return stat_state_cpu(f, state, cpu_s);
}

/* One thread's CPU time: ns from its schedstat, else clock ticks from stat. */
static double thread_cpu_s(const char *where, const char *stat_after_name)
{
	unsigned long long ns;
	char name[96], state;
	double cpu_s;
	FILE *f;
	int got;

	snprintf(name, sizeof(name), "/proc/%s/schedstat", where);
	f = fopen(name, "re");
	if (f) {
		got = fscanf(f, "%llu", &ns);
		fclose(f);
		if (got == 1)
			return (double)ns / 1e9;
	}
	return stat_state_cpu(stat_after_name, &state, &cpu_s) ? 0 : cpu_s;
}

struct program_cpu {
	pid_t pid;
	double sum;
};

static int add_program_thread(pid_t tid, char state, void *arg)
{
	struct program_cpu *c = arg;
	char where[64], buf[1024];
	const char *f, *name;

	(void)state;
	snprintf(where, sizeof(where), "%d/task/%d", (int)c->pid, (int)tid);
	f = stat_fields(where, buf, sizeof(buf));
	name = strchr(buf, '(');
	if (!f || !name)
		return 0;
	if (!strncmp(name + 1, MEMPROF_PROBE_THREAD_PREFIX, strlen(MEMPROF_PROBE_THREAD_PREFIX)))
		return 0;
	c->sum += thread_cpu_s(where, f);
	return 0;
}

int proc_program_cpu(pid_t pid, double *cpu_s)
{
	struct program_cpu c = {pid, 0};

	if (proc_for_each_thread(pid, add_program_thread, &c) < 0)
		return -1;
	*cpu_s = c.sum;
	return 0;
}

/* PF_KTHREAD in the flags of /proc/PID/stat (include/linux/sched.h). */
#define PROC_PF_KTHREAD 0x00200000u

int proc_is_kernel_thread(pid_t pid)
{
	char where[32], buf[1024];
	const char *f;
	unsigned flags;

	snprintf(where, sizeof(where), "%d", (int)pid);
	f = stat_fields(where, buf, sizeof(buf));
	/* After the name: state (3), then ppid..tpgid (4..8), flags (9). */
	if (!f || sscanf(f, "%*c %*s %*s %*s %*s %*s %u", &flags) != 1)
		return 0;
	return (flags & PROC_PF_KTHREAD) != 0;
}
