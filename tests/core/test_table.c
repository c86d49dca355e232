/*
 * The tracked-block table: the young suffix (a minor collection visits only
 * entries created or given young data since the last one), the swap trick,
 * compaction, and dropping samples when the table cannot grow.
 */
#include <criterion/criterion.h>
#include <linux/types.h>

#include "memprof.h"
#include "memprof_debug.h"
#include "memprof_host.h"
#include "memprof_probe_abi.h"
#include "toy_host.h"

extern struct memprof_probe_control memprof_probe_control;

#define OLD_BLOCKS 100000
#define YOUNG_DATA_EVERY 10000

static memprof_value young_data; /* a value inside the toy minor heap */
static size_t alloc_calls;

/* Every YOUNG_DATA_EVERY-th block gets young user data, the others old data. */
static int alloc_major_cb(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	(void)info;
	alloc_calls++;
	*out = alloc_calls % YOUNG_DATA_EVERY == 0 ? young_data : (memprof_value)0x10;
	return 0;
}

static int alloc_minor_cb(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	(void)info;
	*out = (memprof_value)0x20;
	return 0;
}

static size_t young_roots_seen;
static void check_young_root(memprof_value *root, void *ctx)
{
	(void)ctx;
	cr_expect(toy_is_young(*root) || *root == 0x20, "a root of the young suffix: %#lx",
		  (unsigned long)*root);
	young_roots_seen++;
	if (toy_is_young(*root))
		*root += toy.moved_offset; /* the collector promotes it */
}

Test(table, minor_update_visits_only_the_young_suffix)
{
	memprof_tracker t = {.alloc_major = alloc_major_cb, .alloc_minor = alloc_minor_cb};
	memprof_stats st;

	toy_init();
	young_data = toy.young_end - 64;
	cr_assert_eq(memprof_start(1.0, 0, &t), 0);
	for (size_t i = 0; i < OLD_BLOCKS; i++)
		memprof_track_major((memprof_value)(0x100000 + 16 * i), 1);
	/* All entries are new: the next minor collection visits them once. */
	toy_minor_gc();
	memprof_get_stats(&st);
	cr_assert_eq(st.last_minor_scan, OLD_BLOCKS);
	cr_assert_eq(st.tracked, OLD_BLOCKS);

	/* Their alloc callbacks run now, below the young index: only those that
	 * return young data join the young suffix (swap trick). */
	cr_assert_eq(memprof_run_postponed(), 0);
	cr_assert_eq(alloc_calls, OLD_BLOCKS);
	cr_assert_eq(memprof_debug_check(), 0);
	struct memprof_debug_indexes ix;
	memprof_debug_get_indexes(&ix);
	cr_assert_eq(ix.len - ix.young, OLD_BLOCKS / YOUNG_DATA_EVERY);

	young_roots_seen = 0;
	memprof_scan_young_roots(check_young_root, NULL);
	cr_assert_eq(young_roots_seen, OLD_BLOCKS / YOUNG_DATA_EVERY);
	memprof_minor_update();
	memprof_get_stats(&st);
	cr_assert_eq(st.last_minor_scan, OLD_BLOCKS / YOUNG_DATA_EVERY);

	/* Nothing new: an empty suffix. */
	toy_minor_gc();
	memprof_get_stats(&st);
	cr_assert_eq(st.last_minor_scan, 0);

	/* One sampled young block: a suffix of one, whatever the table size. */
	static const size_t sz = 3;
	uintptr_t base;
	cr_assert_eq(toy_alloc(1, &sz, &base), 0);
	cr_assert_eq(memprof_run_postponed(), 0);
	young_roots_seen = 0;
	memprof_scan_young_roots(check_young_root, NULL);
	cr_assert_eq(young_roots_seen, 1);
	memprof_minor_update();
	memprof_get_stats(&st);
	cr_assert_eq(st.last_minor_scan, 1);
	cr_assert_eq(memprof_debug_check(), 0);
	cr_assert_eq(memprof_stop(), 0);
}

static int keep_alloc(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	*out = (memprof_value)info->id;
	return 0;
}

static size_t deallocs_major;
static int count_dealloc(void *arg, memprof_value data)
{
	(void)arg;
	(void)data;
	deallocs_major++;
	return 0;
}

Test(table, major_deaths_compact_the_table)
{
	memprof_tracker t = {.alloc_major = keep_alloc, .dealloc_major = count_dealloc};
	memprof_stats st;

	toy_init();
	cr_assert_eq(memprof_start(1.0, 0, &t), 0);
	for (size_t i = 0; i < 5000; i++)
		memprof_track_major((memprof_value)(0x100000 + 16 * i), 2);
	cr_assert_eq(memprof_run_postponed(), 0);
	toy.major_dead = 1;
	memprof_major_update();
	cr_assert_eq(memprof_run_postponed(), 0);
	cr_assert_eq(deallocs_major, 5000);
	memprof_get_stats(&st);
	cr_assert_eq(st.tracked, 0);
	cr_assert_eq(st.samples, 5000);
	memprof_major_update();
	struct memprof_debug_indexes ix;
	memprof_debug_get_indexes(&ix);
	cr_assert_eq(ix.len, 0, "deleted entries compacted away");
	cr_assert_eq(memprof_debug_check(), 0);
	cr_assert_eq(memprof_stop(), 0);
}

