// SPDX-License-Identifier: GPL-2.0
/*
 * memprof-bpf: the kernel side.  Three USDT programs (memprof:sample,
 * memprof:promote, memprof:dealloc, and memprof:gc) fold the memprof probe
 * events of one process into per-stack aggregates.  No event leaves the
 * kernel: the loader reads the mmapable arrays straight from memory.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/usdt.bpf.h>
#include "../runtime-probes/include/memprof_probe_abi.h"
#include "memprof.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the loader before load: only this process is traced. */
const volatile __u32 target_tgid = 0;

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

/* The stack being read, too large for the BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct memprof_stack);
} scratch SEC(".maps");

/* Multiplier of the stack hash (64-bit golden ratio). */
#define STACK_HASH_MULT 0x9e3779b97f4a7c15ull

static __always_inline int is_target(void)
{
	return (bpf_get_current_pid_tgid() >> 32) == target_tgid;
}

static __always_inline void count(enum memprof_counter c)
{
	__sync_fetch_and_add(&counters[c], 1);
}

static __always_inline __u64 stack_hash(const struct memprof_stack *s)
{
	__u64 h = s->len * STACK_HASH_MULT + 1;

	for (int i = 0; i < MEMPROF_STACK_DEPTH; i++) {
		if (i >= s->len)
			break;
		h = (h ^ s->pcs[i]) * STACK_HASH_MULT;
		h ^= h >> 29;
	}
	return h;
}

/* The stack stored under id, if it is s; else MEMPROF_STACK_UNKNOWN. */
static __always_inline __u32 stacks_check(__u32 id, const struct memprof_stack *s)
{
	const struct memprof_stack *kept = bpf_map_lookup_elem(&stacks, &id);

	if (!kept || kept->len != s->len)
		goto collide;
	for (int i = 0; i < MEMPROF_STACK_DEPTH; i++) {
		if (i >= s->len)
			break;
		if (kept->pcs[i] != s->pcs[i])
			goto collide;
	}
	return id;
collide:
	count(MEMPROF_CNT_DROP_STACK_COLLIDE);
	return MEMPROF_STACK_UNKNOWN;
}

/* Stack id of s, stored on first sight; MEMPROF_STACK_UNKNOWN if full. */
static __always_inline __u32 stacks_intern(const struct memprof_stack *s)
{
	__u64 h = stack_hash(s);
	__u32 *known = bpf_map_lookup_elem(&stack_ids, &h);
	struct memprof_stack *slot;
	__u32 id;

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
	__builtin_memcpy(slot, s, sizeof(*slot));
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
				     __u64 bytes)
{
	struct memprof_stack_agg *a = bpf_map_lookup_elem(&stack_aggs, &stack_id);

	if (!a)
		return;
	__sync_fetch_and_add(&a->samples[v], samples);
	__sync_fetch_and_add(&a->bytes[v], bytes);
}

static __always_inline __u32 sample_stack(__u64 stack_ptr, __u64 stack_len)
{
	__u32 zero = 0;
	struct memprof_stack *s = bpf_map_lookup_elem(&scratch, &zero);
	__u32 len = stack_len;

	if (!s) {
		count(MEMPROF_CNT_DROP_SCRATCH);
		return MEMPROF_STACK_UNKNOWN;
	}
	if (stack_len > MEMPROF_STACK_DEPTH) {
		count(MEMPROF_CNT_TRUNCATED_STACKS);
		len = MEMPROF_STACK_DEPTH;
	}
	if (len == 0)
		return MEMPROF_STACK_UNKNOWN;
	s->len = len;
	s->pad = 0;
	if (bpf_probe_read_user(s->pcs, len * sizeof(__u64), (const void *)stack_ptr)) {
		count(MEMPROF_CNT_DROP_STACK_READ);
		return MEMPROF_STACK_UNKNOWN;
	}
	return stacks_intern(s);
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
	est = (n_samples * inv_rate_q16 * 8) >> MEMPROF_PROBE_RATE_SHIFT;
	b.size_words = size_words;
	b.n_samples = n_samples;
	b.est_bytes = est;
	b.alloc_ns = bpf_ktime_get_ns();
	b.stack_id = sample_stack(stack_ptr, stack_len);
	if (MEMPROF_PROBE_KIND(kind_source) == MEMPROF_PROBE_KIND_MAJOR)
		b.flags = MEMPROF_BLOCK_BORN_MAJOR;
	aggs_add(b.stack_id, MEMPROF_VIEW_ALLOC, n_samples, est);
	err = bpf_map_update_elem(&blocks, &id, &b, BPF_NOEXIST);
	if (err == -17 /* EEXIST */) {
		count(MEMPROF_CNT_DUPLICATE_IDS);
		return 0;
	}
	if (err) {
		count(MEMPROF_CNT_DROP_BLOCKS_FULL);
		return 0;
	}
	aggs_add(b.stack_id, MEMPROF_VIEW_LIVE, n_samples, est);
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
		count(detaching ? MEMPROF_CNT_LATE_ORPHANS : MEMPROF_CNT_ORPHAN_PROMOTES);
		return 0;
	}
	if (__sync_fetch_and_or(&b->flags, MEMPROF_BLOCK_PROMOTED) & MEMPROF_BLOCK_PROMOTED) {
		count(MEMPROF_CNT_DOUBLE_PROMOTES);
		return 0;
	}
	aggs_add(b->stack_id, MEMPROF_VIEW_PROMOTED, b->n_samples, b->est_bytes);
	return 0;
}

SEC("usdt")
int BPF_USDT(memprof_dealloc, __u64 id, __u64 kind)
{
	struct memprof_block *b;
	__u64 n, est;
	__u32 stack_id;

	if (!is_target())
		return 0;
	count(MEMPROF_CNT_DEALLOCS);
	b = bpf_map_lookup_elem(&blocks, &id);
	if (!b) {
		count(detaching ? MEMPROF_CNT_LATE_ORPHANS : MEMPROF_CNT_ORPHAN_DEALLOCS);
		return 0;
	}
	n = b->n_samples;
	est = b->est_bytes;
	stack_id = b->stack_id;
	if (bpf_map_delete_elem(&blocks, &id)) {
		/* Someone else reported this death first. */
		count(MEMPROF_CNT_ORPHAN_DEALLOCS);
		return 0;
	}
	aggs_add(stack_id,
		 kind == MEMPROF_PROBE_KIND_MINOR ? MEMPROF_VIEW_FREED_YOUNG
						  : MEMPROF_VIEW_FREED_OLD,
		 n, est);
	aggs_add(stack_id, MEMPROF_VIEW_LIVE, -n, -est);
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
