/*
 * Bootstrap arena: the blocks handed out before the next allocator is known
 * (dlsym may allocate while we look malloc up).  Bump allocation, never
 * reused; free ignores these blocks and realloc copies them out.  The
 * requested size sits in the word before each block.  A block not yet freed
 * holds the free gate and its slot of the sampled-block filter
 * (sampled_blocks.c), which is how free tells it from the next allocator's.
 */
#include <errno.h>

#include "preload.h"

/* Smallest alignment of an arena block, as malloc gives. */
#define BOOTSTRAP_MIN_ALIGN 16

_Alignas(64) unsigned char bootstrap_arena[BOOTSTRAP_ARENA_BYTES];
static atomic_size_t bootstrap_used;
/* The free gate (preload.h), defined here: arena blocks hold it too. */
_Atomic uint32_t preload_free_gate;

void *bootstrap_alloc(size_t size, size_t align)
{
	if (align > BOOTSTRAP_ARENA_BYTES) {
		errno = ENOMEM;
		return NULL;
	}
	if (align < BOOTSTRAP_MIN_ALIGN)
		align = BOOTSTRAP_MIN_ALIGN;
	/* memalign rounds an alignment that is not a power of two up. */
	while (align & (align - 1))
		align = (align | (align - 1)) + 1;
	size_t old = atomic_load_explicit(&bootstrap_used, memory_order_relaxed);
	size_t start, end;

	do {
		/* Align the address, not the offset: the arena is only 64-aligned. */
		uintptr_t base = (uintptr_t)bootstrap_arena;
		start =
		    ((base + old + sizeof(size_t) + align - 1) & ~(uintptr_t)(align - 1)) - base;
		if (start > BOOTSTRAP_ARENA_BYTES || size > BOOTSTRAP_ARENA_BYTES - start) {
			errno = ENOMEM;
			return NULL;
		}
		end = start + size;
	} while (!atomic_compare_exchange_weak_explicit(
	    &bootstrap_used, &old, end, memory_order_relaxed, memory_order_relaxed));
	size_t *size_word = (size_t *)(void *)(bootstrap_arena + start - sizeof(size_t));
	*size_word = size;
	atomic_fetch_add_explicit(&preload_free_gate, 1, memory_order_relaxed);
	sampled_filter_hold(bootstrap_arena + start, +1);
	return bootstrap_arena + start;
}

size_t bootstrap_block_size(const void *p)
{
	return ((const size_t *)p)[-1];
}

void bootstrap_release(const void *p)
{
	sampled_filter_hold(p, -1);
	atomic_fetch_sub_explicit(&preload_free_gate, 1, memory_order_relaxed);
}
