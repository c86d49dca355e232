/*
 * The BPF side as the loader sees it: the skeleton, the USDT links, the
 * mmapped stack and aggregate arrays, the counters, and a userspace copy
 * of the tracked blocks (refreshed from the block map).
 */
#ifndef MEMPROF_TRACER_H
#define MEMPROF_TRACER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/types.h>
#include "memprof_maps.h"
#include "target.h"

struct tracked_block {
	uint64_t id;
	struct memprof_block b;
};

struct tracer {
	struct memprof_bpf *skel;
	struct bpf_link **links;
	size_t n_links;
	const struct memprof_stack *stacks;   /* mmapped, max_stacks + MEMPROF_INNER_STACKS */
	const struct memprof_stack_agg *aggs; /* mmapped, max_stacks + MEMPROF_INNER_STACKS */
	uint32_t max_stacks;		      /* the stack table's size (--max-stacks) */
	size_t stacks_bytes, aggs_bytes;
	/* mmapped, max_stacks + MEMPROF_INNER_STACKS: lifetimes of the blocks that died */
	const struct memprof_lifetime_hist *lifetimes;
	size_t lifetimes_bytes;
	/* mmapped, max_blocks: the block map's home slots */
	const struct memprof_block_slot *block_slots;
	size_t block_slots_bytes;
	uint32_t max_blocks;
	/* CLOCK_MONOTONIC ns when tracer_detach raised detaching (0: not yet):
	 * the blocks still in the block map were alive then. */
	uint64_t detach_ns;
	struct tracked_block *blocks; /* last snapshot of the blocks map */
	size_t n_blocks, cap_blocks;
};

enum tracer_status {
	TRACER_OK = 0,
	TRACER_DENIED = 1, /* the kernel said EPERM/EACCES */
	TRACER_FAILED = 2,
};

/*
 * Open and load the BPF object for pid; map the arrays.  max_blocks sizes
 * the block map (0: MEMPROF_MAX_BLOCKS), max_stacks the stack table (0:
 * MEMPROF_MAX_STACKS; the inner table adds MEMPROF_INNER_STACKS).  With
 * MEMPROF_BPF_LIFETIME_HISTS=0 in the environment the dealloc program keeps
 * no lifetime histograms (the benchmark's baseline, bench/tables/t7-lifetimes.sh).
 */
enum tracer_status tracer_open(struct tracer *tr, pid_t pid, uint32_t max_blocks,
			       uint32_t max_stacks, char *err, size_t errlen);
/* Kernel memory the stack maps take for max_stacks, in bytes (about). */
uint64_t tracer_stack_memory(uint32_t max_stacks);
/* Attach every memprof probe of every probe file of t. */
enum tracer_status tracer_attach(struct tracer *tr, const struct target *t, char *err,
				 size_t errlen);
/* Destroy the links: the target's semaphores drop. */
void tracer_detach(struct tracer *tr);
/* Refresh tr->blocks from the block map (home slots, then the overflow
 * hash by batch lookups).  0 or -errno. */
int tracer_read_blocks(struct tracer *tr);
uint32_t tracer_n_stacks(const struct tracer *tr);
uint64_t tracer_counter(const struct tracer *tr, enum memprof_counter c);
void tracer_close(struct tracer *tr);

#endif
