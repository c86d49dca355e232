/*
 * Sampled blocks: which live blocks were sampled, and their core handles.
 *
 * free must answer "not sampled" for almost every block, cheaply and with
 * no lock.  A counting filter does it: sampled_filter[i] counts the sampled
 * live blocks whose address hashes to i.  A zero counter proves the block
 * was not sampled; a nonzero one (a sampled block, or a collision) sends
 * free to the table.  The counter is raised before the block is handed to
 * the program and lowered after its entry is gone, so a free never misses
 * a sampled block.
 *
 * The table maps address -> handle.  It is split in shards, each with its
 * own lock and its own idmap (runtime-probes/core/idmap.h, the map the
 * core's handles use), whose slot arrays come from mmap so that it never
 * calls the allocator it sits under.
 */
#include <pthread.h>
#include <sys/mman.h>

#include "idmap.h"
#include "preload.h"

/* Shards of the table, a power of two. */
#define SAMPLED_SHARDS 64
/* First capacity of a shard, a power of two. */
#define SAMPLED_SHARD_MIN_SLOTS 256

_Atomic uint32_t sampled_filter[(size_t)1 << SAMPLED_FILTER_BITS];

static void *sampled_map_alloc(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static void sampled_map_release(void *p, size_t bytes)
{
	munmap(p, bytes);
}

static const struct idmap_allocator sampled_map_allocator = {
    .alloc_zeroed = sampled_map_alloc, /* anonymous mappings are zeroed */
    .release = sampled_map_release,
};

struct sampled_shard {
	pthread_mutex_t lock;
	struct idmap map; /* address -> core handle */
} __attribute__((aligned(64)));

static struct sampled_shard shards[SAMPLED_SHARDS] = {
    [0 ... SAMPLED_SHARDS -
     1] = {.lock = PTHREAD_MUTEX_INITIALIZER,
	   .map = {.min_slots = SAMPLED_SHARD_MIN_SLOTS, .alloc = &sampled_map_allocator}},
};

/* The shard of an address: the top bits of its mix (the map uses the low ones). */
static struct sampled_shard *shard_of(uintptr_t addr)
{
	return &shards[(idmap_mix(addr) >> 58) & (SAMPLED_SHARDS - 1)];
}

int sampled_blocks_insert(const void *p, uint64_t h)
{
	uintptr_t addr = (uintptr_t)p;
	struct sampled_shard *s = shard_of(addr);
	int rc = 0;

	pthread_mutex_lock(&s->lock);
	size_t k = idmap_find(&s->map, addr);
	if (k != IDMAP_ABSENT) {
		/* Cannot happen while free removes before releasing; keep the newest. */
		s->map.slots[k].value = h;
	} else if (idmap_insert(&s->map, addr, h) != 0) {
		rc = -1;
	} else {
		atomic_fetch_add_explicit(&preload_free_gate, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&sampled_filter[sampled_filter_index(p)], 1,
					  memory_order_relaxed);
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

uint64_t sampled_blocks_remove(const void *p)
{
	uintptr_t addr = (uintptr_t)p;
	struct sampled_shard *s = shard_of(addr);
	uint64_t h = 0;

	pthread_mutex_lock(&s->lock);
	if (idmap_remove(&s->map, addr, &h)) {
		atomic_fetch_sub_explicit(&sampled_filter[sampled_filter_index(p)], 1,
					  memory_order_relaxed);
		atomic_fetch_sub_explicit(&preload_free_gate, 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&s->lock);
	return h;
}

void sampled_blocks_lock_all(void)
{
	for (size_t i = 0; i < SAMPLED_SHARDS; i++)
		pthread_mutex_lock(&shards[i].lock);
}

void sampled_blocks_unlock_all(void)
{
	for (size_t i = SAMPLED_SHARDS; i-- > 0;)
		pthread_mutex_unlock(&shards[i].lock);
}

void sampled_blocks_reinit_locks(void)
{
	for (size_t i = 0; i < SAMPLED_SHARDS; i++)
		pthread_mutex_init(&shards[i].lock, NULL);
}
