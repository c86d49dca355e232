/*
 * The levels of the block map's overflow (bpf/memprof_maps.h,
 * blocks_overflow): hashes the loader creates as the overflow fills, each
 * put into the blocks_overflow array of maps.  Level k holds
 * overflow_levels_entries(k) blocks; level 0 is created at the start, level
 * k + 1 once the overflow holds half of what the levels created hold.
 */
#ifndef MEMPROF_OVERFLOW_LEVELS_H
#define MEMPROF_OVERFLOW_LEVELS_H

#include <stdint.h>

#include <linux/types.h>

#include "memprof_maps.h"

struct overflow_levels {
	int outer_fd;	     /* blocks_overflow */
	uint32_t max_blocks; /* --max-blocks: the last level's size */
	uint32_t created;    /* levels [0, created) are in the array of maps */
	int fds[MEMPROF_OVERFLOW_LEVELS];
};

/* Blocks level k holds: MEMPROF_OVERFLOW_FIRST << 2k, the last max_blocks,
 * never more than max_blocks. */
uint32_t overflow_levels_entries(const struct overflow_levels *o, uint32_t k);
/* Create level 0: 0, or -errno (nothing left open then). */
int overflow_levels_open(struct overflow_levels *o, int outer_fd, uint32_t max_blocks);
/* Create the next level if the overflow (n_overflow blocks now) holds half
 * of what the levels created hold: 0, or -errno. */
int overflow_levels_grow(struct overflow_levels *o, uint64_t n_overflow);
/* Kernel memory of the levels created (fdinfo's memlock), in bytes. */
uint64_t overflow_levels_memory(const struct overflow_levels *o);
void overflow_levels_close(struct overflow_levels *o);

#endif
