/*
 * Maps shared by bpf/memprof.bpf.c and the loader (userspace/).
 *
 * Include-free on purpose: included after vmlinux.h on the BPF side and
 * after <linux/types.h> in user space.  Only fixed-width types.
 *
 * Maps:
 *   stack_chunks  array of maps, chunk index -> a one-element mmapable
 *                 array of struct memprof_stack_chunk: the stack table,
 *                 stack id -> struct memprof_stack (its length, flags and
 *                 where its frames are), MEMPROF_STACK_CHUNK_IDS ids a
 *                 chunk (id / MEMPROF_STACK_CHUNK_IDS is the chunk, the
 *                 rest of the id the place in it)
 *   agg_chunks    array of maps, the same for struct memprof_agg_chunk:
 *                 stack id -> struct memprof_stack_agg, the same chunks
 *   frames        array of maps, chunk index -> a one-element mmapable
 *                 array of struct memprof_frame_chunk: the frame arena,
 *                 every stack's frames one after the other
 *   stack_ids     hash (allocated on use), 64-bit hash of the PCs -> stack id
 *                 (dedupe) of the stack table proper; inner_stack_ids the
 *                 inner table's (two hashes: a hash's buckets are allocated
 *                 whole, max_entries rounded up to a power of two, and
 *                 65,536 + 4,096 entries in one took 131,072 buckets, 2 MiB)
 * The three arrays of maps grow with the stacks in use: the loader creates
 * their chunks as they are needed (userspace/trace/chunk_arena.h: a first
 * few at the start, then some kept created past the last one in use,
 * every SESSION_GROW_MS (10 ms) between its polls and at each poll:
 * MEMPROF_STACK_CHUNKS_FIRST and _AHEAD, MEMPROF_FRAME_CHUNKS_FIRST and
 * _AHEAD), the inner table's chunks all at the start.  A chunk not
 * created is NULL in its array of maps.
 * Stack ids: [1, max_stacks) is the stack table proper, first come first
 * served; [max_stacks, max_stacks + MEMPROF_INNER_STACKS) is the inner
 * table, where a sample whose stack found the table full keeps its
 * innermost MEMPROF_INNER_DEPTH frames (MEMPROF_STACK_F_INNER), so the
 * allocating function still shows.  max_stacks is the loader's
 * --max-stacks (default MEMPROF_MAX_STACKS); stack_ids and lifetimes hold
 * max_stacks entries, inner_stack_ids and inner_lifetimes
 * MEMPROF_INNER_STACKS, stack_chunks and agg_chunks max_stacks +
 * MEMPROF_INNER_STACKS ids (rounded up to whole chunks).  The inner table's chunks are
 * those from the one holding id max_stacks on.  A new stack takes the next
 * id only if that id's chunk is created: else it goes to the inner table,
 * counted (MEMPROF_CNT_ARENA_BEHIND), taking nothing; an id taken whose
 * chunk is missing (another CPU took the ids before it, past the last
 * chunk created) stays unused, zeros.  Invariant: every stack id in use is
 * in a created chunk of both stack_chunks and agg_chunks.  The loader maps
 * a chunk once ids in it are in use (next_stack_id, next_inner_slot), before
 * it reads those stacks: each mapped chunk counts whole in its RSS.
 * The frame arena: frames [0, max_stacks * MEMPROF_FRAMES_PER_STACK)
 * (rounded up to whole chunks) for the stack table, then
 * MEMPROF_INNER_CHUNKS chunks for the inner table.  A stack takes len
 * frames on first sight, from a counter (next_frame, next_inner_frame,
 * counting MEMPROF_FRAME_CHUNK frames per chunk): a stack reserved at
 * frame k * MEMPROF_FRAME_CHUNK + off (off < MEMPROF_FRAME_CHUNK) is stored
 * in chunk k from its frame off on, and may run into the chunk's last
 * MEMPROF_STACK_DEPTH frames, which no reservation starts in: it never
 * straddles two chunks, and no frame is lost to a chunk's end.  Its index
 * in the arena, seen as one array of frames (chunks one after the other),
 * is k * MEMPROF_CHUNK_FRAMES + off.  A stack that finds the stack table's
 * frames used up, or the chunk it would start in not created yet, goes to
 * the inner table as when its ids are (the latter counted,
 * MEMPROF_CNT_ARENA_BEHIND); it reserves nothing then.  Invariant: every
 * reserved frame is in a created chunk.  Invariant: a stack's frames are
 * reserved before its id, so every stack id below next_stack_id read by
 * the loader has its frames below next_frame (next_inner_frame) read after
 * it: the loader maps the chunks below those before it reads the stacks
 * (userspace/trace/tracer.c, tracer_sync), so a stack it reads has its
 * frames mapped.
 *   block_slots     array (mmapable) of home_slots struct memprof_block_slot:
 *                   a tracked block is in one of its MEMPROF_BLOCK_SLOT_CHOICES
 *                   slots (memprof_blocks.bpf.h, blocks_slot: the first
 *                   id % home_slots, the others spread by a hash of the
 *                   id), the first free when it was sampled, or in the
 *                   overflow when all were taken; home_slots is --max-blocks
 *                   when given, else sized from a first look at the target
 *                   (tracer_home_slots: its resident memory at the rate, 4
 *                   times over, at least MEMPROF_BLOCK_HOME_SLOTS_MIN)
 *   blocks_overflow array of maps, level -> a hash (allocated on use), block
 *                   id -> struct memprof_block: tracked blocks whose home
 *                   slots were taken, in levels the loader creates as they
 *                   are needed: level k holds overflow_level_entries(k) =
 *                   min(MEMPROF_OVERFLOW_FIRST << 2k, max_blocks) blocks, the
 *                   last (MEMPROF_OVERFLOW_LEVELS - 1) max_blocks: alone it
 *                   holds every block --max-blocks allows.  A hash's
 *                   buckets are allocated whole (262,144 for the default
 *                   --max-blocks: 4 MiB, in use or not), so level 0 is
 *                   created at the start (256 KiB of buckets) and level k +
 *                   1 once the overflow holds half of what the levels
 *                   created hold (the loader looks every 10 ms).  A block
 *                   goes to the first level with room; a lookup or a
 *                   removal tries the levels in order.  A block that finds
 *                   the levels created full is not tracked, counted
 *                   (MEMPROF_CNT_DROP_OVERFLOW_BEHIND: the loader did not
 *                   keep up)
 * The block map is the two together.  A sample costs one store in its first
 * slot (block ids increase, so consecutive samples use consecutive slots:
 * no bucket lock, no element allocation), and a death one
 * compare-and-swap; a block whose first slot is still held by a block
 * home_slots ids older takes its next free choice (long-lived blocks hold
 * slots spread over the array, so a few choices find one free), and only a
 * block whose choices are all held goes to the overflow hash.  A duplicate
 * id (a host's bug: ids are never reused) is caught among the choices
 * looked at before the free one and in the overflow's levels it is put
 * in, not searched for elsewhere.  At most max_blocks
 * (--max-blocks) blocks are tracked at once, in both (the global n_blocks).
 * A block sampled while they are all in use is not tracked (counted,
 * MEMPROF_CNT_DROP_BLOCKS_FULL); no map remembers its id, only the range
 * of such ids (the globals untracked_first and untracked_last, the lowest
 * and highest; widened by bounded compare-and-swap loops, which a drop
 * racing with several others on other CPUs may leave short of its id).  A
 * promote or dealloc of an id in that range that the block map does not
 * hold is counted as of a block the full map left out
 * (MEMPROF_CNT_ORPHAN_UNTRACKED): ids increase, and a block tracked in
 * between is in the block map until its death.  (The 65,536 ids an LRU
 * hash kept before took 5 MiB of kernel memory, preallocated, whatever the
 * target; an orphan of unknown origin in the range is counted with them.)
 *   lifetimes  hash (allocated on use), stack id -> struct memprof_lifetime_hist:
 *              only stacks with a death have one; ids below max_stacks
 *              (the unknown stack's included), and inner_lifetimes the
 *              inner table's; lifetime_carries (allocated on use) the
 *              carries of their 32-bit slots (struct memprof_lifetime_hist)
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
/* Frames of the arena per stack of the table, on average (the arena's size). */
#define MEMPROF_FRAMES_PER_STACK 32
/* Frames reserved per chunk of the arena (one array element: the verifier
 * bounds an access by one element), and its frames with the room for the
 * last stack to run into. */
