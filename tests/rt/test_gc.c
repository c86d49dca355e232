/*
 * rt GC correctness with sampling off: lists and trees through minor and
 * major collections, the write barrier, combined and major allocation,
 * global roots, heap accounting and minor heap resizing.
 */
#include <errno.h>
#include <criterion/criterion.h>

#include "rt.h"

#define SMALL_MINOR_WORDS 8192

static void setup(void)
{
	rt_config c = {.minor_heap_words = SMALL_MINOR_WORDS};

	cr_assert_eq(rt_init(&c), 0);
}

static void teardown(void)
{
	rt_shutdown();
}

TestSuite(rt_gc, .init = setup, .fini = teardown);

/* A list of n cells (int i, tail), built from n-1 down to 0. */
static rt_value make_list(intptr_t n)
{
	rt_value list = RT_UNIT, cell = RT_UNIT;

	RT_ROOTS(2, &list, &cell);
	for (intptr_t i = n - 1; i >= 0; i--) {
		cr_assert_eq(rt_alloc(2, 0, &cell), 0);
		rt_store_field(cell, 0, RT_VAL_INT(i));
		rt_store_field(cell, 1, list);
		list = cell;
	}
	RT_ROOTS_END();
	return list;
}

static void check_list(rt_value list, intptr_t n)
{
	intptr_t i = 0;

	for (; list != RT_UNIT; list = rt_field(list, 1), i++) {
		cr_assert_eq(rt_wosize(list), 2);
		cr_assert_eq(RT_INT_VAL(rt_field(list, 0)), i);
	}
	cr_assert_eq(i, n);
}

Test(rt_gc, list_survives_minor_and_major)
{
	rt_value list = RT_UNIT;
	rt_stats st;

	RT_ROOTS(1, &list);
	list = make_list(100000);
	rt_get_stats(&st);
	cr_assert_gt(st.minor_collections, 10, "300k words in an 8k-word minor heap");
	cr_assert_geq(st.promoted_words, 3 * 100000 - SMALL_MINOR_WORDS);
	check_list(list, 100000);
	rt_minor_gc();
	cr_assert_not(rt_is_young(list));
	check_list(list, 100000);
	rt_major_gc();
	check_list(list, 100000);
	rt_get_stats(&st);
	cr_assert_eq(st.major_collections, 1);
	cr_assert_eq(st.major_heap_words, 3 * 100000);
	RT_ROOTS_END();
}

static rt_value make_tree(int depth, intptr_t *next)
{
	rt_value node = RT_UNIT, left = RT_UNIT, right = RT_UNIT;

	if (depth == 0)
		return RT_VAL_INT((*next)++);
	RT_ROOTS(3, &node, &left, &right);
	left = make_tree(depth - 1, next);
	right = make_tree(depth - 1, next);
	cr_assert_eq(rt_alloc(3, 1, &node), 0);
	rt_store_field(node, 0, left);
	rt_store_field(node, 1, right);
	rt_store_field(node, 2, RT_VAL_INT(depth));
	RT_ROOTS_END();
	return node;
}

static intptr_t tree_sum(rt_value t, int depth)
{
	if (depth == 0)
		return RT_INT_VAL(t);
	cr_assert_eq(rt_tag(t), 1);
	cr_assert_eq(RT_INT_VAL(rt_field(t, 2)), depth);
	return tree_sum(rt_field(t, 0), depth - 1) + tree_sum(rt_field(t, 1), depth - 1);
}

Test(rt_gc, tree_with_garbage_in_between)
{
	rt_value tree = RT_UNIT, junk = RT_UNIT;
	intptr_t next = 0, n = (intptr_t)1 << 14;

	RT_ROOTS(2, &tree, &junk);
	tree = make_tree(14, &next);
	for (int i = 0; i < 50000; i++)
		cr_assert_eq(rt_alloc(5, 0, &junk), 0);
	rt_major_gc();
	cr_assert_eq(tree_sum(tree, 14), n * (n - 1) / 2);
	RT_ROOTS_END();
}

