/*
 * The bootstrap arena on its own (linked from its object file): what the
 * interposer hands out while the next allocator is being looked up.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "preload.h"

Test(bootstrap, blocks_are_aligned_owned_and_sized)
{
	void *a = bootstrap_alloc(10, 0);
	void *b = bootstrap_alloc(100, 4096);
	int on_stack;

	cr_assert_not_null(a);
	cr_assert_not_null(b);
	cr_expect_eq((uintptr_t)a % 16, 0);
	cr_expect_eq((uintptr_t)b % 4096, 0);
	cr_expect(bootstrap_owns(a) && bootstrap_owns(b));
	cr_expect(!bootstrap_owns(&on_stack));
	cr_expect(!bootstrap_owns(NULL));
	cr_expect_eq(bootstrap_block_size(a), 10);
	cr_expect_eq(bootstrap_block_size(b), 100);
	cr_expect((char *)b >= (char *)a + 10, "blocks overlap");
	/* Never reused: the arena is zero. */
	cr_expect_eq(((unsigned char *)b)[99], 0);
}

Test(bootstrap, odd_alignment_rounds_up)
{
	void *p = bootstrap_alloc(8, 48);

	cr_assert_not_null(p);
	cr_expect_eq((uintptr_t)p % 64, 0);
}

Test(bootstrap, exhaustion_is_enomem)
{
	errno = 0;
	cr_expect_null(bootstrap_alloc(BOOTSTRAP_ARENA_BYTES, 0));
	cr_expect_eq(errno, ENOMEM);
	errno = 0;
	cr_expect_null(bootstrap_alloc(SIZE_MAX - 8, 0));
	cr_expect_eq(errno, ENOMEM);
	cr_expect_null(bootstrap_alloc(8, (size_t)1 << 40));
	/* Smaller requests still fit after a refused one. */
	cr_expect_not_null(bootstrap_alloc(64, 0));
}

#define RACERS 4
#define PER_RACER 256

static void *racer(void *arg)
{
	void **out = arg;

	for (int i = 0; i < PER_RACER; i++) {
		out[i] = bootstrap_alloc(32, 0);
		if (out[i])
			memset(out[i], 0xab, 32);
	}
	return NULL;
}

static int by_address(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;

	return x < y ? -1 : x > y;
}

Test(bootstrap, concurrent_blocks_do_not_overlap)
{
	static void *blocks[RACERS][PER_RACER];
	pthread_t t[RACERS];

	for (int i = 0; i < RACERS; i++)
		pthread_create(&t[i], NULL, racer, blocks[i]);
	for (int i = 0; i < RACERS; i++)
		pthread_join(t[i], NULL);
	void **all = &blocks[0][0];
	for (int i = 0; i < RACERS * PER_RACER; i++)
		cr_assert_not_null(all[i]);
	qsort(all, RACERS * PER_RACER, sizeof(void *), by_address);
	for (int i = 1; i < RACERS * PER_RACER; i++)
		cr_assert((char *)all[i] >= (char *)all[i - 1] + 32, "blocks overlap");
}

/* free tests the sampled-block filter only: an arena block must hold its slot
 * while it lives, and give it back when freed. */
Test(bootstrap, blocks_hold_their_filter_slot_while_live)
{
	void *a = bootstrap_alloc(24, 0);

	cr_assert_not_null(a);
	cr_expect(sampled_blocks_may_contain(a), "a live arena block is not in the filter");
	cr_expect_gt(preload_free_gate, 0);
	bootstrap_release(a);
	cr_expect(!sampled_blocks_may_contain(a), "a freed arena block is still in the filter");
	cr_expect_eq(preload_free_gate, 0);
}