#define MEMPROF_FRAME_CHUNK (32768 - MEMPROF_STACK_DEPTH)
/* 32,768 frames, 256 KiB: whole pages, so the loader maps the chunks one
 * after the other into one range; large, because each chunk the loader
 * puts into the array of maps costs it a wait for a grace period of the
 * kernel's (about 12 ms here). */
#define MEMPROF_CHUNK_FRAMES (MEMPROF_FRAME_CHUNK + MEMPROF_STACK_DEPTH)
/* Chunks of the stack table's part of the arena created at the start (2 MiB,
 * about 8,000 stacks of 32 frames: the new stacks a program gives in its
 * first moments attached, before the loader's first look 10 ms later), and
 * kept created past the last one in use (about 4,000 new stacks: the
 * loader looks every 10 ms, each look that adds chunks waits for a kernel
 * grace period, about 12 ms). */
#define MEMPROF_FRAME_CHUNKS_FIRST 8
#define MEMPROF_FRAME_CHUNKS_AHEAD 4
/* Stack ids per chunk of stack_chunks and agg_chunks (a power of two: an
 * id's place in its chunk is a mask the verifier bounds): 48 KiB of
 * stacks and 192 KiB of aggregates, whole pages. */
#define MEMPROF_STACK_CHUNK_IDS 2048
/* Chunks of the stack table (and of its aggregates) created at the start
 * (8,192 ids, as many stacks as the frame arena's first chunks hold on
 * average), and kept created past the last one in use (8,192 ids: at
 * least the stacks the frame arena's chunks ahead hold, 4,000 to 6,000;
 * with 4,096, and growth at the polls only, a burst of 65,536 new stacks
 * on a loaded machine left 3 to 5 times as many samples in the inner table
 * as the frames alone did). */
