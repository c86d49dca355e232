/*
 * Maps shared by bpf/memprof.bpf.c and the loader (userspace/).
 *
 * Include-free on purpose: included after vmlinux.h on the BPF side and
 * after <linux/types.h> in user space.  Only fixed-width types.
 *
 * Maps:
 *   stacks     array (mmapable), stack id -> struct memprof_stack
 *   stack_aggs array (mmapable), stack id -> struct memprof_stack_agg
 *   stack_ids  hash, 64-bit hash of the PCs -> stack id (dedupe)
 * Stack ids: [1, max_stacks) is the stack table proper, first come first
 * served; [max_stacks, max_stacks + MEMPROF_INNER_STACKS) is the inner
 * table, where a sample whose stack found the table full keeps its
 * innermost MEMPROF_INNER_DEPTH frames (MEMPROF_STACK_F_INNER), so the
 * allocating function still shows.  max_stacks is the loader's
 * --max-stacks (default MEMPROF_MAX_STACKS); the three maps and lifetimes hold
 * max_stacks + MEMPROF_INNER_STACKS entries.
 *   block_slots     array (mmapable), id % max_blocks -> struct memprof_block_slot:
 *                   a tracked block's home slot
 *   blocks_overflow hash (allocated on use), block id -> struct memprof_block:
 *                   tracked blocks whose home slot was taken
 *   untracked       LRU hash, block id -> 1: sampled while the block map was full
 * The block map is the two together.  A sample costs one store in its home
 * slot (block ids increase, so consecutive samples use consecutive slots:
 * no hashing, no bucket lock, no element allocation), and a death one
 * compare-and-swap; only a block whose home slot is still held by a block
 * max_blocks ids older goes to the overflow hash.  At most max_blocks
 * (--max-blocks) blocks are tracked at once, in both (the global n_blocks).
 *   lifetimes  array (mmapable), stack id -> struct memprof_lifetime_hist
 * Globals (.bss, mmapped by the skeleton): counters[MEMPROF_CNT_*].
 *
 * Stack id MEMPROF_STACK_UNKNOWN (0) holds the samples whose stack could
 * not be kept (both tables full, unreadable stack): their bytes still count.
 */
#ifndef MEMPROF_MAPS_H
#define MEMPROF_MAPS_H

/* Frames per stack, equal to MEMPROF_PROBE_MAX_STACK (checked by the loader). */
#define MEMPROF_STACK_DEPTH 128
/* Distinct stacks kept by default (--max-stacks), the unknown stack included. */
#define MEMPROF_MAX_STACKS 65536
/* The inner table: stacks cut to their innermost frames once the table is full. */
#define MEMPROF_INNER_STACKS 4096
#define MEMPROF_INNER_DEPTH 8
/* Tracked blocks alive at once. */
#define MEMPROF_MAX_BLOCKS 262144
/* Ids remembered (LRU) that were sampled while the block map was full. */
#define MEMPROF_MAX_UNTRACKED 65536
#define MEMPROF_STACK_UNKNOWN 0u

/*
 * Views: per-stack aggregates, indexes of samples[] and bytes[].  One name
 * per view everywhere: the loader's --view and DIR/<name>.folded
 * (MEMPROF_VIEW_NAMES), the docs and the tests.  In OCaml's terms, which the
 * probe ABI (memprof_probe_abi.h) and the API's callbacks keep:
 *   alloc     every sample probe (alloc_minor and alloc_major)
 *   live      sampled and tracked, no dealloc probe yet
 *   promoted  promote probe (the promote callback)
 *   short     dealloc probe of kind MEMPROF_PROBE_KIND_MINOR (the
 *             dealloc_minor callback): the block died young
 * Blocks that die old (dealloc of kind MEMPROF_PROBE_KIND_MAJOR) have no
 * view of their own: for tracked blocks it is alloc minus live minus short.
 */
enum memprof_view {
	MEMPROF_VIEW_ALLOC = 0,
	MEMPROF_VIEW_LIVE = 1,
	MEMPROF_VIEW_PROMOTED = 2,
	MEMPROF_VIEW_SHORT = 3,
	MEMPROF_N_VIEWS = 4,
};
/* The views' names, indexed by enum memprof_view. */
#define MEMPROF_VIEW_NAMES                                                                         \
	{                                                                                          \
		"alloc", "live", "promoted", "short"                                               \
	}

/* Block flags. */
#define MEMPROF_BLOCK_PROMOTED 1u
#define MEMPROF_BLOCK_BORN_MAJOR 2u
#define MEMPROF_BLOCK_BYTES 4u /* size in bytes (malloc host) */

/* Stack flags. */
#define MEMPROF_STACK_F_INNER 1u /* innermost frames only (the table was full) */
#define MEMPROF_STACK_F_CUT 2u	 /* the stack was deeper than MEMPROF_STACK_DEPTH */

struct memprof_stack {
	__u32 len;   /* frames in pcs, innermost first */
	__u32 flags; /* MEMPROF_STACK_F_* */
	__u64 pcs[MEMPROF_STACK_DEPTH];
};

/*
 * Estimated bytes of one sample event: n_samples * inv_rate_q16 >> 16 when
 * its unit is the byte (MEMPROF_PROBE_F_BYTES), n_samples * inv_rate_q16 *
 * 8 >> 16 when it is the word; estimated objects, in 1/65536 units:
 * n_samples * inv_rate_q16 / size (in the sample's unit).
 * Live is raised at sample time and lowered at death.
 */
