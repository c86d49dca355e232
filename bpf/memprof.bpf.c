// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/*
 * memprof-bpf: the kernel side.  Three USDT programs (memprof:sample,
 * memprof:events, whose batches of promotions and deaths a bounded
 * bpf_loop walks, and memprof:gc) fold the memprof probe events of one
 * process into per-stack aggregates.  No event leaves the
 * kernel: the loader reads the mmapable arrays straight from memory.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/usdt.bpf.h>
#include "memprof_probe_abi.h"
#include "memprof_maps.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by the loader before load: only this process is traced. */
const volatile __u32 target_tgid = 0;
/* Set by the loader before load (--max-stacks): ids below it are the stack table. */
const volatile __u32 max_stacks = MEMPROF_MAX_STACKS;
/*
 * The target's memory map (its mm_struct), learned from its first event:
 * a vfork child (and any CLONE_VM child) runs in it, allocates in the
 * target's heap, and its samples belong to the target.
 */
__u64 target_mm = 0;
/* The first block id this tracer saw sampled (ids increase in the core). */
__u64 first_id = 0;
/* Set by the loader before load (--max-blocks): home slots, and blocks tracked at once. */
const volatile __u32 max_blocks = MEMPROF_MAX_BLOCKS;
/* Set by the loader before load: the block map's home slots (block_slots' size). */
const volatile __u32 home_slots = MEMPROF_MAX_BLOCKS;
/* Set by the loader before load: 0 leaves the lifetime histograms out (bench). */
const volatile __u32 lifetime_hists = 1;

/* Exported to the loader through the skeleton's .bss. */
__u64 counters[MEMPROF_N_COUNTERS] = {};
/* Set by the loader (through the mmapped .bss) before it detaches. */
__u32 detaching = 0;
/* Next free stack id; 0 is MEMPROF_STACK_UNKNOWN. */
__u32 next_stack_id = 1;
/* Next free slot of the inner table (id max_stacks + next_inner_slot). */
__u32 next_inner_slot = 0;
/* Set by the loader before load: chunks of the frame arena for the stack
 * table; the inner table's MEMPROF_INNER_CHUNKS follow. */
const volatile __u32 frame_chunks =
    MEMPROF_MAX_STACKS * MEMPROF_FRAMES_PER_STACK / MEMPROF_FRAME_CHUNK;
/* Next free frame of the arena, for the stack table and the inner table
 * (memprof_maps.h: reserved before the stack's id). */
__u32 next_frame = 0;
__u32 next_inner_frame = 0;
/* The lowest and the highest id sampled while the block map was full (0:
 * none): their promote/dealloc are not orphans of unknown origin
 * (memprof_maps.h). */
__u64 untracked_first = 0;
__u64 untracked_last = 0;
/* Blocks tracked now (home slots and overflow; at most max_blocks), and in the overflow. */
__u64 n_blocks = 0;
__u64 n_overflow = 0;

/* The stack table and its aggregates (memprof_maps.h): chunks the loader
 * creates as they are needed, each a map of its own like these templates;
 * the arrays of them are sized by the loader (and stack_ids, lifetimes). */
struct stack_chunk_map {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct memprof_stack_chunk));
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, (MEMPROF_MAX_STACKS + MEMPROF_INNER_STACKS) / MEMPROF_STACK_CHUNK_IDS);
	__type(key, __u32);
	__array(values, struct stack_chunk_map);
} stack_chunks SEC(".maps");

struct agg_chunk_map {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct memprof_agg_chunk));
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, (MEMPROF_MAX_STACKS + MEMPROF_INNER_STACKS) / MEMPROF_STACK_CHUNK_IDS);
	__type(key, __u32);
	__array(values, struct agg_chunk_map);
} agg_chunks SEC(".maps");

/* The frame arena (memprof_maps.h): chunks the loader creates as they are
 * needed, each a map of its own like this template; the array of them is
 * sized by the loader. */
struct frame_chunk_map {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	/* Sizes, not types: clang gives the object's BTF only a declaration
	 * of a type reached through two pointers, as the template's is. */
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct memprof_frame_chunk));
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, MEMPROF_MAX_STACKS *MEMPROF_FRAMES_PER_STACK / MEMPROF_FRAME_CHUNK +
				MEMPROF_INNER_CHUNKS);
	__type(key, __u32);
	__array(values, struct frame_chunk_map);
} frames SEC(".maps");

