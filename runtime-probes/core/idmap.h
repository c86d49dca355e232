/*
 * idmap: an open-addressing hash map from a nonzero 64-bit key to a 64-bit
 * value, header-only (static inline) so that each user gets its own copy
 * with its own allocator: the core's handles (entry id -> table index,
 * handles.c, calloc), the malloc host's sampled blocks (address -> handle,
 * hosts/preload/sampled_blocks.c, mmap: it must not call the allocator it
 * sits under), and the loader's caches and tables (userspace/: frames by
 * address, symbols/dwarf_symbolize.c; pprof's strings, functions and
 * locations, output/pprof.c; the calloc allocator of userspace/heap_idmap.h).
 * The one hash map of the tree.
 *
 * Keys that are not integers (strings) are kept by a hash of theirs, made
 * nonzero, as the key: several slots may then hold the same key, the value
 * names the real key, and idmap_find_same compares it (idmap_insert adds
 * such a key without looking for it).
 *
 * Linear probing, at most half full, backward-shift deletion (no
 * tombstones: a lookup stops at the first empty slot).  Key 0 marks an
 * empty slot.  The slot array is a power of two, doubled when an insert
 * would pass half full; it never shrinks.  Not thread-safe: the user holds
 * its lock around every call.
 */
#ifndef MEMPROF_IDMAP_H
#define MEMPROF_IDMAP_H

#include <stddef.h>
#include <stdint.h>

/* Where the slot arrays come from. */
struct idmap_allocator {
	/* bytes of zeroed memory, or NULL */
	void *(*alloc_zeroed)(size_t bytes);
	/* give back a block of `bytes` bytes from alloc_zeroed */
	void (*release)(void *p, size_t bytes);
};

struct idmap_slot {
	uint64_t key; /* 0: empty */
	uint64_t value;
};

struct idmap {
	struct idmap_slot *slots;
	size_t n_slots;	  /* 0 or a power of two, >= min_slots */
	size_t n_used;	  /* keys present; 2 * n_used <= n_slots */
	size_t min_slots; /* first size, a power of two */
	const struct idmap_allocator *alloc;
};

/* Slot index meaning "absent". */
#define IDMAP_ABSENT SIZE_MAX

/* An empty map; nothing is allocated before the first insert. */
static inline void idmap_init(struct idmap *m, const struct idmap_allocator *alloc,
			      size_t min_slots)
{
	*m = (struct idmap){.min_slots = min_slots, .alloc = alloc};
}

/* The first round of MurmurHash3's 64-bit finalizer: the multiply carries
 * every key bit into the high bits, the last shift brings them back into
 * the low bits the slots use (and leaves the top ones for a user's shards). */
static inline uint64_t idmap_mix(uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;
	key ^= key >> 33;
	return key;
}

/* Home slot of a key: the low bits of its mix. */
static inline size_t idmap_home(const struct idmap *m, uint64_t key)
{
	return (size_t)idmap_mix(key) & (m->n_slots - 1);
}

/* Slot holding key, or IDMAP_ABSENT. */
static inline size_t idmap_find(const struct idmap *m, uint64_t key)
{
	if (!m->n_slots)
		return IDMAP_ABSENT;
	for (size_t s = idmap_home(m, key);; s = (s + 1) & (m->n_slots - 1)) {
		if (m->slots[s].key == key)
			return s;
		if (m->slots[s].key == 0)
			return IDMAP_ABSENT;
	}
}

/*
 * For keys kept by their hash (see the head of this file): the slot holding
 * key whose value same(value, ctx) accepts, or IDMAP_ABSENT.
 */
static inline size_t idmap_find_same(const struct idmap *m, uint64_t key,
				     int (*same)(uint64_t value, const void *ctx), const void *ctx)
{
	if (!m->n_slots)
		return IDMAP_ABSENT;
	for (size_t s = idmap_home(m, key);; s = (s + 1) & (m->n_slots - 1)) {
		if (m->slots[s].key == key && same(m->slots[s].value, ctx))
			return s;
		if (m->slots[s].key == 0)
			return IDMAP_ABSENT;
	}
}

/* Move every key into a fresh array of `want` slots.  0, or -1. */
static inline int idmap_resize(struct idmap *m, size_t want)
{
	struct idmap_slot *old = m->slots;
	size_t old_n = m->n_slots;
	struct idmap_slot *fresh = m->alloc->alloc_zeroed(want * sizeof(*fresh));

	if (!fresh)
		return -1;
	m->slots = fresh;
	m->n_slots = want;
	for (size_t i = 0; i < old_n; i++) {
		if (!old[i].key)
			continue;
		size_t s = idmap_home(m, old[i].key);
		while (fresh[s].key)
			s = (s + 1) & (want - 1);
		fresh[s] = old[i];
	}
	if (old)
		m->alloc->release(old, old_n * sizeof(*old));
	return 0;
}

/* Add key (nonzero, not in the map, unless the map keeps keys by their
 * hash) with value.  0, or -1 when the array could not grow (the map is
 * unchanged). */
static inline int idmap_insert(struct idmap *m, uint64_t key, uint64_t value)
{
	if (2 * (m->n_used + 1) > m->n_slots &&
	    idmap_resize(m, m->n_slots ? 2 * m->n_slots : m->min_slots) != 0)
		return -1;
	size_t s = idmap_home(m, key);
	while (m->slots[s].key)
		s = (s + 1) & (m->n_slots - 1);
	m->slots[s].key = key;
	m->slots[s].value = value;
	m->n_used++;
	return 0;
}

/* 1 and *value when key is present, else 0. */
static inline int idmap_get(const struct idmap *m, uint64_t key, uint64_t *value)
{
	size_t s = idmap_find(m, key);

	if (s == IDMAP_ABSENT)
		return 0;
	*value = m->slots[s].value;
	return 1;
}

/* Empty slot `hole`: pull the later members of its cluster back into it. */
static inline void idmap_remove_slot(struct idmap *m, size_t hole)
{
	size_t mask = m->n_slots - 1;

	for (size_t k = (hole + 1) & mask; m->slots[k].key; k = (k + 1) & mask) {
		size_t home = idmap_home(m, m->slots[k].key);
		/* k moves into the hole unless its home lies cyclically in (hole, k]. */
		int home_after_hole =
		    hole <= k ? (home > hole && home <= k) : (home > hole || home <= k);
		if (!home_after_hole) {
			m->slots[hole] = m->slots[k];
			hole = k;
		}
	}
	m->slots[hole].key = 0;
	m->slots[hole].value = 0;
	m->n_used--;
}

/* Remove key: 1 and its value in *value (when value is not NULL) if it was
 * present, else 0. */
static inline int idmap_remove(struct idmap *m, uint64_t key, uint64_t *value)
{
	size_t s = idmap_find(m, key);

	if (s == IDMAP_ABSENT)
		return 0;
	if (value)
		*value = m->slots[s].value;
	idmap_remove_slot(m, s);
	return 1;
}

/* Release the array: the map is empty again. */
static inline void idmap_clear(struct idmap *m)
{
	if (m->slots)
		m->alloc->release(m->slots, m->n_slots * sizeof(*m->slots));
	m->slots = NULL;
	m->n_slots = 0;
	m->n_used = 0;
}

#endif
