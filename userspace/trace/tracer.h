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

#include "trace/chunk_arena.h"
#include "trace/overflow_levels.h"
#include "memprof_maps.h"
#include "target.h"

struct tracked_block {
	uint64_t id;
	struct memprof_block b;
};

/* What one BPF program cost to load (the verifier's own statistics). */
struct tracer_prog_cost {
	const char *name;	 /* the program's name, NULL: not loaded */
	uint32_t insns;		 /* instructions */
	uint32_t insns_verified; /* instructions the verifier processed */
	uint64_t verify_us;	 /* the verifier's time */
};

/* Where tracer_open and tracer_attach spent their time (CLOCK_MONOTONIC ns). */
#define TRACER_MAX_PROGS 4
struct tracer_costs {
	uint64_t open_ns;   /* the object opened and sized */
	uint64_t load_ns;   /* maps created, programs verified */
	uint64_t mmap_ns;   /* arrays mapped */
	uint64_t attach_ns; /* USDT links made */
	uint64_t detach_ns; /* links destroyed (tracer_close) */
	struct tracer_prog_cost progs[TRACER_MAX_PROGS];
};

struct tracer {
	struct memprof_bpf *skel;
	struct tracer_costs costs;
	struct bpf_link **links;
	char *link_is_sample; /* per link: 1 if memprof:sample's */
	size_t n_links;
	/*
	 * The stack table, its aggregates and the frame arena, each a table
	 * that grows (chunk_arena.h): its chunks mapped as they come into use,
	 * each table at one address, stacks and aggs indexed by stack id, frames
	 * n_frames long.  Invariant: the synced_stacks stacks read at the last
	 * tracer_sync (tracer_n_stacks) are mapped, their frames below n_frames.
	 */
	const struct memprof_stack *stacks;
	const struct memprof_stack_agg *aggs;
	const __u64 *frames;
	uint32_t synced_stacks, frame_chunks;
	uint64_t n_frames;
	struct chunk_arena stack_arena, agg_arena, frame_arena;
	uint32_t max_stacks; /* the stack table's size (--max-stacks) */
	uint32_t max_blocks;
	uint32_t home_slots;		 /* the block map's home slots (memprof_maps.h) */
	struct overflow_levels overflow; /* the block map's overflow */
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
	TRACER_LOG_FULL = 3, /* inside tracer.c only: the statistics overflowed the log */
};

/*
 * Open and load the BPF object for t's process, only the programs its probe
 * files need; map the arrays.  max_blocks bounds
 * the block map (0: MEMPROF_MAX_BLOCKS), home_slots sizes its home slots
 * (0 or more than max_blocks: max_blocks), max_stacks the stack table (0:
 * MEMPROF_MAX_STACKS; the inner table adds MEMPROF_INNER_STACKS).  With
 * MEMPROF_BPF_LIFETIME_HISTS=0 in the environment the dealloc program keeps
 * no lifetime histograms (the benchmark's baseline, bench/tables/t7-lifetimes.sh).
 * verifier_stats: ask the verifier for its statistics (tracer_describe_costs;
 * on some kernels that takes a second load).  On failure nothing is left
 * open (tr->skel is NULL).
 */
enum tracer_status tracer_open(struct tracer *tr, const struct target *t, uint32_t max_blocks,
			       uint32_t home_slots, uint32_t max_stacks, int verifier_stats,
			       char *err, size_t errlen);
/*
 * The block map's home slots for a target of resident_bytes sampled at
 * rate (per word): four times the live samples it would hold, a power of
 * two from MEMPROF_BLOCK_HOME_SLOTS_MIN to MEMPROF_MAX_BLOCKS.  Blocks past
 * them go to the overflow hash, allocated on use, up to max_blocks.
 */
uint32_t tracer_home_slots(uint64_t resident_bytes, double rate);
/* Kernel memory the stack maps take for max_stacks before any is used, in
 * bytes (about: the chunks created at the start, the hashes' buckets), and
 * what each stack used adds (on average, the chunks growing with them). */
uint64_t tracer_stack_memory(uint32_t max_stacks);
uint64_t tracer_stack_memory_used(void);
/* Attach every memprof probe of every probe file of t. */
enum tracer_status tracer_attach(struct tracer *tr, const struct target *t, char *err,
				 size_t errlen);
/* Raise detaching: from then on no program changes a view, and what the
 * loader reads is final (the links go in tracer_close, sample first: the
 * target stops sampling then). */
void tracer_detach(struct tracer *tr);
/* Refresh tr->blocks from the block map (home slots, then the overflow
 * hash by batch lookups).  0 or -errno. */
int tracer_read_blocks(struct tracer *tr);
/*
 * Unmap the stack table, its aggregates and the frame arena (tr->stacks,
 * tr->aggs and tr->frames read as zeros) until tracer_map_tables maps them
 * again: the loader's RSS holds them no longer while it resolves frames at
 * the stop.  Nothing may read them in between.  0, or -errno (then some
 * may stay mapped); tracer_map_tables is called either way.
 */
int tracer_unmap_tables(struct tracer *tr);
int tracer_map_tables(struct tracer *tr);
/* Create (and map) chunks of the stack table, aggregates and frames ahead
 * of what the kernel side uses, and take the count of stacks to read.  0
 * or -errno. */
int tracer_sync(struct tracer *tr);
/* Stack ids in use at the last tracer_sync: the entries of tr->stacks, aggs
 * to read. */
uint32_t tracer_n_stacks(const struct tracer *tr);
/* Hand each stack's lifetime histogram (stack ids below tracer_n_stacks
 * with a death), its carries added (memprof_maps.h), to each(arg, id,
 * counts), a batch of the kernel's map at a time: no copy of the whole
 * table.  0 or -errno. */
int tracer_each_lifetime(struct tracer *tr,
			 void (*each)(void *arg, uint32_t stack_id,
				      const struct memprof_lifetime_counts *h),
			 void *arg);
uint64_t tracer_counter(const struct tracer *tr, enum memprof_counter c);
/*
 * The run time of each loaded program so far, as the kernel counts it when
 * kernel.bpf_stats_enabled is 1, and per sample or event: 1 if it counted
 * any, else 0 (buf empty or zeros).  Before tracer_close.
 */
int tracer_describe_run_times(const struct tracer *tr, char *buf, size_t len);

void tracer_close(struct tracer *tr);
/* One line saying where the start-up time went (tr->costs), into buf. */
void tracer_describe_costs(const struct tracer *tr, char *buf, size_t len);
/* Kernel memory of every map of tr (fdinfo's memlock), in bytes; into buf
 * (if not NULL) one "name size" list. */
uint64_t tracer_map_memory(const struct tracer *tr, char *buf, size_t len);

#endif