/* The stack table's dedupe hash and the inner table's (memprof_maps.h),
 * sized max_stacks and MEMPROF_INNER_STACKS by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, MEMPROF_MAX_STACKS);
	__type(key, __u64);
	__type(value, struct memprof_stack_ref);
} stack_ids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, MEMPROF_INNER_STACKS);
	__type(key, __u64);
	__type(value, struct memprof_stack_ref);
} inner_stack_ids SEC(".maps");

/* The block map (memprof_maps.h): home slots, sized home_slots by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, MEMPROF_MAX_BLOCKS);
	__type(key, __u32);
	__type(value, struct memprof_block_slot);
} block_slots SEC(".maps");

/* ... and the blocks whose choices of slot were all taken, in the levels of the
 * overflow (memprof_maps.h): hashes the loader creates as they are needed,
 * each a map of its own like this template, elements allocated on use. */
struct overflow_level_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1);
	__type(key, __u64);
	__type(value, struct memprof_block);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, MEMPROF_OVERFLOW_LEVELS);
	__type(key, __u32);
	__array(values, struct overflow_level_map);
} blocks_overflow SEC(".maps");

/* The lifetimes of the stack table's stacks and of the inner table's
 * (memprof_maps.h), sized max_stacks and MEMPROF_INNER_STACKS by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, MEMPROF_MAX_STACKS);
	__type(key, __u32);
	__type(value, struct memprof_lifetime_hist);
} lifetimes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, MEMPROF_INNER_STACKS);
	__type(key, __u32);
	__type(value, struct memprof_lifetime_hist);
} inner_lifetimes SEC(".maps");

/* Carries of the lifetime histograms' 32-bit slots (memprof_maps.h). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, MEMPROF_LIFETIME_CARRIES);
	__type(key, __u64);
	__type(value, __u64);
} lifetime_carries SEC(".maps");

/*
 * Scratch copies of the sampled stack, per CPU and per nesting level: a
 * uprobe handler runs with migration disabled but may be preempted by
 * another task's on the same CPU, which then takes the next level.
 */
#define SCRATCH_LEVELS 4
struct stack_scratch {
	__u64 pcs[MEMPROF_STACK_DEPTH];
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SCRATCH_LEVELS);
	__type(key, __u32);
	__type(value, struct stack_scratch);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} scratch_depth SEC(".maps");

/* Multiplier of the stack hash (64-bit golden ratio). */
#define STACK_HASH_MULT 0x9e3779b97f4a7c15ull

/* Parents walked up from a vfork child before its memory map is known. */
#define VFORK_DEPTH 4

/*
 * Does the current task run in the target's memory?  The target's own
 * threads do; so does a vfork child (vfork_done set, same mm as its
 * parent), which allocates in the target's heap: the target frees its
 * blocks later.  Filtering on the pid alone would lose its samples and
 * turn those frees into orphans.
 */
static __always_inline int is_target(void)
{
	struct task_struct *task = bpf_get_current_task_btf(), *p = task;
	__u64 mm = (__u64)task->mm;

	if (task->tgid == target_tgid) {
		if (!target_mm && mm)
			__sync_val_compare_and_swap(&target_mm, 0, mm);
		return 1;
	}
	if (!mm)
		return 0;
	if (target_mm)
		return mm == target_mm;
	for (int i = 0; i < VFORK_DEPTH; i++) {
		if (!p->vfork_done)
			return 0;
		p = p->real_parent;
		if (!p || (__u64)p->mm != mm)
			return 0;
		if (p->tgid == target_tgid)
			return 1;
	}
	return 0;
}

static __always_inline void count(enum memprof_counter c)
{
	__sync_fetch_and_add(&counters[c], 1);
}

/* Tries of the compare-and-swap loops that widen the untracked ids' range
 * (a bounded loop: another CPU's drop may win each try). */
#define UNTRACKED_TRIES 4

/* Block id was sampled while the block map was full: widen the range
 * [untracked_first, untracked_last] to hold it. */
static __always_inline void untracked_add(__u64 id)
{
	__u64 cur = untracked_first, was;

	for (int i = 0; i < UNTRACKED_TRIES && (!cur || id < cur); i++) {
		was = __sync_val_compare_and_swap(&untracked_first, cur, id);
		if (was == cur)
			break;
		cur = was;
	}
	cur = untracked_last;
	for (int i = 0; i < UNTRACKED_TRIES && id > cur; i++) {
		was = __sync_val_compare_and_swap(&untracked_last, cur, id);
		if (was == cur)
			break;
		cur = was;
	}
}

