/*
 * Three allocation sites of known sizes and lifetimes, for the pprof, SVG
 * and text outputs (tests/output/test_formats.c):
 *   site_kept_small   20000 blocks of 200 bytes (25 words), kept to exit
 *   site_kept_large    2000 blocks of 4000 bytes (500 words), kept to exit
 *   site_temporary   100000 blocks of 120 bytes (15 words), freed at once
 * reached through two callers each (run_requests, run_batch), and a
 * libc frame above main (__libc_start_call_main, named with libc6-dbg).
 *
 *   known_sites READY_FILE
 */
#include <stdlib.h>

#include "wait_tracer.h"

#define SMALL_N 20000
#define SMALL_BYTES 200
#define LARGE_N 2000
#define LARGE_BYTES 4000
#define TEMP_N 100000
#define TEMP_BYTES 120

void *kept_small[SMALL_N], *kept_large[LARGE_N];
static size_t n_small, n_large;

__attribute__((noipa)) void site_kept_small(int n)
{
	for (int i = 0; i < n; i++)
		kept_small[n_small++] = malloc(SMALL_BYTES); /* LINE:site_kept_small */
}

__attribute__((noipa)) void site_kept_large(int n)
{
	for (int i = 0; i < n; i++)
		kept_large[n_large++] = malloc(LARGE_BYTES); /* LINE:site_kept_large */
}

__attribute__((noipa)) void site_temporary(int n)
{
	for (int i = 0; i < n; i++) {
		wait_sink = malloc(TEMP_BYTES); /* LINE:site_temporary */
		free(wait_sink);
	}
}

__attribute__((noipa)) void run_requests(void)
{
	site_kept_small(SMALL_N / 2);
	site_kept_large(LARGE_N / 2);
	site_temporary(TEMP_N / 2);
	__asm__ volatile("");
}

__attribute__((noipa)) void run_batch(void)
{
	site_temporary(TEMP_N / 2);
	site_kept_large(LARGE_N / 2);
	site_kept_small(SMALL_N / 2);
	__asm__ volatile("");
}

int main(int argc, char **argv)
{
	if (argc != 2 || wait_for_tracer(argv[1])) {
		fprintf(stderr, "usage: known_sites READY_FILE (and a tracer within 60 s)\n");
		return 2;
	}
	run_requests();
	run_batch();
	printf("done %zu %zu\n", n_small, n_large);
	return 0;
}
