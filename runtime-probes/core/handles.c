/*
 * Handles of malloc-style entries: entry id -> table index, so
 * memprof_block_freed(handle) is O(1).  An idmap (idmap.h) on calloc.  Kept
 * exact through compaction and swaps (entries.c calls handles_set when an
 * entry moves): it maps exactly the malloc-style entries that are neither
 * deleted nor dead.  Called with memprof_core.lock held.
 */
#include <stdlib.h>

#include "core.h"
#include "idmap.h"

/* First size of the map, a power of two. */
#define HANDLES_MIN_SLOTS 64

static void *handles_alloc_zeroed(size_t bytes)
{
	return calloc(1, bytes);
}

static void handles_release(void *p, size_t bytes)
{
	(void)bytes;
	free(p);
}

static const struct idmap_allocator handles_allocator = {
    .alloc_zeroed = handles_alloc_zeroed,
    .release = handles_release,
};

static struct idmap handles = {.min_slots = HANDLES_MIN_SLOTS, .alloc = &handles_allocator};

int handles_put(uint64_t id, size_t idx)
{
	MEMPROF_ASSERT(idmap_find(&handles, id) == IDMAP_ABSENT); /* ids are never reused */
	return idmap_insert(&handles, id, idx);
}

size_t handles_get(uint64_t id)
{
	uint64_t idx;

	return idmap_get(&handles, id, &idx) ? (size_t)idx : NO_INDEX;
}

void handles_set(uint64_t id, size_t idx)
{
	size_t s = idmap_find(&handles, id);

	MEMPROF_ASSERT(s != IDMAP_ABSENT);
	if (s != IDMAP_ABSENT)
		handles.slots[s].value = idx;
}

size_t handles_take(uint64_t id)
{
	uint64_t idx;

	return idmap_remove(&handles, id, &idx) ? (size_t)idx : NO_INDEX;
}

void handles_del(uint64_t id)
{
	idmap_remove(&handles, id, NULL);
}

size_t handles_count(void)
{
	return handles.n_used;
}