/* A promote or dealloc of an id this tracer does not hold: count it under its cause. */
static __always_inline void count_orphan(__u64 id, enum memprof_counter unexplained)
{
	__u64 first_untracked = untracked_first;

	if (detaching) {
		count(MEMPROF_CNT_LATE_ORPHANS);
		return;
	}
	if (first_untracked && id >= first_untracked && id <= untracked_last) {
		count(MEMPROF_CNT_ORPHAN_UNTRACKED);
		return;
	}
	if (!first_id || id < first_id) {
		count(MEMPROF_CNT_ORPHAN_EARLY);
		return;
	}
	count(unexplained);
}

#include "memprof_stacks.bpf.h"

/* The sampled stack, read once from the target into this CPU's scratch. */
static __always_inline __u32 sample_stack_read(struct stack_scratch *st, __u64 stack_ptr,
					       __u64 stack_len, __u32 flags)
{
	__u32 len = stack_len > MEMPROF_STACK_DEPTH ? MEMPROF_STACK_DEPTH : stack_len;
	struct stack_hashes hs;
	int full;
	__u32 id;

	if (len == 0)
		return MEMPROF_STACK_UNKNOWN;
	if (bpf_probe_read_user(st->pcs, (len & (2 * MEMPROF_STACK_DEPTH - 1)) * sizeof(__u64),
				(const void *)stack_ptr)) {
		count(MEMPROF_CNT_DROP_STACK_READ);
		return MEMPROF_STACK_UNKNOWN;
	}
	stack_hashes_of(&hs, st, len, flags);
	id = stacks_intern(&stack_ids, st, &hs, len, flags, &next_stack_id, 0, max_stacks,
			   &next_frame, 0, frame_chunks, &full);
	if (!full)
		return id;
	if (full == 2)
		count(MEMPROF_CNT_FRAMES_FULL);
	else if (full == 3)
		count(MEMPROF_CNT_ARENA_BEHIND);
	/* The table is full: the innermost frames, in the inner table. */
	if (len > MEMPROF_INNER_DEPTH)
		len = MEMPROF_INNER_DEPTH;
	stack_hashes_of(&hs, st, len, MEMPROF_STACK_F_INNER);
	id = stacks_intern(&inner_stack_ids, st, &hs, len, MEMPROF_STACK_F_INNER, &next_inner_slot,
			   max_stacks, max_stacks + MEMPROF_INNER_STACKS, &next_inner_frame,
			   frame_chunks, MEMPROF_INNER_CHUNKS, &full);
	if (full)
		count(MEMPROF_CNT_DROP_STACKS_FULL);
	else if (id != MEMPROF_STACK_UNKNOWN)
		count(MEMPROF_CNT_INNER_STACKS);
	return id;
}

static __always_inline __u32 sample_stack(__u64 stack_ptr, __u64 stack_len, __u32 flags)
{
	__u32 zero = 0, *depth = bpf_map_lookup_elem(&scratch_depth, &zero), level, id;
	struct stack_scratch *st;

	if (!depth)
		return MEMPROF_STACK_UNKNOWN;
	level = __sync_fetch_and_add(depth, 1);
	st = level < SCRATCH_LEVELS ? bpf_map_lookup_elem(&scratch, &level) : NULL;
	if (!st) {
		__sync_fetch_and_add(depth, -1);
		count(MEMPROF_CNT_DROP_STACK_READ);
		return MEMPROF_STACK_UNKNOWN;
	}
	id = sample_stack_read(st, stack_ptr, stack_len, flags);
	__sync_fetch_and_add(depth, -1);
	return id;
}

/* Add to view v of a stack's aggregates (stack_agg: one lookup for the views a
 * sample or a death touches). */
static __always_inline void aggs_add(struct memprof_stack_agg *a, enum memprof_view v,
				     __u64 samples, __u64 bytes, __u64 objects_q16)
{
	if (!a)
		return;
	__sync_fetch_and_add(&a->samples[v], samples);
	__sync_fetch_and_add(&a->bytes[v], bytes);
	__sync_fetch_and_add(&a->objects_q16[v], objects_q16);
}

#include "memprof_blocks.bpf.h"

/* One sample, from either form of memprof:sample (memprof_probe_abi.h). */
struct sample_rec {
	__u64 w[MEMPROF_PROBE_REC_WORDS];
};

