/*
 * Blocks allocated before initialisation: by a library preloaded after the
 * memprof preload (its constructor runs first) and by this program's own
 * early constructor.  They are valid, freeable and reallocable, and, made
 * before the profile started, never get a callback.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "tracker.h"

#define EARLY_BLOCKS 6

static void *own_blocks[3];

__attribute__((constructor(101))) static void own_early(void)
{
	own_blocks[0] = malloc(40);
	own_blocks[1] = calloc(4, 4);
	own_blocks[2] = strdup("early");
}

int main(void)
{
	void **lib_blocks = dlsym(RTLD_DEFAULT, "early_lib_blocks");
	int valid = lib_blocks != NULL;

	setvbuf(stdout, NULL, _IONBF, 0);
	for (int i = 0; valid && i < EARLY_BLOCKS; i++)
		valid = lib_blocks[i] != NULL;
	valid = valid && !strcmp(lib_blocks[3], "allocated before the preload's constructor") &&
		((uintptr_t)lib_blocks[4] & 63) == 0 && ((uintptr_t)lib_blocks[5] & 127) == 0;
	printf("lib_blocks_valid=%d\n", valid);
	printf("own_blocks_valid=%d\n",
	       own_blocks[0] && own_blocks[1] && !strcmp(own_blocks[2], "early"));

	tracker_exact = 1;
	if (memprof_start(1.0, 0, &checking_tracker) != 0)
		return 1;
	tracker_tag = 1;
	if (valid) {
		lib_blocks[0] = realloc(lib_blocks[0], 5000); /* sampled anew: 625 words */
		for (int i = 0; i < EARLY_BLOCKS; i++)
			free(lib_blocks[i]);
	}
	for (int i = 0; i < 3; i++)
		free(own_blocks[i]);
	tracker_tag = 0;
	memprof_stop();
	printf("samples=%llu\n", (unsigned long long)tracker_counts.samples[1]);
	printf("deallocs=%llu\n",
	       (unsigned long long)(tracker_counts.dealloc_minor + tracker_counts.dealloc_major));
	printf("order_errors=%llu\n", (unsigned long long)tracker_counts.order_errors);
	return 0;
}
