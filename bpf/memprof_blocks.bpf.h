/*
 * The block map (memprof_maps.h: block_slots, the levels of
 * blocks_overflow): a part of memprof.bpf.c, included there after the maps
 * and globals it uses, never on its own.
 */
#ifndef MEMPROF_BLOCKS_BPF_H
#define MEMPROF_BLOCKS_BPF_H

/* The hash that spreads a block's later choices: id * MULT + k * STEP, both
 * odd and unrelated, so that id's choice k is not id + 1's choice k - 1
 * (with (id + k) * MULT, consecutive ids shared three of their choices). */
#define BLOCK_CHOICE_MULT 0x9e3779b97f4a7c15ull
#define BLOCK_CHOICE_STEP 0x632be59bd9b4e019ull

/*
 * Choice k (k < MEMPROF_BLOCK_SLOT_CHOICES) of block id's slot, or NULL:
 * the first id % home_slots, the others from the high half of the hash,
 * all in 32 bits (a 64-bit remainder costs more).
 */
static __always_inline struct memprof_block_slot *blocks_slot(__u64 id, __u32 k)
{
	__u32 i = k ? (__u32)((id * BLOCK_CHOICE_MULT + k * BLOCK_CHOICE_STEP) >> 32) % home_slots
		    : (__u32)id % home_slots;

	return bpf_map_lookup_elem(&block_slots, &i);
}

/* Level k of the overflow, or NULL if the loader has not created it. */
static __always_inline void *overflow_level(__u32 k)
{
	return bpf_map_lookup_elem(&blocks_overflow, &k);
}

/* Block id in the overflow, or NULL. */
static __always_inline struct memprof_block *overflow_find(__u64 id)
{
	for (__u32 k = 0; k < MEMPROF_OVERFLOW_LEVELS; k++) {
		void *level = overflow_level(k);
		struct memprof_block *b;

		if (!level)
			return NULL;
		b = bpf_map_lookup_elem(level, &id);
		if (b)
			return b;
	}
	return NULL;
}

/*
 * Start tracking block id: 0, BLOCKS_DUPLICATE (id is tracked already),
 * BLOCKS_FULL (max_blocks are) or BLOCKS_BEHIND (the levels of the overflow
 * created so far are full).  Its first free choice of slot, else the
 * overflow's first level with room (memprof_maps.h).
 */
#define BLOCKS_DUPLICATE 1
#define BLOCKS_FULL 2
#define BLOCKS_BEHIND 3
static __always_inline int blocks_insert(__u64 id, const struct memprof_block *b)
{
	int rc = BLOCKS_BEHIND;

	if (__sync_fetch_and_add(&n_blocks, 1) >= max_blocks) {
		__sync_fetch_and_add(&n_blocks, -1);
		return BLOCKS_FULL;
	}
	for (__u32 k = 0; k < MEMPROF_BLOCK_SLOT_CHOICES; k++) {
		struct memprof_block_slot *s = blocks_slot(id, k);
		__u64 held;

		if (!s)
			continue;
		held = s->id;
		if ((held & ~MEMPROF_BLOCK_SLOT_BUSY) == id) {
			__sync_fetch_and_add(&n_blocks, -1);
			return BLOCKS_DUPLICATE;
		}
		if (held || __sync_val_compare_and_swap(&s->id, 0, id | MEMPROF_BLOCK_SLOT_BUSY))
			continue;
		s->b = *b;
		/* Publishes b (an atomic exchange is a full barrier). */
		__sync_lock_test_and_set(&s->id, id);
		return 0;
	}
	for (__u32 k = 0; k < MEMPROF_OVERFLOW_LEVELS; k++) {
		void *level = overflow_level(k);

		if (!level)
			break;
		if (bpf_map_update_elem(level, &id, b, BPF_NOEXIST) == 0) {
			__sync_fetch_and_add(&n_overflow, 1);
			count(MEMPROF_CNT_OVERFLOW_BLOCKS);
			return 0;
		}
		if (bpf_map_lookup_elem(level, &id)) {
			rc = BLOCKS_DUPLICATE;
			break;
		}
	}
	__sync_fetch_and_add(&n_blocks, -1);
	return rc;
}

/* The tracked block id, or NULL; *slot is its slot in block_slots if it is there. */
static __always_inline struct memprof_block *blocks_find(__u64 id, struct memprof_block_slot **slot)
{
	*slot = NULL;
	for (__u32 k = 0; k < MEMPROF_BLOCK_SLOT_CHOICES; k++) {
		struct memprof_block_slot *s = blocks_slot(id, k);

		if (s && s->id == id) {
			*slot = s;
			return &s->b;
		}
	}
	if (!n_overflow)
		return NULL;
	return overflow_find(id);
}

/* Stop tracking block id (found by blocks_find): 0, or -1 if another death took it first. */
static __always_inline int blocks_remove(__u64 id, struct memprof_block_slot *slot)
{
	if (slot) {
		if (__sync_val_compare_and_swap(&slot->id, id, 0) != id)
			return -1;
	} else {
		int gone = -1;

		/* The level that holds it (no other can: an id is inserted once). */
		for (__u32 k = 0; k < MEMPROF_OVERFLOW_LEVELS && gone; k++) {
			void *level = overflow_level(k);

			if (!level)
				break;
			gone = bpf_map_delete_elem(level, &id);
		}
		if (gone)
			return -1;
		__sync_fetch_and_add(&n_overflow, -1);
	}
	__sync_fetch_and_add(&n_blocks, -1);
	return 0;
}

#endif
