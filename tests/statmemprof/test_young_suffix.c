/*
 * The young-suffix property of the tracked-block table: a minor collection
 * visits only the entries created or given user data since the previous
 * minor collection, not every tracked block.  With 100,000 old tracked
 * blocks, a minor collection after K new samples visits K entries
 * (memprof_get_stats: last_minor_scan).
 */
#include <criterion/criterion.h>

#include "harness.h"

#define N_OLD 100000
#define K_NEW 10
#define DATA_TAG 5
#define DATA_MAGIC 0x59

static keeper roots;

typedef struct ys {
	int young_data; /* promote returns a fresh young block */
	unsigned alloc, promote, dealloc, bad;
} ys;

static int ys_alloc_minor(void *arg, const memprof_allocation *info, memprof_value *out)
{
	ys *y = arg;
	(void)info;
	y->alloc++;
	*out = RT_VAL_INT(y->alloc);
	return 0;
}

static int ys_promote(void *arg, memprof_value data, memprof_value *out)
{
	ys *y = arg;
	y->promote++;
	*out = data;
	if (y->young_data) {
		rt_value v;
		if (rt_alloc(1, DATA_TAG, &v) != 0) {
			y->bad++;
			return 0;
		}
		rt_store_field(v, 0, RT_VAL_INT(DATA_MAGIC));
		*out = v;
	}
	return 0;
}

static int ys_dealloc(void *arg, memprof_value data)
{
	ys *y = arg;
	y->dealloc++;
	if (!RT_IS_INT(data) &&
	    (rt_tag(data) != DATA_TAG || rt_field(data, 0) != RT_VAL_INT(DATA_MAGIC)))
		y->bad++;
	return 0;
}

static void setup(void)
{
	harness_setup();
	keeper_init(&roots, N_OLD + K_NEW);
}

static void teardown(void)
{
	keeper_free(&roots);
	harness_teardown();
}

static void allocate_kept(size_t n)
{
	for (size_t i = 0; i < n; i++) {
		rt_value v;
		cr_assert_eq(rt_alloc(1, 0, &v), 0);
		keeper_push(&roots, v);
	}
}

static uint64_t minor_scan(void)
{
	memprof_stats st;
	rt_minor_gc();
	memprof_get_stats(&st);
	return st.last_minor_scan;
}

static void check_young_suffix(int young_data)
{
	ys y = {.young_data = young_data};
	memprof_tracker t = {.alloc_minor = ys_alloc_minor,
			     .promote = ys_promote,
			     .dealloc_minor = ys_dealloc,
			     .dealloc_major = ys_dealloc,
			     .arg = &y};
	memprof_stats st;

	cr_assert_eq(memprof_start(1.0, 0, &t), 0);
	allocate_kept(N_OLD);
	rt_minor_gc();
	harness_settle();
	cr_assert_eq(y.promote, N_OLD, "every kept block was promoted");
	rt_major_gc();
	harness_settle();
	memprof_get_stats(&st);
	cr_assert_geq(st.tracked, N_OLD, "the old blocks are still tracked");

	/*
	 * The promote callbacks ran after the last minor collection: a young
	 * datum each, at most, joins the suffix.
	 */
	uint64_t scan = minor_scan();
	cr_assert_leq(scan, young_data ? N_OLD : 0,
		      "minor collection after the promote callbacks visited %llu entries",
		      (unsigned long long)scan);

	allocate_kept(K_NEW);
	scan = minor_scan();
	cr_assert_geq(scan, K_NEW, "the new entries were visited");
	cr_assert_leq(scan, K_NEW,
		      "a minor collection after %d samples visited %llu entries "
		      "out of %llu tracked",
		      K_NEW, (unsigned long long)scan, (unsigned long long)st.tracked);
	harness_settle();
	cr_assert_eq(y.promote, N_OLD + K_NEW);

	/* A minor collection with no new sample visits nothing. */
	scan = minor_scan();
	if (!young_data)
		cr_assert_eq(scan, 0, "an idle minor collection visited %llu entries",
			     (unsigned long long)scan);
	else
		cr_assert_leq(scan, K_NEW);

	keeper_clear(&roots);
	rt_major_gc();
	harness_settle();
	cr_assert_eq(memprof_stop(), 0);
	cr_assert_eq(y.dealloc, N_OLD + K_NEW);
	cr_assert_eq(y.bad, 0, "user data damaged");
}

TestSuite(young_suffix, .init = setup, .fini = teardown);

Test(young_suffix, immediate_user_data)
{
	check_young_suffix(0);
}

Test(young_suffix, young_user_data_from_promote)
{
	check_young_suffix(1);
}