#define MEMPROF_STACK_CHUNKS_FIRST 4
#define MEMPROF_STACK_CHUNKS_AHEAD 4
/* The inner table's chunks. */
#define MEMPROF_INNER_CHUNKS                                                                       \
	((MEMPROF_INNER_STACKS * MEMPROF_INNER_DEPTH + MEMPROF_FRAME_CHUNK - 1) /                  \
	 MEMPROF_FRAME_CHUNK)
/* Tracked blocks alive at once. */
#define MEMPROF_MAX_BLOCKS 262144
/* Levels of the block map's overflow (memprof_maps.h: blocks_overflow), and
 * level 0's blocks: 16,384, 65,536, then max_blocks. */
#define MEMPROF_OVERFLOW_LEVELS 3
#define MEMPROF_OVERFLOW_FIRST 16384
/* Home slots of the block map at the least (1 MiB) when sized from the target. */
#define MEMPROF_BLOCK_HOME_SLOTS_MIN 16384
/* The slots a block may take in block_slots before the overflow. */
#define MEMPROF_BLOCK_SLOT_CHOICES 4
#define MEMPROF_STACK_UNKNOWN 0u

/*
 * Views.  One name per view everywhere: the loader's --view and
 * DIR/<name>.folded (MEMPROF_VIEW_NAMES), pprof's sample types, the docs and
 * the tests.  The first MEMPROF_N_KERNEL_VIEWS are the kernel's per-stack
 * aggregates, the indexes of samples[], bytes[] and objects_q16[] of
 * struct memprof_stack_agg.  In OCaml's terms, which the probe ABI
 * (memprof_probe_abi.h) and the API's callbacks keep:
 *   alloc     every sample probe (alloc_minor and alloc_major)
 *   live      sampled and tracked, no dealloc probe yet
 *   promoted  promote probe (the promote callback)
 *   short     dealloc probe of kind MEMPROF_PROBE_KIND_MINOR (the
 *             dealloc_minor callback): the block died young
 * Blocks that die old (dealloc of kind MEMPROF_PROBE_KIND_MAJOR) have no
 * view of their own: for tracked blocks it is alloc minus live minus short.
 *
 * The views from MEMPROF_N_KERNEL_VIEWS on are derived by the loader, and
 * the kernel has no slot for them:
 *   peak      the live view at the moment the total of the live view (over
 *             every stack of every traced process) was the highest the
 *             loader read while attached: it reads the live aggregates at
 *             every poll and keeps a copy of the highest (userspace/output/
 *             peak.h; docs/design.md, "The peak view", says what a poll can
 *             miss)
 */
