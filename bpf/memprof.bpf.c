// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/*
 * memprof-bpf: the kernel side.  Four USDT programs (memprof:sample,
 * memprof:promote, memprof:dealloc and memprof:gc) fold the memprof probe
 * events of one process into per-stack aggregates.  No event leaves the
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
/*
 * The target's memory map (its mm_struct), learned from its first event:
 * a vfork child (and any CLONE_VM child) runs in it, allocates in the
 * target's heap, and its samples belong to the target.
 */
__u64 target_mm = 0;
/* The first block id this tracer saw sampled (ids increase in the core). */
__u64 first_id = 0;
/* Set by the loader before load: 0 leaves the lifetime histograms out (bench). */
const volatile __u32 lifetime_hists = 1;

/* Exported to the loader through the skeleton's .bss. */
__u64 counters[MEMPROF_N_COUNTERS] = {};
/* Set by the loader (through the mmapped .bss) before it detaches. */
__u32 detaching = 0;
/* Next free stack id; 0 is MEMPROF_STACK_UNKNOWN. */
__u32 next_stack_id = 1;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, MEMPROF_MAX_STACKS);
	__type(key, __u32);
	__type(value, struct memprof_stack);
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, MEMPROF_MAX_STACKS);
	__type(key, __u32);
	__type(value, struct memprof_stack_agg);
} stack_aggs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MEMPROF_MAX_STACKS);
	__type(key, __u64);
	__type(value, __u32);
} stack_ids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MEMPROF_MAX_BLOCKS);
	__type(key, __u64);
	__type(value, struct memprof_block);
} blocks SEC(".maps");

/* Ids sampled while the block map was full: their promote/dealloc are not
 * orphans of unknown origin. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, MEMPROF_MAX_UNTRACKED);
	__type(key, __u64);
	__type(value, __u8);
} untracked SEC(".maps");
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, MEMPROF_MAX_STACKS);
	__type(key, __u32);
	__type(value, struct memprof_lifetime_hist);
} lifetimes SEC(".maps");

/* errno of an insert with BPF_NOEXIST on a present key (vmlinux.h has no errno.h). */
#define ERR_KEY_EXISTS 17

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

/*
 * A promote or dealloc of an id this tracer does not hold: count it under
 * its cause.  forget: drop the id from the untracked set (a death).
 */
static __always_inline void count_orphan(__u64 id, enum memprof_counter unexplained, int forget)
{
	if (detaching) {
		count(MEMPROF_CNT_LATE_ORPHANS);
		return;
	}
	if (bpf_map_lookup_elem(&untracked, &id)) {
		if (forget)
			bpf_map_delete_elem(&untracked, &id);
		count(MEMPROF_CNT_ORPHAN_UNTRACKED);
		return;
	}
	if (!first_id || id < first_id) {
		count(MEMPROF_CNT_ORPHAN_EARLY);
		return;
	}
	count(unexplained);
}

/*
 * The sampled stack stays in the target's memory (the probe's caller keeps
 * it alive while the handler runs) and is read in chunks onto the BPF
 * stack: no shared scratch buffer, which a preempted handler could see
 * overwritten by another thread's.
 */
struct user_stack {
	__u64 ptr; /* user address of the PCs, innermost first */
	__u32 len; /* 1..MEMPROF_STACK_DEPTH */
};

/* PCs read at once onto the BPF stack. */
#define STACK_CHUNK 32
#define STACK_CHUNKS (MEMPROF_STACK_DEPTH / STACK_CHUNK)

/* Read chunk c of s into buf; returns its PC count, or -1 on a fault. */
static __always_inline int chunk_read(const struct user_stack *s, __u32 c, __u64 *buf)
{
	__u32 first = c * STACK_CHUNK, n;

	if (first >= s->len)
		return 0;
	n = s->len - first;
	if (n > STACK_CHUNK)
		n = STACK_CHUNK;
	if (bpf_probe_read_user(buf, n * sizeof(__u64), (const void *)(s->ptr + first * 8)))
		return -1;
	return n;
}

/* 64-bit hash of the PCs; -1 in *fault if they could not be read. */
static __always_inline __u64 stack_hash(const struct user_stack *s, int *fault)
{
	__u64 h = s->len * STACK_HASH_MULT + 1, buf[STACK_CHUNK];

	*fault = 0;
	for (__u32 c = 0; c < STACK_CHUNKS; c++) {
		int n = chunk_read(s, c, buf);

		if (n < 0) {
			*fault = 1;
			return 0;
		}
		for (int i = 0; i < STACK_CHUNK; i++) {
			if (i >= n)
				break;
			h = (h ^ buf[i]) * STACK_HASH_MULT;
			h ^= h >> 29;
		}
	}
	return h;
}