Test(rt_gc, garbage_is_swept)
{
	rt_value keep = RT_UNIT;
	rt_stats st;

	rt_major_gc();
	RT_ROOTS(1, &keep);
	keep = make_list(1000);
	keep = make_list(20000); /* the first list is now garbage */
	rt_major_gc();
	rt_get_stats(&st);
	cr_assert_eq(st.major_heap_words, 3 * 20000);
	keep = RT_UNIT;
	rt_major_gc();
	rt_get_stats(&st);
	cr_assert_eq(st.major_heap_words, 0);
	RT_ROOTS_END();
}

Test(rt_gc, write_barrier_keeps_old_to_young)
{
	rt_value old = RT_UNIT, young = RT_UNIT;

	RT_ROOTS(2, &old, &young);
	cr_assert_eq(rt_alloc_major(4, 0, &old), 0);
	cr_assert_not(rt_is_young(old));
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(rt_alloc(2, 0, &young), 0);
		cr_assert(rt_is_young(young));
		rt_store_field(young, 0, RT_VAL_INT(100 + i));
		rt_store_field(old, i, young);
		rt_store_field(old, i, young); /* remembered once is enough */
	}
	young = RT_UNIT; /* only the old block points to them now */
	rt_minor_gc();
	for (int i = 0; i < 4; i++) {
		rt_value v = rt_field(old, i);

		cr_assert_not(rt_is_young(v));
		cr_assert_eq(RT_INT_VAL(rt_field(v, 0)), 100 + i);
	}
	/* Many more collections: the promoted blocks stay valid. */
	for (int i = 0; i < 100000; i++)
		cr_assert_eq(rt_alloc(3, 0, &young), 0);
	rt_major_gc();
	for (int i = 0; i < 4; i++)
		cr_assert_eq(RT_INT_VAL(rt_field(rt_field(old, i), 0)), 100 + i);
	RT_ROOTS_END();
}

Test(rt_gc, young_to_young_through_promoted_block)
{
	rt_value old = RT_UNIT, a = RT_UNIT, b = RT_UNIT;

	RT_ROOTS(3, &old, &a, &b);
	cr_assert_eq(rt_alloc_major(1, 0, &old), 0);
	cr_assert_eq(rt_alloc(1, 0, &a), 0);
	cr_assert_eq(rt_alloc(1, 0, &b), 0);
	rt_store_field(b, 0, RT_VAL_INT(7));
	rt_store_field(a, 0, b);
	rt_store_field(old, 0, a);
	a = b = RT_UNIT;
	rt_minor_gc();
	cr_assert_eq(RT_INT_VAL(rt_field(rt_field(rt_field(old, 0), 0), 0)), 7);
	RT_ROOTS_END();
}

Test(rt_gc, combined_allocation_layout)
{
	size_t sizes[3] = {2, 5, 1};
	rt_value out[3] = {RT_UNIT, RT_UNIT, RT_UNIT};

	RT_ROOTS(3, &out[0], &out[1], &out[2]);
	for (int round = 0; round < 5000; round++) {
		cr_assert_eq(rt_alloc_comb(3, sizes, 2, out), 0);
		for (int i = 0; i < 3; i++) {
			cr_assert(rt_is_young(out[i]));
			cr_assert_eq(rt_wosize(out[i]), sizes[i]);
			cr_assert_eq(rt_tag(out[i]), 2);
			cr_assert_eq(rt_field(out[i], 0), RT_UNIT);
		}
		/* Block i's header sits right after block i-1's last field. */
		cr_assert_eq(out[1], out[0] + 8 * (sizes[0] + 1));
		cr_assert_eq(out[2], out[1] + 8 * (sizes[1] + 1));
		rt_store_field(out[0], 1, out[1]);
		rt_store_field(out[1], 4, out[2]);
		rt_store_field(out[2], 0, RT_VAL_INT(round));
	}
	rt_minor_gc();
	cr_assert_eq(rt_field(out[0], 1), out[1]);
	cr_assert_eq(rt_field(out[1], 4), out[2]);
	cr_assert_eq(RT_INT_VAL(rt_field(out[2], 0)), 4999);
	RT_ROOTS_END();
}