enum memprof_view {
	MEMPROF_VIEW_ALLOC = 0,
	MEMPROF_VIEW_LIVE = 1,
	MEMPROF_VIEW_PROMOTED = 2,
	MEMPROF_VIEW_SHORT = 3,
	MEMPROF_N_KERNEL_VIEWS = 4, /* the kernel's aggregates end here */
	MEMPROF_VIEW_PEAK = 4,
	MEMPROF_N_VIEWS = 5,
};
/* The views' names, indexed by enum memprof_view. */
#define MEMPROF_VIEW_NAMES                                                                         \
	{                                                                                          \
		"alloc", "live", "promoted", "short", "peak"                                       \
	}

/* Block flags. */
#define MEMPROF_BLOCK_PROMOTED 1u
#define MEMPROF_BLOCK_BORN_MAJOR 2u
#define MEMPROF_BLOCK_BYTES 4u /* size in bytes (malloc host) */

/* Stack flags. */
#define MEMPROF_STACK_F_INNER 1u /* innermost frames only (the table was full) */
#define MEMPROF_STACK_F_CUT 2u	 /* the stack was deeper than MEMPROF_STACK_DEPTH */

/*
 * A stack is known by two 64-bit hashes of its frames, its length and its
 * flags: the first keys stack_ids, the second (check) is kept with it, and
 * a sample whose first hash finds a stack of another check is a collision
 * (MEMPROF_CNT_DROP_STACK_COLLIDE; the length and flags are in both hashes).  The frames are
 * not compared again: two stacks with both hashes equal are taken as one.
 * The low half of the check is kept in the dedupe hash too (struct
 * memprof_stack_ref), so a known stack is recognised by one lookup.
 */
/* The value of stack_ids and inner_stack_ids. */
struct memprof_stack_ref {
	__u32 id;    /* the stack's id: its entry is written before this is inserted */
	__u32 check; /* the low 32 bits of its check (its entry's) */
};

struct memprof_stack {
	__u32 len;	   /* frames, innermost first (at most MEMPROF_STACK_DEPTH) */
	__u32 flags;	   /* MEMPROF_STACK_F_* */
	__u64 check;	   /* the second hash */
	__u32 first_frame; /* index of its innermost frame in the frame arena */
	__u32 reserved;
};

/* One element of the frame arena.  A frame is the probe's opaque 64-bit
 * entry (a return address, or a tagged entry of a runtime), kept as it came. */
struct memprof_frame_chunk {
	__u64 pcs[MEMPROF_CHUNK_FRAMES];
};