Test(table, full_table_drops_and_counts)
{
	memprof_tracker t = {.alloc_major = keep_alloc};
	memprof_stats st;

	toy_init();
	memprof_debug_set_table_limit(100);
	cr_assert_eq(memprof_start(1.0, 0, &t), 0);
	for (size_t i = 0; i < 250; i++)
		memprof_track_major((memprof_value)(0x100000 + 16 * i), 1);
	memprof_get_stats(&st);
	cr_expect_eq(st.tracked, 100);
	cr_expect_eq(st.dropped, 150);
	cr_expect_eq(memprof_probe_control.dropped, 150);
	cr_assert_eq(memprof_run_postponed(), 0);

	/* Young samples are dropped the same way; the allocation still happens. */
	static const size_t sz = 5;
	uintptr_t base = 0;
	cr_assert_eq(toy_alloc(1, &sz, &base), 0);
	cr_expect_neq(base, 0);
	memprof_get_stats(&st);
	cr_expect_eq(st.dropped, 151);

	/* Room again once blocks die. */
	toy.major_dead = 1;
	memprof_major_update();
	cr_assert_eq(memprof_run_postponed(), 0);
	toy.major_dead = 0;
	memprof_track_major((memprof_value)0x900000, 1);
	memprof_get_stats(&st);
	cr_expect_eq(st.tracked, 1);
	cr_expect_eq(st.dropped, 151);
	cr_assert_eq(memprof_debug_check(), 0);
	cr_assert_eq(memprof_stop(), 0);
}

/* Promotion, death and the order of callbacks through a toy minor heap. */
struct life {
	unsigned allocs, promotes, dmin, dmaj, bad;
};
static struct life life;

static int l_alloc(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	life.allocs++;
	*out = (memprof_value)(info->id << 4);
	return 0;
}
static int l_promote(void *arg, memprof_value d, memprof_value *out)
{
	(void)arg;
	life.promotes++;
	*out = d | 1;
	return 0;
}
static int l_dmin(void *arg, memprof_value d)
{
	(void)arg;
	life.dmin++;
	if (d & 1)
		life.bad++;
	return 0;
}
static int l_dmaj(void *arg, memprof_value d)
{
	(void)arg;
	life.dmaj++;
	if (!(d & 1))
		life.bad++;
	return 0;
}

Test(table, young_life_cycle)
{
	memprof_tracker t = {.alloc_minor = l_alloc,
			     .promote = l_promote,
			     .dealloc_minor = l_dmin,
			     .dealloc_major = l_dmaj};
	static const size_t comb[] = {1, 2, 3};
	uintptr_t base;

	toy_init();
	cr_assert_eq(memprof_start(1.0, 0, &t), 0);
	cr_assert_eq(toy_alloc(3, comb, &base), 0);
	cr_assert_eq(life.allocs, 3, "alloc_minor runs at the allocation");
	toy.survive = 0;
	toy_minor_gc();
	cr_assert_eq(life.dmin, 0, "dealloc is postponed");
	cr_assert_eq(memprof_run_postponed(), 0);
	cr_assert_eq(life.dmin, 3);

	cr_assert_eq(toy_alloc(3, comb, &base), 0);
	toy.survive = 1;
	toy_minor_gc();
	cr_assert_eq(memprof_run_postponed(), 0);
	cr_assert_eq(life.promotes, 3);
	toy.major_dead = 1;
	memprof_major_update();
	cr_assert_eq(memprof_run_postponed(), 0);
	cr_assert_eq(life.dmaj, 3);
	cr_assert_eq(life.bad, 0);
	memprof_stats st;
	memprof_get_stats(&st);
	cr_assert_eq(st.tracked, 0);
	cr_assert_eq(st.callbacks, 3 + 3 + 3 + 3 + 3);
	cr_assert_eq(memprof_stop(), 0);
}

/* An error midway through a combined allocation. */
static unsigned comb_calls;
static int fail_third(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	(void)info;
	if (++comb_calls == 3)
		return 77;
	*out = (memprof_value)comb_calls;
	return 0;
}

Test(table, combined_error_simulates_dealloc)
{
	memprof_tracker t = {.alloc_minor = fail_third, .dealloc_minor = l_dmin};
	static const size_t comb[] = {1, 1, 1, 1};
	uintptr_t base = 1;

	toy_init();
	uintptr_t before = toy.young_ptr;
	cr_assert_eq(memprof_start(1.0, 0, &t), 0);
	cr_assert_eq(toy_alloc(4, comb, &base), 77);
	cr_assert_eq(comb_calls, 3, "no alloc callback after the error");
	cr_assert_eq(life.dmin, 2, "simulated dealloc_minor for the two before");
	cr_assert_eq(toy.young_ptr, before, "nothing allocated");
	memprof_stats st;
	memprof_get_stats(&st);
	cr_assert_eq(st.tracked, 0);
	cr_assert_eq(memprof_debug_check(), 0);
	cr_assert_eq(memprof_stop(), 0);
}
