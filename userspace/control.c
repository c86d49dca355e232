/* Cross-process access to the control block (process_vm_readv/writev). */
#include "control.h"

#include <errno.h>
#include <stddef.h>
#include <sys/uio.h>

int control_read(pid_t pid, uint64_t addr, struct memprof_probe_control *out)
{
	struct iovec local = {out, sizeof(*out)};
	struct iovec remote = {(void *)(uintptr_t)addr, sizeof(*out)};
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	if (n < 0)
		return -errno;
	return n == (ssize_t)sizeof(*out) ? 0 : -EIO;
}

int semaphore_read(pid_t pid, uint64_t addr, unsigned short *out)
{
	struct iovec local = {out, sizeof(*out)};
	struct iovec remote = {(void *)(uintptr_t)addr, sizeof(*out)};
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	if (n < 0)
		return -errno;
	return n == (ssize_t)sizeof(*out) ? 0 : -EIO;
}

int control_write_rate(pid_t pid, uint64_t addr, double rate)
{
	struct iovec local = {&rate, sizeof(rate)};
	struct iovec remote = {
	    (void *)(uintptr_t)(addr + offsetof(struct memprof_probe_control, requested_rate)),
	    sizeof(rate)};
	ssize_t n = process_vm_writev(pid, &local, 1, &remote, 1, 0);

	if (n < 0)
		return -errno;
	return n == (ssize_t)sizeof(rate) ? 0 : -EIO;
}
