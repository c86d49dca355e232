/* The file-backed mappings of a process, from /proc/PID/maps. */
#ifndef MEMPROF_PROCMAPS_H
#define MEMPROF_PROCMAPS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct map_region {
	uint64_t start, end, offset;
	int exec;    /* mapped executable */
	int deleted; /* the file was deleted or replaced since it was mapped */
	unsigned dev_major, dev_minor;
	uint64_t inode;
	char *path; /* absolute path of the mapped file (without " (deleted)") */
	/*
	 * Where to read it (and attach to it): PATH when this loader sees the
	 * mapped inode there, else /proc/PID/root/PATH when that is it, else
	 * /proc/PID/map_files/START-END.
	 */
	char *open_path;
};

struct proc_maps {
	struct map_region *regions; /* sorted by start */
	size_t n;
};

/* 0, or a negative errno (-ESRCH: no such process). */
int proc_maps_read(pid_t pid, struct proc_maps *out);
/*
 * Parse maps text from f (what proc_maps_read does with /proc/PID/maps).
 * pid < 0: open_path is the path itself (no /proc lookups).  0 or -ENOMEM.
 */
int proc_maps_parse(FILE *f, pid_t pid, struct proc_maps *out);
void proc_maps_free(struct proc_maps *m);
/* The region holding addr, or NULL. */
const struct map_region *proc_maps_find(const struct proc_maps *m, uint64_t addr);
/* The first region of path (lowest address), or NULL. */
const struct map_region *proc_maps_first_of(const struct proc_maps *m, const char *path);

/* Its state letter (R, S, T...) and CPU time (user + system, s).  0 or -1. */
int proc_state(pid_t pid, char *state, double *cpu_s);
/* Is pid a kernel thread (no user memory)?  0 also when it is gone. */
int proc_is_kernel_thread(pid_t pid);

/* Is the process gone (no /proc entry, zombie or dead)? */
int proc_exited(pid_t pid);

#endif
