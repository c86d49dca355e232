/*
 * rt custom blocks (finalizers run exactly once, whether the block dies
 * young, dies in the major heap, or is alive at shutdown) and marshaling
 * round trips and bad input.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>

#include "rt.h"

#define N_CUSTOM 3000

static int finalized[N_CUSTOM];

static void setup(void)
{
	rt_config c = {.minor_heap_words = 8192};

	memset(finalized, 0, sizeof(finalized));
	cr_assert_eq(rt_init(&c), 0);
}

static void teardown(void)
{
	rt_shutdown();
}

TestSuite(rt_custom, .init = setup, .fini = teardown);
TestSuite(rt_marshal, .init = setup, .fini = teardown);

static void finalize_slot(void *data)
{
	finalized[(int *)data - finalized]++;
}

static int custom_ok(rt_value *out, int i)
{
	return rt_alloc_custom(&finalized[i], 1024, finalize_slot, out);
}

Test(rt_custom, finalizers_run_exactly_once)
{
	rt_value keep = RT_UNIT, c = RT_UNIT;

	RT_ROOTS(2, &keep, &c);
	cr_assert_eq(rt_alloc_major(N_CUSTOM, 0, &keep), 0);
	for (int i = 0; i < N_CUSTOM; i++) {
		cr_assert_eq(custom_ok(&c, i), 0);
		cr_assert_eq(rt_tag(c), RT_CUSTOM_TAG);
		cr_assert_eq(rt_custom_data(c), &finalized[i]);
		if (i % 3 != 0) /* every third dies young */
			rt_store_field(keep, i, c);
	}
	c = RT_UNIT;
	rt_minor_gc();
	for (int i = 0; i < N_CUSTOM; i++)
		cr_assert_eq(finalized[i], i % 3 == 0, "slot %d finalized %d times", i,
			     finalized[i]);
	/* Drop the i % 3 == 1 ones: they die in the major heap. */
	for (int i = 1; i < N_CUSTOM; i += 3)
		rt_store_field(keep, i, RT_UNIT);
	rt_major_gc();
	rt_major_gc();
	for (int i = 0; i < N_CUSTOM; i++) {
		cr_assert_eq(finalized[i], i % 3 != 2, "slot %d finalized %d times", i,
			     finalized[i]);
		if (i % 3 == 2)
			cr_assert_eq(rt_custom_data(rt_field(keep, i)), &finalized[i]);
	}
	RT_ROOTS_END();
	rt_shutdown(); /* the rest is finalized at shutdown */
	for (int i = 0; i < N_CUSTOM; i++)
		cr_assert_eq(finalized[i], 1, "slot %d finalized %d times", i, finalized[i]);
	setup(); /* for the fixture's teardown */
}

Test(rt_custom, null_finalizer)
{
	rt_value c = RT_UNIT;

	cr_assert_eq(rt_alloc_custom(NULL, 0, NULL, &c), 0);
	cr_assert_null(rt_custom_data(c));
	rt_major_gc();
}

/* A tree of ints, blocks of several tags and sizes, and raw (no-scan) data. */
static rt_value sample_value(int depth)
{
	rt_value node = RT_UNIT, child = RT_UNIT, raw = RT_UNIT;

	RT_ROOTS(3, &node, &child, &raw);
	cr_assert_eq(rt_alloc((size_t)depth + 1, (unsigned)depth, &node), 0);
	cr_assert_eq(rt_alloc(3, RT_NO_SCAN_TAG + 1, &raw), 0);
	for (size_t i = 0; i < 3; i++)
		rt_store_field(raw, i, (rt_value)(0x1000 * depth + 2 * i)); /* not values */
	rt_store_field(node, 0, raw);
	for (int i = 1; i <= depth; i++) {
		child = i % 2 ? sample_value(depth - 1) : RT_VAL_INT(-i * depth);
		rt_store_field(node, (size_t)i, child);
	}
	RT_ROOTS_END();
	return node;
}

static void assert_equal(rt_value a, rt_value b)
{
	cr_assert_eq(RT_IS_INT(a), RT_IS_INT(b));
	if (RT_IS_INT(a)) {
		cr_assert_eq(a, b);
		return;
	}
	cr_assert_neq(a, b, "a copy, not the same block");
	cr_assert_eq(rt_tag(a), rt_tag(b));
	cr_assert_eq(rt_wosize(a), rt_wosize(b));
	for (size_t i = 0; i < rt_wosize(a); i++) {
		if (rt_tag(a) >= RT_NO_SCAN_TAG)
			cr_assert_eq(rt_field(a, i), rt_field(b, i));
		else
			assert_equal(rt_field(a, i), rt_field(b, i));
	}
}

