/* The target's memprof_probe_control block, read and written in place. */
#ifndef MEMPROF_CONTROL_H
#define MEMPROF_CONTROL_H

#include <stdint.h>
#include <sys/types.h>

#include <linux/types.h>
#include "memprof_probe_abi.h"

/* 0 or a negative errno. */
int control_read(pid_t pid, uint64_t addr, struct memprof_probe_control *out);
int control_write_rate(pid_t pid, uint64_t addr, double rate);
/* The Python host's options (MEMPROF_PROBE_PY_OPTIONS_SYMBOL at addr). */
int control_write_py_options(pid_t pid, uint64_t addr, uint32_t options);
/* Ask the host for its queued events (flush_request + 1); *seq is the request. */
int control_request_flush(pid_t pid, uint64_t addr, uint64_t *seq);
/* 1 once the host served request seq, 0 not yet, or a negative errno. */
int control_flushed(pid_t pid, uint64_t addr, uint64_t seq);
/* A USDT semaphore of the target (an unsigned short). */
int semaphore_read(pid_t pid, uint64_t addr, unsigned short *out);

#endif
