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
/*
 * The CPU time (s) of the program's own live threads: every thread of pid
 * but those a host started (named MEMPROF_PROBE_THREAD_PREFIX...), whose
 * wake-ups are not the program running.  In ns where the kernel keeps
 * schedstat, else in clock ticks.  A thread that ended takes its time out
 * of the sum.  0 or -1 (gone).
 */
int proc_program_cpu(pid_t pid, double *cpu_s);
/* Is pid a kernel thread (no user memory)?  0 also when it is gone. */
int proc_is_kernel_thread(pid_t pid);

/* Is the process gone (no /proc entry, zombie or dead)? */
int proc_exited(pid_t pid);
/*
 * The thread whose /proc entries (maps, mem, exe, root) and whose memory
 * speak for process pid: pid itself, or, when its main thread has exited
 * while others run on (a zombie leader shows no mappings and no memory),
 * its first live thread.  For every /proc path and process_vm_* call of a
 * traced process.
 */
pid_t proc_live_tid(pid_t pid);
/*
 * Calls fn for each thread of pid with its state letter from its stat
 * ('?' when it cannot be read: it just ended), until fn returns non-zero;
 * returns that value, 0 after the last thread, or -1 when pid's task list
 * cannot be read.  The one walk of /proc/PID/task of the loader.
 */
int proc_for_each_thread(pid_t pid, int (*fn)(pid_t tid, char state, void *arg), void *arg);

#endif
