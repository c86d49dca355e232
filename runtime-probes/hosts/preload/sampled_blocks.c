/*
 * Sampled blocks: which live blocks were sampled, and their core handles.
 *
 * free must answer "not sampled" for almost every block, cheaply and with
 * no lock.  A counting filter does it: sampled_filter_counts[i] counts the
 * sampled live blocks whose address hashes to slot i (and the bootstrap
 * arena's blocks not yet freed, sampled_filter_hold), and bit i of
 * sampled_filter_bits is set exactly while that count is nonzero.  A clear
 * bit proves the block is neither; a set one (a sampled block, an arena
 * block, or a collision) sends free to its slow path.  The count and bit are raised before
 * the block is handed to the program and lowered after its entry is gone,
 * so a free never misses a sampled block.  Slot i belongs to shard
 * i >> (SAMPLED_FILTER_BITS - SAMPLED_SHARD_BITS), whose lock guards its
 * count and the bitmap word holding its bit (the 64 slots of a word share
 * a shard): the bit always agrees with the count.
 *
 * The table maps address -> handle.  It is split in shards, each with its
 * own lock and its own idmap (runtime-probes/core/idmap.h, the map the
 * core's handles use), whose slot arrays come from mmap so that it never
 * calls the allocator it sits under.
 */
#include <pthread.h>
#include <sys/mman.h>

#include "core.h"
#include "idmap.h"
#include "preload.h"

/* Shards of the table. */
#define SAMPLED_SHARDS ((size_t)1 << SAMPLED_SHARD_BITS)
/* First capacity of a shard, a power of two. */
#define SAMPLED_SHARD_MIN_SLOTS 256

_Atomic uint64_t sampled_filter_bits[(size_t)1 << (SAMPLED_FILTER_BITS - 6)];
/* Invariant: sampled_filter_counts[i] != 0 <=> bit i of sampled_filter_bits;
 * the count is the live sampled blocks and arena blocks of slot i. */
static uint32_t sampled_filter_counts[(size_t)1 << SAMPLED_FILTER_BITS];
_Static_assert(SAMPLED_FILTER_BITS - SAMPLED_SHARD_BITS >= 6,
	       "a bitmap word's 64 slots must lie in one shard");

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

/* The shard of a filter slot: its top bits (the map uses the mix's low ones). */
static struct sampled_shard *shard_of(size_t slot)
{
	return &shards[slot >> (SAMPLED_FILTER_BITS - SAMPLED_SHARD_BITS)];
}

/* Count one more (+1) or one fewer (-1) sampled block in slot i; shard lock held. */
static void filter_count(size_t i, int delta)
{
	uint64_t bit = (uint64_t)1 << (i & 63);

	MEMPROF_ASSERT(delta > 0 || sampled_filter_counts[i] > 0);
	sampled_filter_counts[i] += (uint32_t)delta;
	if (delta > 0 && sampled_filter_counts[i] == 1)
		atomic_fetch_or_explicit(&sampled_filter_bits[i >> 6], bit, memory_order_relaxed);
	else if (delta < 0 && sampled_filter_counts[i] == 0)
		atomic_fetch_and_explicit(&sampled_filter_bits[i >> 6], ~bit, memory_order_relaxed);
}

/* Start loading p's table slot and filter count (write intent), and the
 * shard's lock, without the lock: a stale array only wastes the hint. */
static void shard_prefetch(const struct sampled_shard *s, size_t slot, const void *p)
{
	struct idmap_slot *slots = __atomic_load_n(&s->map.slots, __ATOMIC_RELAXED);
	size_t n = __atomic_load_n(&s->map.n_slots, __ATOMIC_RELAXED);

	__builtin_prefetch(&s->lock, 1);
	__builtin_prefetch(&sampled_filter_counts[slot], 1);
	if (slots && n)
		__builtin_prefetch(&slots[idmap_mix((uintptr_t)p) & (n - 1)], 1);
}

void sampled_blocks_prefetch(const void *p)
{
	size_t slot = sampled_filter_index(p);

	shard_prefetch(shard_of(slot), slot, p);
}

int sampled_blocks_insert(const void *p, uint64_t h)
{
	uintptr_t addr = (uintptr_t)p;
	size_t slot = sampled_filter_index(p);
	struct sampled_shard *s = shard_of(slot);
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
		filter_count(slot, +1);
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

uint64_t sampled_blocks_remove(const void *p)
{
	uintptr_t addr = (uintptr_t)p;
	size_t slot = sampled_filter_index(p);
	struct sampled_shard *s = shard_of(slot);
	uint64_t h = 0;

	pthread_mutex_lock(&s->lock);
	if (idmap_remove(&s->map, addr, &h)) {
		filter_count(slot, -1);
		atomic_fetch_sub_explicit(&preload_free_gate, 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&s->lock);
	return h;
}

void sampled_filter_hold(const void *p, int delta)
{
	size_t slot = sampled_filter_index(p);
	struct sampled_shard *s = shard_of(slot);

	pthread_mutex_lock(&s->lock);
	filter_count(slot, delta);
	pthread_mutex_unlock(&s->lock);
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