/*
 * Estimated bytes of one sample event: n_samples * inv_rate_q16 >> 16 when
 * its unit is the byte (MEMPROF_PROBE_F_BYTES), n_samples * inv_rate_q16 *
 * 8 >> 16 when it is the word (headers included); estimated objects, in
 * 1/65536 units: n_samples * inv_rate_q16 / span, rounded, the span being
 * the units the sampler drew on (memprof_probe_abi.h; sample_span).
 * Live is raised at sample time and lowered at death.
 */
struct memprof_stack_agg {
	__u64 samples[MEMPROF_N_KERNEL_VIEWS];
	__u64 bytes[MEMPROF_N_KERNEL_VIEWS];
	__u64 objects_q16[MEMPROF_N_KERNEL_VIEWS];
};

/* One element of stack_chunks, and of agg_chunks: MEMPROF_STACK_CHUNK_IDS
 * stack ids from id chunk * MEMPROF_STACK_CHUNK_IDS on. */
struct memprof_stack_chunk {
	struct memprof_stack stacks[MEMPROF_STACK_CHUNK_IDS];
};
struct memprof_agg_chunk {
	struct memprof_stack_agg aggs[MEMPROF_STACK_CHUNK_IDS];
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
 *
 * A slot counts in 32 bits (half the memory: a histogram is most of what a
 * stack in use costs the kernel): when an add wraps it past 2^32, or adds
 * n_samples of 2^32 or more, the carry (the 2^32 units) goes to the hash
 * lifetime_carries under MEMPROF_LIFETIME_CARRY_KEY(stack id, death, slot),
 * allocated on use; the loader adds them back (struct
 * memprof_lifetime_counts), so the counts are exact.  A carry that finds
 * lifetime_carries full (MEMPROF_LIFETIME_CARRIES slots wrapped) is counted
 * (MEMPROF_CNT_LIFETIME_CARRIES_LOST): its slot is short by 2^32 each.
 */
#define MEMPROF_LIFETIME_SLOTS 36
#define MEMPROF_LIFETIME_CARRIES 4096
#define MEMPROF_LIFETIME_CARRY_KEY(stack_id, death, slot)                                          \
	(((__u64)(stack_id) << 16) | ((__u64)(death) << 8) | (__u64)(slot))
enum memprof_death {
	MEMPROF_DIED_YOUNG = 0, /* dealloc of kind minor (the short view) */
	MEMPROF_DIED_OLD = 1,	/* dealloc of kind major */
	MEMPROF_N_DEATHS = 2,
};

struct memprof_lifetime_hist {
	__u32 slots[MEMPROF_N_DEATHS][MEMPROF_LIFETIME_SLOTS];
};

/* A histogram with its carries added (the loader's, never in a map). */
struct memprof_lifetime_counts {
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
	/* samples of a new stack that found the stack table's frame arena used
	 * up (kept in the inner table, as MEMPROF_CNT_INNER_STACKS counts) */
	MEMPROF_CNT_FRAMES_FULL,
	/* samples of a new stack that found the chunk of the frame arena it
	 * would start in, or the chunk of the stack table its id would be
	 * in, not created yet (a burst of new stacks between two of the
	 * loader's looks, SESSION_GROW_MS apart; kept in the inner table too) */
	MEMPROF_CNT_ARENA_BEHIND,
	/*
	 * Samples once the loader began detaching: left out of the views, a
	 * snapshot taken then (the links, whose end takes the kernel a grace
	 * period each, go after the output is written).
	 */
	MEMPROF_CNT_LATE_SAMPLES,
	/* Carries of a lifetime slot past 2^32 samples that found
	 * lifetime_carries full (struct memprof_lifetime_hist) */
	MEMPROF_CNT_LIFETIME_CARRIES_LOST,
	/* block map: the overflow's levels created so far full (the loader
	 * had not created the next one yet): block not tracked */
	MEMPROF_CNT_DROP_OVERFLOW_BEHIND,
	MEMPROF_N_COUNTERS,
};

#endif
