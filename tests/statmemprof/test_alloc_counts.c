/*
 * alloc_counts: at rate 1 every word is a sample, so the samples the alloc
 * callbacks see equal the words the runtime counts, headers included, for
 * minor, major, combined and unmarshaled allocations.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "harness.h"

#define REPEAT 10
#define MANY_SMALL 100000

typedef struct counts {
	uint64_t minor;
	uint64_t major;
} counts;

static int count_minor(void *arg, const memprof_allocation *info, memprof_value *out)
{
	counts *c = arg;
	c->minor += info->n_samples;
	*out = MEMPROF_NONE;
	return 0;
}

static int count_major(void *arg, const memprof_allocation *info, memprof_value *out)
{
	counts *c = arg;
	c->major += info->n_samples;
	*out = MEMPROF_NONE;
	return 0;
}

typedef void (*scenario_fn)(void);

static void compare(const char *name, scenario_fn fn)
{
	counts c = {0, 0};
	memprof_tracker t = {.alloc_minor = count_minor, .alloc_major = count_major, .arg = &c};
	rt_stats before, after;

	rt_get_stats(&before);
	cr_assert_eq(memprof_start(1.0, 0, &t), 0);
	fn();
	harness_settle();
	cr_assert_eq(memprof_stop(), 0);
	rt_get_stats(&after);

	cr_assert_eq(c.minor, after.minor_words - before.minor_words,
		     "%s: minor: %llu samples for %llu words", name, (unsigned long long)c.minor,
		     (unsigned long long)(after.minor_words - before.minor_words));
	cr_assert_eq(c.major, after.major_words - before.major_words,
		     "%s: major: %llu samples for %llu words", name, (unsigned long long)c.major,
		     (unsigned long long)(after.major_words - before.major_words));
	cr_assert_gt(c.minor + c.major, 0, "%s allocated nothing", name);
}

static void check(int err)
{
	cr_assert_eq(err, 0, "allocation returned %d", err);
}

static void nested_refs(void)
{
	for (int i = 0; i < REPEAT; i++) {
		rt_value a = RT_UNIT, b = RT_UNIT, c = RT_UNIT;
		RT_ROOTS(3, &a, &b, &c);
		check(rt_alloc(1, 0, &a));
		check(rt_alloc(1, 0, &b));
		rt_store_field(b, 0, a);
		check(rt_alloc(1, 0, &c));
		rt_store_field(c, 0, b);
		RT_ROOTS_END();
	}
}

static void short_arrays(void)
{
	rt_value v;
	for (int i = 0; i < REPEAT; i++)
		check(rt_alloc(10, 0, &v));
}

static void long_arrays(void)
{
	rt_value v;
	for (int i = 0; i < REPEAT; i++)
		check(rt_alloc(1000, 0, &v));
}

static void direct_major(void)
{
	rt_value v;
	for (int i = 0; i < REPEAT; i++)
		check(rt_alloc_major(5, 0, &v));
}

static void combined(void)
{
	static const size_t sizes[] = {2, 3, 4};
	rt_value out[3];
	for (int i = 0; i < REPEAT; i++)
		check(rt_alloc_comb(3, sizes, 0, out));
}

static void many_small(void)
{
	rt_value v;
	for (int i = 0; i < MANY_SMALL; i++)
		check(rt_alloc(3, 0, &v));
}

static void unmarshaled(void)
{
	void *data = NULL;
	size_t len = 0;
	rt_value a = RT_UNIT, b = RT_UNIT, c = RT_UNIT;

	/* ref (ref (ref 42)), built and marshaled before counting starts. */
	RT_ROOTS(3, &a, &b, &c);
	check(rt_alloc(1, 0, &a));
	rt_store_field(a, 0, RT_VAL_INT(42));
	check(rt_alloc(1, 0, &b));
	rt_store_field(b, 0, a);
	check(rt_alloc(1, 0, &c));
	rt_store_field(c, 0, b);
	check(rt_marshal(c, &data, &len));
	RT_ROOTS_END();

	counts cnt = {0, 0};
	memprof_tracker t = {.alloc_minor = count_minor, .alloc_major = count_major, .arg = &cnt};
	rt_stats before, after;
	rt_get_stats(&before);
	cr_assert_eq(memprof_start(1.0, 0, &t), 0);
	for (int i = 0; i < REPEAT; i++) {
		rt_value v;
		check(rt_unmarshal(data, len, &v));
	}
	harness_settle();
	cr_assert_eq(memprof_stop(), 0);
	rt_get_stats(&after);
	free(data);

	cr_assert_eq(cnt.major, after.major_words - before.major_words,
		     "unmarshal: %llu samples for %llu major words", (unsigned long long)cnt.major,
		     (unsigned long long)(after.major_words - before.major_words));
	/* A small value: unmarshaled into the minor heap. */
	cr_assert_eq(cnt.minor, (uint64_t)REPEAT * 3 * 2, "three blocks of one field, %d times",
		     REPEAT);
	cr_assert_eq(cnt.major, 0);
	cr_assert_eq(cnt.minor, after.minor_words - before.minor_words);
}

TestSuite(alloc_counts, .init = harness_setup, .fini = harness_teardown);

Test(alloc_counts, nested_refs)
{
	compare("ref", nested_refs);
}

Test(alloc_counts, short_arrays)
{
	compare("short array", short_arrays);
}

Test(alloc_counts, long_arrays)
{
	compare("long array", long_arrays);
}

Test(alloc_counts, direct_major)
{
	compare("rt_alloc_major", direct_major);
}

Test(alloc_counts, combined)
{
	compare("combined", combined);
}

Test(alloc_counts, across_minor_collections)
{
	compare("many small", many_small);
}

Test(alloc_counts, unmarshaled)
{
	unmarshaled();
}
