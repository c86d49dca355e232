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

int control_request_flush(pid_t pid, uint64_t addr, uint64_t *seq)
{
	struct memprof_probe_control ctl;
	int rc = control_read(pid, addr, &ctl);

	if (rc)
		return rc;
	*seq = ctl.flush_request + 1;
	return write_remote(pid, addr + offsetof(struct memprof_probe_control, flush_request), seq,
			    sizeof(*seq));
}

int control_flushed(pid_t pid, uint64_t addr, uint64_t seq)
{
	uint64_t flushed;
	int rc = read_remote(pid, addr + offsetof(struct memprof_probe_control, flushed), &flushed,
			     sizeof(flushed));

	return rc ? rc : flushed >= seq;
}

int control_write_rate(pid_t pid, uint64_t addr, double rate)
{
	return write_remote(pid, addr + offsetof(struct memprof_probe_control, requested_rate),
			    &rate, sizeof(rate));
}

int control_write_py_options(pid_t pid, uint64_t addr, uint32_t options)
{
	return write_remote(pid, addr, &options, sizeof(options));
}
