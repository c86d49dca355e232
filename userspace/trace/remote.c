/* Reads and writes of the target's memory (remote.h). */
#include "remote.h"
#include "symbols/procmaps.h"

#include <errno.h>
#include <sys/types.h>
#include <sys/uio.h>

/*
 * A process whose main thread has exited has no memory under its pid
 * (ESRCH): its live threads still do (proc_live_tid).
 */
int read_remote(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {buf, len};
	struct iovec remote = {(void *)(uintptr_t)addr, len};
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	if (n < 0 && errno == ESRCH) {
		pid_t live = proc_live_tid(pid); /* (it may change errno) */

		if (live == pid)
			return -ESRCH;
		n = process_vm_readv(live, &local, 1, &remote, 1, 0);
	}

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

int write_remote(pid_t pid, uint64_t addr, const void *buf, size_t len)
{
	struct iovec local = {(void *)buf, len};
	struct iovec remote = {(void *)(uintptr_t)addr, len};
	ssize_t n = process_vm_writev(pid, &local, 1, &remote, 1, 0);

	if (n < 0 && errno == ESRCH) {
		pid_t live = proc_live_tid(pid); /* (it may change errno) */

		if (live == pid)
			return -ESRCH;
		n = process_vm_writev(live, &local, 1, &remote, 1, 0);
	}

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}