struct memprof_stack_agg {
	__u64 samples[MEMPROF_N_VIEWS];
	__u64 bytes[MEMPROF_N_VIEWS];
	__u64 objects_q16[MEMPROF_N_VIEWS];
};

struct memprof_block {
	__u64 size; /* words, or bytes with MEMPROF_BLOCK_BYTES */
	__u64 n_samples;
	__u64 est_bytes;
	__u64 alloc_ns;	       /* bpf_ktime_get_ns at the sample */
	__u64 est_objects_q16; /* objects it stands for, 1/65536 units */
	__u32 stack_id;
	__u32 flags; /* MEMPROF_BLOCK_* */
};

/*
 * One home slot of the block map.  id: 0 while the slot is free; the block's
 * id (nonzero, below 2^62: memprof_probe_abi.h) while it holds that block;
 * id | MEMPROF_BLOCK_SLOT_BUSY while the sample writing it is filling b.
 * Invariant: b is the block's whenever id is a plain block id, so a reader
 * that sees the same plain id before and after copying b has a consistent
 * copy (ids are never reused, so no other block can have come and gone).
 * A slot changes only by compare-and-swap of id: 0 -> busy (a sample claims
 * it), busy -> id (b written), id -> 0 (the block's death, reported once).
 */
#define MEMPROF_BLOCK_SLOT_BUSY (1ull << 63)
struct memprof_block_slot {
	__u64 id;
	struct memprof_block b;
	__u64 reserved; /* pads the slot to one 64-byte cache line */
};

/*
 * Lifetimes of tracked blocks that died, per stack and per kind of death, as
 * log2 histograms of microseconds (death time minus sample time): slot 0
 * holds lifetimes under 1 us, slot k (1 <= k < MEMPROF_LIFETIME_SLOTS - 1)
 * those in [2^(k-1), 2^k) us, and the last slot everything longer (from
 * 2^(MEMPROF_LIFETIME_SLOTS - 2) us, about 4.8 hours, on).  Each death adds
 * the block's n_samples to its slot: the histogram weighs lifetimes as the
 * views weigh bytes.  Blocks still alive when the loader stops are not here:
 * the loader reads their ages from the block map (censored lifetimes).
 */
#define MEMPROF_LIFETIME_SLOTS 36
enum memprof_death {
	MEMPROF_DIED_YOUNG = 0, /* dealloc of kind minor (the short view) */
	MEMPROF_DIED_OLD = 1,	/* dealloc of kind major */
	MEMPROF_N_DEATHS = 2,
};

struct memprof_lifetime_hist {
	__u64 slots[MEMPROF_N_DEATHS][MEMPROF_LIFETIME_SLOTS];
};

/* counters[] indexes: events seen, drops, checked invariants. */
enum memprof_counter {
	MEMPROF_CNT_SAMPLES = 0,	/* sample probes seen */
	MEMPROF_CNT_PROMOTES,		/* promote events seen */
	MEMPROF_CNT_DEALLOCS,		/* dealloc events seen */
	MEMPROF_CNT_GCS,		/* gc probes seen */
	MEMPROF_CNT_DROP_BLOCKS_FULL,	/* block map full: block not tracked */
	MEMPROF_CNT_DROP_STACKS_FULL,	/* stack table full: unknown stack */
	MEMPROF_CNT_DROP_STACK_HASH,	/* stack dedupe hash full: unknown stack */
	MEMPROF_CNT_DROP_STACK_COLLIDE, /* two stacks, one 64-bit hash: unknown stack */
	MEMPROF_CNT_DROP_STACK_READ,	/* stack unreadable: unknown stack */
	/* promote/dealloc of an id newer than the first sample seen, never seen
	 * sampled: unexplained (none of the causes below) */
	MEMPROF_CNT_ORPHAN_PROMOTES,
	MEMPROF_CNT_ORPHAN_DEALLOCS,
	MEMPROF_CNT_DOUBLE_PROMOTES,  /* second promote of one id */
	MEMPROF_CNT_DUPLICATE_IDS,    /* sample of an id already tracked */
	MEMPROF_CNT_TRUNCATED_STACKS, /* samples whose stack was cut (MEMPROF_PROBE_F_STACK_CUT) */
	/*
	 * Promote/dealloc of an unknown id once the loader began detaching:
	 * the sample program is disabled before the kernel lowers the sample
	 * semaphore, so the host may sample blocks this tracer never sees.
	 */
	MEMPROF_CNT_LATE_ORPHANS,
	/*
	 * Promote/dealloc of a tracked block once the loader began detaching:
	 * left out of the views, which are a snapshot taken when sampling
	 * stops (the target runs on while the links are destroyed).
	 */
	MEMPROF_CNT_LATE_EVENTS,
	/* Promote/dealloc of an id sampled while the block map was full. */
	MEMPROF_CNT_ORPHAN_UNTRACKED,
	/*
	 * Promote/dealloc of an id older than the first sample this tracer
	 * saw: sampled before it attached (an in-process profile, or another
	 * tracer attached first).
	 */
	MEMPROF_CNT_ORPHAN_EARLY,
	MEMPROF_CNT_INNER_STACKS, /* samples kept with their innermost frames (table full) */
	MEMPROF_CNT_EVENT_PROBES, /* memprof:events probes seen (batches) */
	MEMPROF_CNT_BAD_EVENTS,	  /* events or sample records unreadable, or of an unknown kind */
	MEMPROF_CNT_OVERFLOW_BLOCKS, /* blocks tracked in the overflow: home slot taken */
	MEMPROF_CNT_SAMPLE_BATCHES,  /* batched memprof:sample probes seen */
	MEMPROF_N_COUNTERS,
};

#endif
