/*
 * A library preloaded after the memprof preload: its constructor runs
 * before the preload's own, so its allocations are the first the
 * interposer sees (lazy initialisation from inside malloc).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#define EARLY_BLOCKS 6

void *early_lib_blocks[EARLY_BLOCKS];

__attribute__((constructor)) static void early_lib_init(void)
{
	early_lib_blocks[0] = malloc(100);
	early_lib_blocks[1] = calloc(10, 10);
	early_lib_blocks[2] = realloc(malloc(10), 1000);
	early_lib_blocks[3] = strdup("allocated before the preload's constructor");
	if (posix_memalign(&early_lib_blocks[4], 64, 64) != 0)
		early_lib_blocks[4] = NULL;
	early_lib_blocks[5] = aligned_alloc(128, 256);
}
