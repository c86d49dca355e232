/*
 * A burst of allocations, then idleness: the case the malloc host's idle
 * flusher is for (runtime-probes/hosts/preload/flusher.c).
 *
 *   idle_burst READY BLOCKS BYTES
 *
 * Writes its pid into READY, waits for READY.go (the test creates it once
 * the tracer is attached), allocates and frees at site_warm_up until the
 * host samples for the tracer (its control block's active rate: sampling
 * starts at a slow path, every few MiB while idle), allocates BLOCKS blocks
 * of BYTES bytes at site_burst and keeps them, writes READY.done, then sleeps without
 * allocating until READY.stop exists (polls the file with access(2)).
 * Fewer samples than a queue holds stay queued in the core until a poll
 * or the flusher hands them over.
 */
#include <linux/types.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "memprof_probe_abi.h"

/* The malloc host's control block (exported by the library). */
extern struct memprof_probe_control memprof_probe_control;

static void *kept[4096];

static void wait_for(const char *path)
{
	const struct timespec pause = {0, 1000000};

	for (int i = 0; i < 120000 && access(path, F_OK); i++)
		nanosleep(&pause, NULL);
}

static void say_done(const char *path)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fputs("done\n", f);
		fclose(f);
	}
}

static void *volatile sink;

__attribute__((noinline)) void site_warm_up(void)
{
	sink = malloc(4096); /* (a free(malloc()) pair would be optimised away) */
	free(sink);
}

__attribute__((noinline)) void *site_burst(size_t bytes)
{
	void *p = malloc(bytes);

	__asm__ volatile("" ::: "memory"); /* no tail call: this frame stays */
	return p;
}

int main(int argc, char **argv)
{
	char go[512], done[512], stop[512];
	int blocks;
	size_t bytes;
	FILE *f;

	if (argc != 4 || (blocks = atoi(argv[2])) <= 0 || blocks > 4096 ||
	    !(bytes = (size_t)atol(argv[3])))
		return 2;
	snprintf(go, sizeof(go), "%s.go", argv[1]);
	snprintf(done, sizeof(done), "%s.done", argv[1]);
	snprintf(stop, sizeof(stop), "%s.stop", argv[1]);
	f = fopen(argv[1], "w");
	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f))
		return 2;
	wait_for(go);
	while (*(volatile double *)&memprof_probe_control.active_rate == 0)
		site_warm_up();
	for (int i = 0; i < blocks; i++)
		kept[i] = site_burst(bytes);
	say_done(done);
	wait_for(stop);
	printf("blocks=%d bytes=%zu\n", blocks, bytes);
	return 0;
}