/*
 * The span of a sample: the units of its block the sampler drew its
 * n_samples on (memprof_probe_abi.h).  A block of size fields spans size + 1
 * words, its header included; a custom block's out-of-heap memory (OCaml's
 * Custom source) and a malloc block span size units.
 */
static __always_inline __u64 sample_span(__u64 size, __u64 kind_source)
{
	if (!(kind_source & MEMPROF_PROBE_F_BYTES) &&
	    MEMPROF_PROBE_SOURCE(kind_source) != MEMPROF_PROBE_SRC_CUSTOM)
		size++;
	return size ? size : 1;
}

/*
 * A global function, verified once on its own: inlined in the batch's
 * bpf_loop callback, it was verified again at each of the callback's
 * iterations the verifier explores (kernels since 6.7 verify a callback
 * as called any number of times), 688,456 instructions and 1.4 s here
 * against 7,000 when it is a call.  r may not be NULL for the verifier.
 */
__noinline int sample_one(const struct sample_rec *r)
{
	__u64 id, size, n_samples, kind_source, inv_rate_q16, est, span;
	struct memprof_block b = {};
	struct memprof_stack_agg *agg;
	__u32 stack_flags = 0;
	int err;

	if (!r)
		return 0;
	id = r->w[MEMPROF_PROBE_REC_ID];
	size = r->w[MEMPROF_PROBE_REC_SIZE];
	n_samples = r->w[MEMPROF_PROBE_REC_N_SAMPLES];
	kind_source = r->w[MEMPROF_PROBE_REC_KIND_SOURCE];
	inv_rate_q16 = r->w[MEMPROF_PROBE_REC_INV_RATE_Q16];
	if (detaching) {
		count(MEMPROF_CNT_LATE_SAMPLES);
		return 0;
	}
	if (!first_id)
		__sync_val_compare_and_swap(&first_id, 0, id);
	/* Units: bytes (the malloc host) or words (runtime hosts). */
	est = n_samples * inv_rate_q16;
	if (kind_source & MEMPROF_PROBE_F_BYTES)
		b.flags = MEMPROF_BLOCK_BYTES;
	else
		est *= 8;
	est >>= MEMPROF_PROBE_RATE_SHIFT;
	if (kind_source & MEMPROF_PROBE_F_STACK_CUT) {
		count(MEMPROF_CNT_TRUNCATED_STACKS);
		stack_flags = MEMPROF_STACK_F_CUT;
	}
	b.size = size;
	b.n_samples = n_samples;
	b.est_bytes = est;
	/*
	 * Objects this sample stands for: n_samples / (rate * span), rounded.
	 * Unbiased per block whatever its size: E[n_samples] = rate * span.
	 */
	span = sample_span(size, kind_source);
	b.est_objects_q16 = (n_samples * inv_rate_q16 + span / 2) / span;
	b.alloc_ns = r->w[MEMPROF_PROBE_REC_TIME_NS];
	b.stack_id = sample_stack(r->w[MEMPROF_PROBE_REC_STACK_PTR],
				  r->w[MEMPROF_PROBE_REC_STACK_LEN], stack_flags);
	if (MEMPROF_PROBE_KIND(kind_source) == MEMPROF_PROBE_KIND_MAJOR)
		b.flags |= MEMPROF_BLOCK_BORN_MAJOR;
	agg = stack_agg(b.stack_id);
	aggs_add(agg, MEMPROF_VIEW_ALLOC, n_samples, est, b.est_objects_q16);
	err = blocks_insert(id, &b);
	if (err == BLOCKS_DUPLICATE) {
		count(MEMPROF_CNT_DUPLICATE_IDS);
		return 1;
	}
	if (err) {
		count(err == BLOCKS_BEHIND ? MEMPROF_CNT_DROP_OVERFLOW_BEHIND
					   : MEMPROF_CNT_DROP_BLOCKS_FULL);
		untracked_add(id);
		return 1;
	}
	aggs_add(agg, MEMPROF_VIEW_LIVE, n_samples, est, b.est_objects_q16);
	return 1;
}