/* id if the stack stored under it is s; else MEMPROF_STACK_UNKNOWN. */
static __always_inline __u32 stacks_check(__u32 id, const struct user_stack *s)
{
	const struct memprof_stack *kept = bpf_map_lookup_elem(&stacks, &id);
	__u64 buf[STACK_CHUNK];

	if (!kept || kept->len != s->len)
		goto collide;
	for (__u32 c = 0; c < STACK_CHUNKS; c++) {
		int n = chunk_read(s, c, buf);

		if (n < 0)
			goto collide;
		for (int i = 0; i < STACK_CHUNK; i++) {
			if (i >= n)
				break;
			if (kept->pcs[(c * STACK_CHUNK + i) & (MEMPROF_STACK_DEPTH - 1)] != buf[i])
				goto collide;
		}
	}
	return id;
collide:
	count(MEMPROF_CNT_DROP_STACK_COLLIDE);
	return MEMPROF_STACK_UNKNOWN;
}

/* Stack id of s, stored on first sight; MEMPROF_STACK_UNKNOWN if it cannot be. */
static __always_inline __u32 stacks_intern(const struct user_stack *s)
{
	int fault;
	__u64 h = stack_hash(s, &fault);
	__u32 *known, id;
	struct memprof_stack *slot;

	if (fault) {
		count(MEMPROF_CNT_DROP_STACK_READ);
		return MEMPROF_STACK_UNKNOWN;
	}
	known = bpf_map_lookup_elem(&stack_ids, &h);
	if (known)
		return stacks_check(*known, s);
	if (next_stack_id >= MEMPROF_MAX_STACKS) {
		count(MEMPROF_CNT_DROP_STACKS_FULL);
		return MEMPROF_STACK_UNKNOWN;
	}
	id = __sync_fetch_and_add(&next_stack_id, 1);
	slot = bpf_map_lookup_elem(&stacks, &id);
	if (!slot) {
		count(MEMPROF_CNT_DROP_STACKS_FULL);
		return MEMPROF_STACK_UNKNOWN;
	}
	/* The PCs first, then len: the slot is published by the hash insert. */
	if (bpf_probe_read_user(slot->pcs, s->len * sizeof(__u64), (const void *)s->ptr)) {
		count(MEMPROF_CNT_DROP_STACK_READ);
		return MEMPROF_STACK_UNKNOWN;
	}
	slot->len = s->len;
	if (bpf_map_update_elem(&stack_ids, &h, &id, BPF_NOEXIST) == 0)
		return id;
	/* Another CPU interned it first (our slot stays unused), or full. */
	known = bpf_map_lookup_elem(&stack_ids, &h);
	if (known)
		return stacks_check(*known, s);
	count(MEMPROF_CNT_DROP_STACK_HASH);
	return MEMPROF_STACK_UNKNOWN;
}

static __always_inline void aggs_add(__u32 stack_id, enum memprof_view v, __u64 samples,
				     __u64 bytes, __u64 objects_q16)
{
	struct memprof_stack_agg *a = bpf_map_lookup_elem(&stack_aggs, &stack_id);

	if (!a)
		return;
	__sync_fetch_and_add(&a->samples[v], samples);
	__sync_fetch_and_add(&a->bytes[v], bytes);
	__sync_fetch_and_add(&a->objects_q16[v], objects_q16);
}

static __always_inline __u32 sample_stack(__u64 stack_ptr, __u64 stack_len)
{
	struct user_stack s = {.ptr = stack_ptr, .len = stack_len};

	if (stack_len > MEMPROF_STACK_DEPTH) {
		count(MEMPROF_CNT_TRUNCATED_STACKS);
		s.len = MEMPROF_STACK_DEPTH;
	}
	if (s.len == 0)
		return MEMPROF_STACK_UNKNOWN;
	return stacks_intern(&s);
}

