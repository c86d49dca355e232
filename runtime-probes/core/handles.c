/*
 * Handles of malloc-style entries: an open-addressing hash map from entry
 * id to table index, so memprof_block_freed(handle) is O(1).  Kept exact
 * through compaction and swaps (entries.c calls handles_set when an entry
 * moves).  Linear probing with backward-shift deletion (no tombstones).
 * Called with memprof_core.lock held.
 */
#include <stdlib.h>

#include "core.h"

/* First size of the map, a power of two. */
#define HANDLES_MIN_SLOTS 64

struct handle_slot {
	uint64_t id; /* 0: empty */
	size_t idx;
};

static struct handle_slot *slots;
static size_t n_slots; /* 0 or a power of two */
static size_t n_used;  /* n_used <= n_slots / 2 */

static size_t handles_hash(uint64_t id)
{
	id ^= id >> 33;
	id *= 0xff51afd7ed558ccdull;
	id ^= id >> 33;
	return (size_t)id & (n_slots - 1);
}

static size_t handles_find(uint64_t id)
{
	if (!n_slots)
		return NO_INDEX;
	for (size_t s = handles_hash(id);; s = (s + 1) & (n_slots - 1)) {
		if (slots[s].id == id)
			return s;
		if (slots[s].id == 0)
			return NO_INDEX;
	}
}

static int handles_resize(size_t want)
{
	struct handle_slot *old = slots;
	size_t old_n = n_slots;
	struct handle_slot *fresh = calloc(want, sizeof(*fresh));

	if (!fresh)
		return -1;
	slots = fresh;
	n_slots = want;
	for (size_t i = 0; i < old_n; i++) {
		if (!old[i].id)
			continue;
		size_t s = handles_hash(old[i].id);
		while (slots[s].id)
			s = (s + 1) & (n_slots - 1);
		slots[s] = old[i];
	}
	free(old);
	return 0;
}

int handles_put(uint64_t id, size_t idx)
{
	if (2 * (n_used + 1) > n_slots &&
	    handles_resize(n_slots ? 2 * n_slots : HANDLES_MIN_SLOTS) != 0)
		return -1;
	size_t s = handles_hash(id);
	while (slots[s].id && slots[s].id != id)
		s = (s + 1) & (n_slots - 1);
	if (!slots[s].id)
		n_used++;
	slots[s].id = id;
	slots[s].idx = idx;
	return 0;
}

size_t handles_get(uint64_t id)
{
	size_t s = handles_find(id);

	return s == NO_INDEX ? NO_INDEX : slots[s].idx;
}

void handles_set(uint64_t id, size_t idx)
{
	size_t s = handles_find(id);

	if (s != NO_INDEX)
		slots[s].idx = idx;
}

void handles_del(uint64_t id)
{
	size_t s = handles_find(id);

	if (s == NO_INDEX)
		return;
	/* Backward shift: pull later members of the cluster into the hole. */
	size_t hole = s;
	for (size_t k = (s + 1) & (n_slots - 1); slots[k].id; k = (k + 1) & (n_slots - 1)) {
		size_t home = handles_hash(slots[k].id);
		/* Move k into the hole unless its home lies cyclically in (hole, k]. */
		int home_after_hole =
		    hole <= k ? (home > hole && home <= k) : (home > hole || home <= k);
		if (!home_after_hole) {
			slots[hole] = slots[k];
			hole = k;
		}
	}
	slots[hole].id = 0;
	n_used--;
}

void handles_reset(void)
{
	free(slots);
	slots = NULL;
	n_slots = 0;
	n_used = 0;
}