/* memprof:sample with seven arguments: one sample, timed by this probe. */
SEC("usdt")
int BPF_USDT(memprof_sample, __u64 id, __u64 size, __u64 n_samples, __u64 kind_source,
	     __u64 stack_ptr, __u64 stack_len, __u64 inv_rate_q16)
{
	struct sample_rec r;

	if (!is_target())
		return 0;
	r.w[MEMPROF_PROBE_REC_ID] = id;
	r.w[MEMPROF_PROBE_REC_SIZE] = size;
	r.w[MEMPROF_PROBE_REC_N_SAMPLES] = n_samples;
	r.w[MEMPROF_PROBE_REC_KIND_SOURCE] = kind_source;
	r.w[MEMPROF_PROBE_REC_STACK_PTR] = stack_ptr;
	r.w[MEMPROF_PROBE_REC_STACK_LEN] = stack_len;
	r.w[MEMPROF_PROBE_REC_INV_RATE_Q16] = inv_rate_q16;
	r.w[MEMPROF_PROBE_REC_TIME_NS] = bpf_ktime_get_ns();
	if (sample_one(&r))
		count(MEMPROF_CNT_SAMPLES);
	return 0;
}

/*
 * Items [i * per, + per) of a batch of n_items items of size bytes each at
 * the target's address base, read into dst (per items of room) with one
 * fault-safe copy: how many were read, 0 when none is left or they are
 * unreadable (counted; the rest of the batch is unreadable too).  per is a
 * constant at each call: a read costs about as much as handling a short
 * item (the copy's set-up, not its bytes), so a batch is read per at a time.
 */
static __always_inline __u32 batch_read(void *dst, __u64 base, __u64 n_items, __u32 i, __u32 per,
					__u32 size)
{
	__u64 first = (__u64)i * per, left;
	__u32 n;

	if (first >= n_items)
		return 0;
	left = n_items - first;
	n = left < per ? (__u32)left : per;
	if (bpf_probe_read_user(dst, (n & (2 * per - 1)) * size,
				(const void *)(base + first * size))) {
		count(MEMPROF_CNT_BAD_EVENTS);
		return 0;
	}
	return n;
}

/* Records of a batched memprof:sample read at a time (batch_read). */
#define SAMPLES_READ 4
/* A batched memprof:sample: its records' user address and count, the samples counted. */
struct samples_walk {
	__u64 base, n, samples;
};

/* Records [i * SAMPLES_READ, + SAMPLES_READ) of a batched memprof:sample. */
static long on_sample_records(__u32 i, void *ctx)
{
	struct samples_walk *w = ctx;
	struct sample_rec r[SAMPLES_READ];
	__u32 k, n = batch_read(r, w->base, w->n, i, SAMPLES_READ, sizeof(r[0]));

	if (!n)
		return 1;
	for (k = 0; k < SAMPLES_READ && k < n; k++)
		w->samples += sample_one(&r[k]);
	return 0;
}

/* memprof:sample with two arguments: a batch of records, one bpf_loop. */
SEC("usdt")
int BPF_USDT(memprof_samples, __u64 records_ptr, __u64 n)
{
	struct samples_walk w = {.base = records_ptr, .n = n};

	if (!is_target())
		return 0;
	count(MEMPROF_CNT_SAMPLE_BATCHES);
	if (n > MEMPROF_PROBE_SAMPLES_MAX) {
		count(MEMPROF_CNT_BAD_EVENTS);
		w.n = MEMPROF_PROBE_SAMPLES_MAX;
	}
	bpf_loop((w.n + SAMPLES_READ - 1) / SAMPLES_READ, on_sample_records, &w, 0);
	/* One atomic add a batch, not one a record. */
	if (w.samples)
		__sync_fetch_and_add(&counters[MEMPROF_CNT_SAMPLES], w.samples);
	return 0;
}

/* floor(log2(v)) for v > 0, by halving the range: six steps, no loop. */
static __always_inline __u32 log2_floor(__u64 v)
{
	__u32 r = 0, shift;

	shift = (v > 0xffffffffull) << 5;
	v >>= shift, r |= shift;
	shift = (v > 0xffff) << 4;
	v >>= shift, r |= shift;
	shift = (v > 0xff) << 3;
	v >>= shift, r |= shift;
	shift = (v > 0xf) << 2;
	v >>= shift, r |= shift;
	shift = (v > 0x3) << 1;
	v >>= shift, r |= shift;
	return r | (__u32)(v >> 1);
}

/* Stack id's histogram in map (lifetimes or inner_lifetimes), inserted
 * zeroed at the stack's first death (another CPU's may win), or NULL. */