Test(rt_marshal, round_trip)
{
	rt_value v = RT_UNIT, copy = RT_UNIT;
	void *data;
	size_t len;
	rt_stats before, after;

	RT_ROOTS(2, &v, &copy);
	v = sample_value(6);
	cr_assert_eq(rt_marshal(v, &data, &len), 0);
	rt_get_stats(&before);
	cr_assert_eq(rt_unmarshal(data, len, &copy), 0);
	rt_get_stats(&after);
	cr_assert_not(rt_is_young(copy), "unmarshaled in the major heap");
	cr_assert_eq(after.minor_collections, before.minor_collections);
	cr_assert_gt(after.major_words, before.major_words);
	assert_equal(v, copy);
	rt_major_gc();
	assert_equal(v, copy);
	free(data);
	RT_ROOTS_END();
}

Test(rt_marshal, immediate_and_long_list)
{
	rt_value v = RT_UNIT, copy = RT_UNIT, cell = RT_UNIT;
	void *data;
	size_t len;
	intptr_t n = 0;

	cr_assert_eq(rt_marshal(RT_VAL_INT(-42), &data, &len), 0);
	cr_assert_eq(rt_unmarshal(data, len, &copy), 0);
	cr_assert_eq(copy, RT_VAL_INT(-42));
	free(data);
	RT_ROOTS(3, &v, &copy, &cell);
	for (intptr_t i = 0; i < 200000; i++) { /* deep: no recursion allowed */
		cr_assert_eq(rt_alloc(2, 0, &cell), 0);
		rt_store_field(cell, 0, RT_VAL_INT(i));
		rt_store_field(cell, 1, v);
		v = cell;
	}
	cr_assert_eq(rt_marshal(v, &data, &len), 0);
	cr_assert_eq(rt_unmarshal(data, len, &copy), 0);
	free(data);
	for (rt_value l = copy; l != RT_UNIT; l = rt_field(l, 1), n++)
		cr_assert_eq(RT_INT_VAL(rt_field(l, 0)), 199999 - n);
	cr_assert_eq(n, 200000);
	RT_ROOTS_END();
}

Test(rt_marshal, bad_input)
{
	rt_value v = RT_UNIT, copy = RT_UNIT, c = RT_UNIT;
	unsigned char *data, *bad;
	size_t len;

	RT_ROOTS(3, &v, &copy, &c);
	v = sample_value(3);
	cr_assert_eq(rt_marshal(v, (void **)&data, &len), 0);
	bad = malloc(len + 1);
	memcpy(bad, data, len);
	for (size_t cut = 0; cut < len; cut++)
		cr_assert_eq(rt_unmarshal(bad, cut, &copy), EINVAL, "truncated at %zu", cut);
	bad[len] = 'I';
	cr_assert_eq(rt_unmarshal(bad, len + 1, &copy), EINVAL, "trailing bytes");
	bad[0] = 'X';
	cr_assert_eq(rt_unmarshal(bad, len, &copy), EINVAL, "bad magic");
	memcpy(bad, data, len);
	bad[5] = RT_CUSTOM_TAG; /* root block's tag */
	cr_assert_eq(rt_unmarshal(bad, len, &copy), EINVAL, "custom tag");
	memcpy(bad, data, len);
	memset(bad + 6, 0xff, 8); /* root block's wosize */
	cr_assert_eq(rt_unmarshal(bad, len, &copy), EINVAL, "huge wosize");
	cr_assert_eq(copy, RT_UNIT);
	cr_assert_eq(rt_unmarshal(NULL, 0, &copy), EINVAL);
	cr_assert_eq(rt_alloc_custom(NULL, 0, NULL, &c), 0);
	cr_assert_eq(rt_marshal(c, (void **)&data, &len), EINVAL, "custom blocks");
	free(bad);
	free(data);
	RT_ROOTS_END();
}

Test(rt_custom, out_of_heap_memory_hastens_major_gc)
{
	rt_value keep = RT_UNIT, c = RT_UNIT, junk = RT_UNIT;
	size_t done = 0;
	rt_stats st;

	RT_ROOTS(3, &keep, &c, &junk);
	cr_assert_eq(rt_alloc_major(1, 0, &keep), 0);
	for (int i = 0; i < 2000; i++) {
		/* 64 KiB each; kept until the next block, so each is promoted. */
		cr_assert_eq(rt_alloc_custom(&finalized[i], 64 * 1024, finalize_slot, &c), 0);
		rt_store_field(keep, 0, c);
		for (int j = 0; j < 1000; j++) /* 5000 words: about one minor GC */
			cr_assert_eq(rt_alloc(4, 0, &junk), 0);
	}
	rt_get_stats(&st);
	cr_assert_lt(st.major_heap_words, (size_t)1 << 20, "the heap alone would not trigger");
	cr_assert_geq(st.major_collections, 1, "16 Mi words of out-of-heap memory promoted");
	for (int i = 0; i < 2000; i++)
		done += (size_t)finalized[i];
	cr_assert_gt(done, 0);
	RT_ROOTS_END();
}