Test(rt_gc, large_blocks_go_major)
{
	rt_value big = RT_UNIT;
	rt_stats st;

	RT_ROOTS(1, &big);
	cr_assert_eq(rt_alloc(RT_MAX_YOUNG_WOSIZE + 1, 0, &big), 0);
	cr_assert_not(rt_is_young(big));
	cr_assert_eq(rt_wosize(big), RT_MAX_YOUNG_WOSIZE + 1);
	cr_assert_eq(rt_field(big, RT_MAX_YOUNG_WOSIZE), RT_UNIT);
	rt_get_stats(&st);
	cr_assert_eq(st.major_words, RT_MAX_YOUNG_WOSIZE + 2);
	cr_assert_eq(rt_alloc(RT_MAX_YOUNG_WOSIZE, 0, &big), 0);
	cr_assert(rt_is_young(big));
	RT_ROOTS_END();
}

Test(rt_gc, bad_arguments)
{
	rt_value v = RT_UNIT;
	size_t sizes[2] = {1, 0};
	size_t too_big[1] = {RT_MAX_YOUNG_WOSIZE + 1};

	cr_assert_eq(rt_alloc(0, 0, &v), EINVAL);
	cr_assert_eq(rt_alloc(1, RT_CUSTOM_TAG, &v), EINVAL);
	cr_assert_eq(rt_alloc(1, 256, &v), EINVAL);
	cr_assert_eq(rt_alloc_major(0, 0, &v), EINVAL);
	cr_assert_eq(rt_alloc_comb(2, sizes, 0, &v), EINVAL);
	cr_assert_eq(rt_alloc_comb(1, too_big, 0, &v), EINVAL);
	cr_assert_eq(rt_alloc_comb(0, sizes, 0, &v), EINVAL);
	cr_assert_eq(rt_set_minor_heap_words(16), EINVAL);
	cr_assert_eq(v, RT_UNIT);
}

static rt_value global_a = RT_UNIT, global_b = RT_UNIT;

Test(rt_gc, global_roots)
{
	rt_stats st;

	rt_register_global(&global_a);
	rt_register_global(&global_b);
	global_a = make_list(500);
	global_b = make_list(700);
	rt_major_gc();
	check_list(global_a, 500);
	check_list(global_b, 700);
	rt_unregister_global(&global_b);
	rt_major_gc();
	rt_get_stats(&st);
	cr_assert_eq(st.major_heap_words, 3 * 500);
	check_list(global_a, 500);
	rt_unregister_global(&global_a);
}

Test(rt_gc, minor_heap_resizing)
{
	rt_value list = RT_UNIT;
	size_t sizes[] = {4096, 100000, 5000, 1 << 20};
	rt_stats before, after;
	intptr_t len = 3000;

	RT_ROOTS(1, &list);
	list = make_list(len);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		cr_assert_eq(rt_set_minor_heap_words(sizes[k]), 0);
		cr_assert_not(rt_is_young(list), "resizing empties the minor heap");
		check_list(list, len);
		rt_get_stats(&before);
		list = make_list(3000 + (intptr_t)k);
		rt_get_stats(&after);
		/* 3 words per cell: the number of minor GCs follows the new size. */
		cr_assert_leq(after.minor_collections - before.minor_collections,
			      3 * (3000 + k) / (sizes[k] - 2) + 1);
		len = 3000 + (intptr_t)k;
		check_list(list, len);
	}
	RT_ROOTS_END();
}
