/* Parse /proc/PID/maps: only file-backed regions are kept. */
#include "procmaps.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DELETED_SUFFIX " (deleted)"

static int region_push(struct proc_maps *m, size_t *cap, const struct map_region *r, pid_t pid)
{
	char map_file[96];
	struct map_region *nr;

	if (m->n == *cap) {
		size_t ncap = *cap ? 2 * *cap : 64;
		struct map_region *v = realloc(m->regions, ncap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		m->regions = v;
		*cap = ncap;
	}
	nr = &m->regions[m->n];
	*nr = *r;
	/* A deleted file is still readable through the mapping itself. */
	snprintf(map_file, sizeof(map_file), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid,
		 r->start, r->end);
	nr->path = strdup(r->path);
	nr->open_path = strdup(r->deleted ? map_file : r->path);
	if (!nr->path || !nr->open_path) {
		free(nr->path);
		free(nr->open_path);
		return -ENOMEM;
	}
	m->n++;
	return 0;
}

int proc_maps_read(pid_t pid, struct proc_maps *out)
{
	char name[64], *line = NULL;
	size_t len = 0, cap = 0;
	FILE *f;
	int err = 0;

	out->regions = NULL;
	out->n = 0;
	snprintf(name, sizeof(name), "/proc/%d/maps", (int)pid);
	f = fopen(name, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (!err && getline(&line, &len, f) > 0) {
		struct map_region r = {0};
		size_t len_path;
		char perms[8];
		int path_at = -1;

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n", &r.start,
			   &r.end, perms, &r.offset, &path_at) < 4 ||
		    path_at < 0)
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
	fclose(f);
	if (err)
		proc_maps_free(out);
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

int proc_exited(pid_t pid)
{
	char name[64], buf[512], *p;
	size_t n;
	FILE *f;

	snprintf(name, sizeof(name), "/proc/%d/stat", (int)pid);
	f = fopen(name, "re");
	if (!f)
		return 1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return 1;
	return p[2] == 'Z' || p[2] == 'X' || p[2] == 'x';
}
