/*
 * For test programs a tracer attaches to: write the pid to READY_FILE, then
 * wait until a tracer's sampling is on (the control block says so).
 */
#ifndef PRELOAD_PROGS_TRACER_WAIT_H
#define PRELOAD_PROGS_TRACER_WAIT_H

#include <linux/types.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "memprof_probe_abi.h"

/* Exported by the preload (the core linked into it). */
extern struct memprof_probe_control memprof_probe_control;

/* Seconds to wait for a tracer before giving up. */
#define TRACER_WAIT_SECONDS 60

/* Through a volatile (one per thread): the compiler keeps the allocations. */
static _Thread_local void *volatile tracer_wait_sink;

/* 0 once traced; said on stderr (after prog): -1 if READY_FILE cannot be
 * written, -2 if no tracer samples within TRACER_WAIT_SECONDS. */
static inline int tracer_ready_and_wait(const char *prog, const char *ready_file)
{
	const struct timespec pause = {0, 1000000};
	FILE *f = fopen(ready_file, "w");

	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) != 0) {
		fprintf(stderr, "%s: cannot write %s\n", prog, ready_file);
		return -1;
	}
	for (long i = 0; i < TRACER_WAIT_SECONDS * 1000L; i++) {
		if (__atomic_load_n(&memprof_probe_control.flags, __ATOMIC_ACQUIRE) &
		    MEMPROF_PROBE_F_TRACER)
			return 0;
		/* Allocations reach the poll (every 1 MiB while not sampling). */
		for (int k = 0; k < 16; k++) {
			tracer_wait_sink = malloc(65536);
			free(tracer_wait_sink);
		}
		nanosleep(&pause, NULL);
	}
	fprintf(stderr, "%s: no tracer within %d s\n", prog, TRACER_WAIT_SECONDS);
	return -2;
}

#endif
