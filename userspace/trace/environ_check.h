/* What the loader needs from the machine: privileges, BTF, uprobes. */
#ifndef MEMPROF_ENVIRON_CHECK_H
#define MEMPROF_ENVIRON_CHECK_H

#include <stddef.h>
#include <sys/types.h>

/*
 * 0 when the calling process has CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN)
 * in its effective set, the kernel exposes BTF and uprobe events.
 * Otherwise -1 and err holds one line.
 */
int environ_check_privileges(char *err, size_t errlen);
int environ_check_kernel(char *err, size_t errlen);

/*
 * Probe, before touching the target, that uprobe perf events can be opened
 * on pid (the attach's own system call, on a file the target does not
 * map).  0, with the probe's event in *probe_fd, for the caller to close
 * once its start-up is done (closing a uprobe event waits for a grace
 * period of the kernel's, about 100 ms here); -1 with err naming the
 * missing capability; -2 if pid is gone.
 */
int environ_probe_uprobes(pid_t pid, int *probe_fd, char *err, size_t errlen);

/*
 * A runtime whose own allocator hides its allocations from the malloc
 * host: a CPython with pymalloc on (PYTHONMALLOC unset, or anything but
 * malloc and malloc_debug, in /proc/PID/environ) that the Python host does not
 * profile (its frame table is not mapped).  1 with one note line in
 * note (what to do instead), else 0.
 */
int environ_hidden_allocator(pid_t pid, char *note, size_t len);

#endif
