/*
 * The loader's one way into the target's memory: every read or write of
 * the traced process goes through these two functions.
 */
#ifndef MEMPROF_REMOTE_H
#define MEMPROF_REMOTE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Copy len bytes at addr in process pid to buf (read_remote), or buf to
 * addr (write_remote), with process_vm_readv/writev.  0, or a negative
 * errno: -ESRCH no such process, -EPERM not allowed, -EFAULT an address
 * not mapped (or, for a write, not writable), -EIO a short transfer.
 *
 * No /proc/PID/mem fallback: it needs the same ptrace access, and only a
 * kernel built without CONFIG_CROSS_MEMORY_ATTACH lacks these calls; the
 * loader's BPF side needs far more of the kernel than that.
 */
int read_remote(pid_t pid, uint64_t addr, void *buf, size_t len);
int write_remote(pid_t pid, uint64_t addr, const void *buf, size_t len);

#endif