static __always_inline struct memprof_lifetime_hist *lifetime_hist(void *map, __u32 stack_id)
{
	static const struct memprof_lifetime_hist zero;
	struct memprof_lifetime_hist *h = bpf_map_lookup_elem(map, &stack_id);

	if (h)
		return h;
	bpf_map_update_elem(map, &stack_id, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(map, &stack_id);
}

/* carry units of 2^32 samples to a histogram slot (memprof_maps.h). */
static __always_inline void lifetime_carry(__u32 stack_id, __u32 death, __u32 slot, __u64 carry)
{
	__u64 key = MEMPROF_LIFETIME_CARRY_KEY(stack_id, death, slot), zero = 0, *c;

	c = bpf_map_lookup_elem(&lifetime_carries, &key);
	if (!c) {
		bpf_map_update_elem(&lifetime_carries, &key, &zero, BPF_NOEXIST);
		c = bpf_map_lookup_elem(&lifetime_carries, &key);
	}
	if (c)
		__sync_fetch_and_add(c, carry);
	else
		count(MEMPROF_CNT_LIFETIME_CARRIES_LOST);
}

/*
 * A tracked block died: its lifetime goes to its stack's histogram of that
 * kind of death (memprof_maps.h gives the slots).  One hash lookup (and an
 * insert at the stack's first death), and one atomic add.  A global
 * function, verified once on its own: inlined, its branches (two maps, a
 * carry) were verified again on every path of memprof_events to it, 19,019
 * instructions processed for 918.
 */
__noinline int lifetime_add(__u32 stack_id, __u64 kind, __u64 n_samples, __u64 alloc_ns, __u64 now)
{
	struct memprof_lifetime_hist *h = stack_id < max_stacks
					      ? lifetime_hist(&lifetimes, stack_id)
					      : lifetime_hist(&inner_lifetimes, stack_id);
	__u64 us, carry = n_samples >> 32;
	__u32 slot = 0,
	      death = kind == MEMPROF_PROBE_KIND_MINOR ? MEMPROF_DIED_YOUNG : MEMPROF_DIED_OLD,
	      low = (__u32)n_samples, was;

	if (!h)
		return 0;
	us = now > alloc_ns ? (now - alloc_ns) / 1000 : 0;
	if (us)
		slot = log2_floor(us) + 1;
	if (slot >= MEMPROF_LIFETIME_SLOTS)
		slot = MEMPROF_LIFETIME_SLOTS - 1;
	was = __sync_fetch_and_add(&h->slots[death][slot], low);
	if ((__u32)(was + low) < was)
		carry++;
	if (carry)
		lifetime_carry(stack_id, death, slot, carry);
	return 0;
}

static __always_inline void on_promote(__u64 id)
{
	struct memprof_block_slot *slot;
	struct memprof_block *b;

	b = blocks_find(id, &slot);
	if (!b) {
		count_orphan(id, MEMPROF_CNT_ORPHAN_PROMOTES);
		return;
	}
	if (detaching) {
		count(MEMPROF_CNT_LATE_EVENTS);
		return;
	}
	if (__sync_fetch_and_or(&b->flags, MEMPROF_BLOCK_PROMOTED) & MEMPROF_BLOCK_PROMOTED) {
		count(MEMPROF_CNT_DOUBLE_PROMOTES);
		return;
	}
	aggs_add(stack_agg(b->stack_id), MEMPROF_VIEW_PROMOTED, b->n_samples, b->est_bytes,
		 b->est_objects_q16);
}

static __always_inline void on_dealloc(__u64 id, __u64 kind, __u64 death_ns)
{
	struct memprof_block_slot *slot;
	struct memprof_stack_agg *agg;
	struct memprof_block *b;
	__u64 n, est, obj, alloc_ns;
	__u32 stack_id;

	b = blocks_find(id, &slot);
	if (!b) {
		count_orphan(id, MEMPROF_CNT_ORPHAN_DEALLOCS);
		return;
	}
	/*
	 * Sampling has stopped: the views stay as they were then.  Unlinking
	 * the probes takes milliseconds, in which a program that recycles
	 * its blocks quickly (workload-sites' medium ring turns over in about
	 * 15 ms) would otherwise free most of its sampled live blocks.
	 */
	if (detaching) {
		count(MEMPROF_CNT_LATE_EVENTS);
		return;
	}
	n = b->n_samples;
	est = b->est_bytes;
	obj = b->est_objects_q16;
	stack_id = b->stack_id;
	alloc_ns = b->alloc_ns;
	if (blocks_remove(id, slot)) {
		/* Someone else reported this death first. */
		count(MEMPROF_CNT_ORPHAN_DEALLOCS);
		return;
	}
	/* Died young (OCaml's dealloc_minor): the short view. */
	agg = stack_agg(stack_id);
	if (kind == MEMPROF_PROBE_KIND_MINOR)
		aggs_add(agg, MEMPROF_VIEW_SHORT, n, est, obj);
	aggs_add(agg, MEMPROF_VIEW_LIVE, -n, -est, -obj);
	if (lifetime_hists)
		lifetime_add(stack_id, kind, n, alloc_ns, death_ns);
}

/* What event_one saw, for the batch's counters: added up as they come
 * (no branch for the verifier to follow), promotions in the low half. */
#define EVENT_SEEN_PROMOTE 1ull
#define EVENT_SEEN_DEALLOC (1ull << 32)
#define EVENT_SEEN_PROMOTES(seen) ((seen)&0xffffffffull)
#define EVENT_SEEN_DEALLOCS(seen) ((seen) >> 32)

/* One event of a memprof:events batch (memprof_probe_abi.h).  A global
 * function, verified once on its own, not once per event of a read.
 * Returns EVENT_SEEN_* (0: a bad event): the batch counts promotions and
 * deaths once. */
__noinline __u64 event_one(__u64 what_id, __u64 death_ns)
{
	switch (MEMPROF_PROBE_EVENT_WHAT(what_id)) {
	case MEMPROF_PROBE_EV_PROMOTE:
		on_promote(MEMPROF_PROBE_EVENT_ID(what_id));
		return EVENT_SEEN_PROMOTE;
	case MEMPROF_PROBE_EV_DEALLOC_MINOR:
		on_dealloc(MEMPROF_PROBE_EVENT_ID(what_id), MEMPROF_PROBE_KIND_MINOR, death_ns);
		return EVENT_SEEN_DEALLOC;
	case MEMPROF_PROBE_EV_DEALLOC_MAJOR:
		on_dealloc(MEMPROF_PROBE_EVENT_ID(what_id), MEMPROF_PROBE_KIND_MAJOR, death_ns);
		return EVENT_SEEN_DEALLOC;
	default:
		count(MEMPROF_CNT_BAD_EVENTS);
		return 0;
	}
}

/* Events of a memprof:events batch read at a time (batch_read). */
#define EVENTS_READ 8
struct events_walk {
	__u64 base, n;
	__u64 seen; /* the sum of event_one's answers so far */
};

/* Events [i * EVENTS_READ, + EVENTS_READ) of a memprof:events batch. */
static long on_events(__u32 i, void *ctx)
{
	struct events_walk *w = ctx;
	__u64 ev[EVENTS_READ][2];
	__u32 k, n = batch_read(ev, w->base, w->n, i, EVENTS_READ, sizeof(ev[0]));

	if (!n)
		return 1;
	for (k = 0; k < EVENTS_READ && k < n; k++)
		w->seen += event_one(ev[k][0], ev[k][1]);
	return 0;
}

SEC("usdt")
int BPF_USDT(memprof_events, __u64 events_ptr, __u64 n)
{
	struct events_walk w = {.base = events_ptr, .n = n};

	if (!is_target())
		return 0;
	count(MEMPROF_CNT_EVENT_PROBES);
	if (n > MEMPROF_PROBE_EVENTS_MAX) {
		count(MEMPROF_CNT_BAD_EVENTS);
		w.n = MEMPROF_PROBE_EVENTS_MAX;
	}
	bpf_loop((w.n + EVENTS_READ - 1) / EVENTS_READ, on_events, &w, 0);
	/* One atomic add a batch and kind, not one an event. */
	if (EVENT_SEEN_PROMOTES(w.seen))
		__sync_fetch_and_add(&counters[MEMPROF_CNT_PROMOTES], EVENT_SEEN_PROMOTES(w.seen));
	if (EVENT_SEEN_DEALLOCS(w.seen))
		__sync_fetch_and_add(&counters[MEMPROF_CNT_DEALLOCS], EVENT_SEEN_DEALLOCS(w.seen));
	return 0;
}

SEC("usdt")
int BPF_USDT(memprof_gc, __u64 phase)
{
	if (is_target())
		count(MEMPROF_CNT_GCS);
	(void)phase;
	return 0;
}
