/*
 * Test programs of tests/output run under the malloc host (the preload):
 * they write their pid to READY_FILE, wait until a tracer has turned
 * sampling on and the loader has said it is ready (READY_FILE.go, its
 * --ready-file: attached, its timeline started), run a fixed workload and
 * exit, which ends the tracer's run.
 */
#ifndef OUTPUT_WAIT_TRACER_H
#define OUTPUT_WAIT_TRACER_H

#include <linux/types.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "memprof_probe_abi.h"

#ifdef __cplusplus
extern "C" {
#endif
/* Exported by the preload (the core linked into it). */
extern struct memprof_probe_control memprof_probe_control;
#ifdef __cplusplus
}
#endif

static void *volatile wait_sink;

/* 0 once a tracer samples and READY_FILE.go exists; -1 after 60 s. */
static inline int wait_for_tracer(const char *ready_file)
{
	const struct timespec pause = {0, 1000000};
	FILE *f = fopen(ready_file, "w");

	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f))
		return -1;
	char go[512];

	snprintf(go, sizeof(go), "%s.go", ready_file);
	for (long i = 0; i < 60000L; i++) {
		if ((__atomic_load_n(&memprof_probe_control.flags, __ATOMIC_ACQUIRE) &
		     MEMPROF_PROBE_F_TRACER) &&
		    access(go, F_OK) == 0)
			return 0;
		/* Allocations reach the host's poll of the control block. */
		for (int k = 0; k < 16; k++) {
			wait_sink = malloc(65536);
			free(wait_sink);
		}
		nanosleep(&pause, NULL);
	}
	return -1;
}

#endif
