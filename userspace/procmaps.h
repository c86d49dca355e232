/* The file-backed mappings of a process, from /proc/PID/maps. */
#ifndef MEMPROF_PROCMAPS_H
#define MEMPROF_PROCMAPS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct map_region {
	uint64_t start, end, offset;
	int exec;	 /* mapped executable */
	int deleted;	 /* the file was deleted or replaced since it was mapped */
	char *path;	 /* absolute path of the mapped file (without " (deleted)") */
	char *open_path; /* where to read it: path, or /proc/PID/map_files/... */
};

struct proc_maps {
	struct map_region *regions; /* sorted by start */
	size_t n;
};

/* 0, or a negative errno (-ESRCH: no such process). */
int proc_maps_read(pid_t pid, struct proc_maps *out);
void proc_maps_free(struct proc_maps *m);
/* The region holding addr, or NULL. */
const struct map_region *proc_maps_find(const struct proc_maps *m, uint64_t addr);
/* The first region of path (lowest address), or NULL. */
const struct map_region *proc_maps_first_of(const struct proc_maps *m, const char *path);

/* Is the process gone (no /proc entry, zombie or dead)? */
int proc_exited(pid_t pid);

#endif
