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
 * own lock and its own open-addressing array (linear probing, backward
 * shift deletion), grown with mmap so that it never calls the allocator it
 * sits under.
 */
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "preload.h"

/* Shards of the table, a power of two. */
#define SAMPLED_SHARDS 64
/* First capacity of a shard, a power of two. */
#define SAMPLED_SHARD_MIN_SLOTS 256

_Atomic uint32_t sampled_filter[(size_t)1 << SAMPLED_FILTER_BITS];

struct sampled_slot {
	uintptr_t addr; /* 0: empty */
	uint64_t handle;
};

struct sampled_shard {
	pthread_mutex_t lock;
	struct sampled_slot *slots;
	size_t n_slots; /* 0 or a power of two */
	size_t n_used;	/* <= n_slots / 2 */
} __attribute__((aligned(64)));

static struct sampled_shard shards[SAMPLED_SHARDS] = {
    [0 ... SAMPLED_SHARDS - 1] = {.lock = PTHREAD_MUTEX_INITIALIZER},
};

static uint64_t addr_mix(uintptr_t a)
{
	uint64_t h = a;

	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

static struct sampled_shard *shard_of(uint64_t mix)
{
	return &shards[(mix >> 58) & (SAMPLED_SHARDS - 1)];
}

static size_t entries_home(const struct sampled_shard *s, uint64_t mix)
{
	return (size_t)mix & (s->n_slots - 1);
}

static int entries_grow(struct sampled_shard *s)
{
	size_t want = s->n_slots ? 2 * s->n_slots : SAMPLED_SHARD_MIN_SLOTS;
	size_t bytes = want * sizeof(struct sampled_slot);
	struct sampled_slot *fresh =
	    mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (fresh == MAP_FAILED)
		return -1;
	struct sampled_slot *old = s->slots;
	size_t old_n = s->n_slots;

	s->slots = fresh;
	s->n_slots = want;
	for (size_t i = 0; i < old_n; i++) {
		if (!old[i].addr)
			continue;
		size_t k = entries_home(s, addr_mix(old[i].addr));
		while (fresh[k].addr)
			k = (k + 1) & (want - 1);
		fresh[k] = old[i];
	}
	if (old)
		munmap(old, old_n * sizeof(struct sampled_slot));
	return 0;
}

/* Slot of addr in s, or SIZE_MAX. */
static size_t entries_find(const struct sampled_shard *s, uintptr_t addr, uint64_t mix)
{
	if (!s->n_slots)
		return SIZE_MAX;
	for (size_t k = entries_home(s, mix);; k = (k + 1) & (s->n_slots - 1)) {
		if (s->slots[k].addr == addr)
			return k;
		if (!s->slots[k].addr)
			return SIZE_MAX;
	}
}

static void entries_delete(struct sampled_shard *s, size_t hole)
{
	size_t mask = s->n_slots - 1;

	for (size_t k = (hole + 1) & mask; s->slots[k].addr; k = (k + 1) & mask) {
		size_t home = entries_home(s, addr_mix(s->slots[k].addr));
		int home_after_hole =
		    hole <= k ? (home > hole && home <= k) : (home > hole || home <= k);
		if (!home_after_hole) {
			s->slots[hole] = s->slots[k];
			hole = k;
		}
	}
	s->slots[hole].addr = 0;
	s->n_used--;
}

int sampled_blocks_insert(const void *p, uint64_t h)
{
	uintptr_t addr = (uintptr_t)p;
	uint64_t mix = addr_mix(addr);
	struct sampled_shard *s = shard_of(mix);
	int rc = 0;

	pthread_mutex_lock(&s->lock);
	size_t k = entries_find(s, addr, mix);
	if (k != SIZE_MAX) {
		/* Cannot happen while free removes before releasing; keep the newest. */
		s->slots[k].handle = h;
		goto out;
	}
	if (2 * (s->n_used + 1) > s->n_slots && entries_grow(s) != 0) {
		rc = -1;
		goto out;
	}
	k = entries_home(s, mix);
	while (s->slots[k].addr)
		k = (k + 1) & (s->n_slots - 1);
	s->slots[k].addr = addr;
	s->slots[k].handle = h;
	s->n_used++;
	atomic_fetch_add_explicit(&sampled_filter[sampled_filter_index(p)], 1,
				  memory_order_relaxed);
out:
	pthread_mutex_unlock(&s->lock);
	return rc;
}

uint64_t sampled_blocks_remove(const void *p)
{
	uintptr_t addr = (uintptr_t)p;
	uint64_t mix = addr_mix(addr);
	struct sampled_shard *s = shard_of(mix);
	uint64_t h = 0;

	pthread_mutex_lock(&s->lock);
	size_t k = entries_find(s, addr, mix);
	if (k != SIZE_MAX) {
		h = s->slots[k].handle;
		entries_delete(s, k);
		atomic_fetch_sub_explicit(&sampled_filter[sampled_filter_index(p)], 1,
					  memory_order_relaxed);
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