SEC("usdt")
int BPF_USDT(memprof_sample, __u64 id, __u64 size_words, __u64 n_samples, __u64 kind_source,
	     __u64 stack_ptr, __u64 stack_len, __u64 inv_rate_q16)
{
	struct memprof_block b = {};
	__u64 est;
	long err;

	if (!is_target())
		return 0;
	count(MEMPROF_CNT_SAMPLES);
	if (!first_id)
		__sync_val_compare_and_swap(&first_id, 0, id);
	est = (n_samples * inv_rate_q16 * 8) >> MEMPROF_PROBE_RATE_SHIFT;
	b.size_words = size_words;
	b.n_samples = n_samples;
	b.est_bytes = est;
	/* Objects this sample stands for: n / (rate * size), unbiased per block. */
	b.est_objects_q16 = n_samples * inv_rate_q16 / (size_words ? size_words : 1);
	b.alloc_ns = bpf_ktime_get_ns();
	b.stack_id = sample_stack(stack_ptr, stack_len);
	if (MEMPROF_PROBE_KIND(kind_source) == MEMPROF_PROBE_KIND_MAJOR)
		b.flags = MEMPROF_BLOCK_BORN_MAJOR;
	aggs_add(b.stack_id, MEMPROF_VIEW_ALLOC, n_samples, est, b.est_objects_q16);
	err = bpf_map_update_elem(&blocks, &id, &b, BPF_NOEXIST);
	if (err == -ERR_KEY_EXISTS) {
		count(MEMPROF_CNT_DUPLICATE_IDS);
		return 0;
	}
	if (err) {
		__u8 one = 1;

		count(MEMPROF_CNT_DROP_BLOCKS_FULL);
		bpf_map_update_elem(&untracked, &id, &one, BPF_ANY);
		return 0;
	}
	aggs_add(b.stack_id, MEMPROF_VIEW_LIVE, n_samples, est, b.est_objects_q16);
	return 0;
}

SEC("usdt")
int BPF_USDT(memprof_promote, __u64 id)
{
	struct memprof_block *b;

	if (!is_target())
		return 0;
	count(MEMPROF_CNT_PROMOTES);
	b = bpf_map_lookup_elem(&blocks, &id);
	if (!b) {
		count_orphan(id, MEMPROF_CNT_ORPHAN_PROMOTES, 0);
		return 0;
	}
	if (detaching) {
		count(MEMPROF_CNT_LATE_EVENTS);
		return 0;
	}
	if (__sync_fetch_and_or(&b->flags, MEMPROF_BLOCK_PROMOTED) & MEMPROF_BLOCK_PROMOTED) {
		count(MEMPROF_CNT_DOUBLE_PROMOTES);
		return 0;
	}
	aggs_add(b->stack_id, MEMPROF_VIEW_PROMOTED, b->n_samples, b->est_bytes,
		 b->est_objects_q16);
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

/*
 * A tracked block died: its lifetime goes to its stack's histogram of that
 * kind of death (memprof_maps.h gives the slots).  One array lookup, which
 * the verifier inlines, and one atomic add.
 */
static __always_inline void lifetime_add(__u32 stack_id, __u64 kind, __u64 n_samples,
					 __u64 alloc_ns)
{
	struct memprof_lifetime_hist *h = bpf_map_lookup_elem(&lifetimes, &stack_id);
	__u64 now = bpf_ktime_get_ns(), us;
	__u32 slot = 0;

	if (!h)
		return;
	us = now > alloc_ns ? (now - alloc_ns) / 1000 : 0;
	if (us)
		slot = log2_floor(us) + 1;
	if (slot >= MEMPROF_LIFETIME_SLOTS)
		slot = MEMPROF_LIFETIME_SLOTS - 1;
	__sync_fetch_and_add(&h->slots[kind == MEMPROF_PROBE_KIND_MINOR ? MEMPROF_DIED_YOUNG
									: MEMPROF_DIED_OLD][slot],
			     n_samples);
}

SEC("usdt")
int BPF_USDT(memprof_dealloc, __u64 id, __u64 kind)
{
	struct memprof_block *b;
	__u64 n, est, obj, alloc_ns;
	__u32 stack_id;

	if (!is_target())
		return 0;
	count(MEMPROF_CNT_DEALLOCS);
	b = bpf_map_lookup_elem(&blocks, &id);
	if (!b) {
		count_orphan(id, MEMPROF_CNT_ORPHAN_DEALLOCS, 1);
		return 0;
	}
	/*
	 * Sampling has stopped: the views stay as they were then.  Unlinking
	 * the probes takes milliseconds, in which a program that recycles
	 * its blocks quickly (workload-sites' medium ring turns over in about
	 * 15 ms) would otherwise free most of its sampled live blocks.
	 */
	if (detaching) {
		count(MEMPROF_CNT_LATE_EVENTS);
		return 0;
	}
	n = b->n_samples;
	est = b->est_bytes;
	obj = b->est_objects_q16;
	stack_id = b->stack_id;
	alloc_ns = b->alloc_ns;
	if (bpf_map_delete_elem(&blocks, &id)) {
		/* Someone else reported this death first. */
		count(MEMPROF_CNT_ORPHAN_DEALLOCS);
		return 0;
	}
	/* Died young (OCaml's dealloc_minor): the short view. */
	if (kind == MEMPROF_PROBE_KIND_MINOR)
		aggs_add(stack_id, MEMPROF_VIEW_SHORT, n, est, obj);
	aggs_add(stack_id, MEMPROF_VIEW_LIVE, -n, -est, -obj);
	if (lifetime_hists)
		lifetime_add(stack_id, kind, n, alloc_ns);
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
