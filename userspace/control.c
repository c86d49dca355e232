/* The target's control block and semaphores, through remote.h. */
#include "control.h"

#include <stddef.h>

#include "remote.h"

int control_read(pid_t pid, uint64_t addr, struct memprof_probe_control *out)
{
	return read_remote(pid, addr, out, sizeof(*out));
}

int semaphore_read(pid_t pid, uint64_t addr, unsigned short *out)
{
	return read_remote(pid, addr, out, sizeof(*out));
}

int control_write_rate(pid_t pid, uint64_t addr, double rate)
{
	return write_remote(pid, addr + offsetof(struct memprof_probe_control, requested_rate),
			    &rate, sizeof(rate));
}
