/*
 * The block map (memprof_maps.h: block_slots, the levels of
 * blocks_overflow): a part of memprof.bpf.c, included there after the maps
 * and globals it uses, never on its own.
 */
#ifndef MEMPROF_BLOCKS_BPF_H
#define MEMPROF_BLOCKS_BPF_H

/* The home slot of block id. */
static __always_inline struct memprof_block_slot *blocks_home(__u64 id)
{
	__u32 k = id % home_slots;

	return bpf_map_lookup_elem(&block_slots, &k);
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
 * created so far are full).  Its home slot if free, else the overflow's
 * first level with room.
 */
#define BLOCKS_DUPLICATE 1
#define BLOCKS_FULL 2
#define BLOCKS_BEHIND 3
static __always_inline int blocks_insert(__u64 id, const struct memprof_block *b)
{
	struct memprof_block_slot *s = blocks_home(id);
	int rc = 0;

	if (__sync_fetch_and_add(&n_blocks, 1) >= max_blocks) {
		__sync_fetch_and_add(&n_blocks, -1);
		return BLOCKS_FULL;
	}
	if (s && s->id == id)
		rc = BLOCKS_DUPLICATE;
	else if (n_overflow && overflow_find(id))
		rc = BLOCKS_DUPLICATE;
	else if (s && __sync_val_compare_and_swap(&s->id, 0, id | MEMPROF_BLOCK_SLOT_BUSY) == 0) {
		s->b = *b;
		/* Publishes b (an atomic exchange is a full barrier). */
		__sync_lock_test_and_set(&s->id, id);
		return 0;
	} else {
		rc = BLOCKS_BEHIND;
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
	}
	__sync_fetch_and_add(&n_blocks, -1);
	return rc;
}

/* The tracked block id, or NULL; *home is its home slot if it is there. */
static __always_inline struct memprof_block *blocks_find(__u64 id, struct memprof_block_slot **home)
{
	struct memprof_block_slot *s = blocks_home(id);

	*home = NULL;
	if (s && s->id == id) {
		*home = s;
		return &s->b;
	}
	if (!n_overflow)
		return NULL;
	return overflow_find(id);
}

/* Stop tracking block id (found by blocks_find): 0, or -1 if another death took it first. */
static __always_inline int blocks_remove(__u64 id, struct memprof_block_slot *home)
{
	if (home) {
		if (__sync_val_compare_and_swap(&home->id, id, 0) != id)
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
