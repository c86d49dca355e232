/*
 * Collections run inside callbacks (a callback may allocate, so it may
 * collect; OCaml's tests call Gc.minor and Gc.full_major from callbacks).
 * A tracked block may die during a collection that runs inside one of its
 * own callbacks: it must still get its dealloc callback, once, afterwards.
 */
#include <criterion/criterion.h>

#include "harness.h"

enum gc_kind { GC_NONE, GC_MINOR, GC_MAJOR };

typedef struct gcc {
	enum gc_kind in_alloc_major, in_promote;
	unsigned alloc_minor, alloc_major, promote, dealloc_minor, dealloc_major;
} gcc;

static void collect(enum gc_kind k)
{
	if (k == GC_MINOR)
		rt_minor_gc();
	else if (k == GC_MAJOR)
		rt_major_gc();
}

static int gcc_alloc_minor(void *arg, const memprof_allocation *info, memprof_value *out)
{
	gcc *g = arg;
	(void)info;
	g->alloc_minor++;
	*out = RT_VAL_INT(1);
	return 0;
}

static int gcc_alloc_major(void *arg, const memprof_allocation *info, memprof_value *out)
{
	gcc *g = arg;
	(void)info;
	g->alloc_major++;
	collect(g->in_alloc_major);
	*out = RT_VAL_INT(2);
	return 0;
}

static int gcc_promote(void *arg, memprof_value data, memprof_value *out)
{
	gcc *g = arg;
	g->promote++;
	collect(g->in_promote);
	*out = data;
	return 0;
}

static int gcc_dealloc_minor(void *arg, memprof_value data)
{
	gcc *g = arg;
	(void)data;
	g->dealloc_minor++;
	return 0;
}

static int gcc_dealloc_major(void *arg, memprof_value data)
{
	gcc *g = arg;
	(void)data;
	g->dealloc_major++;
	return 0;
}

static void start(gcc *g)
{
	memprof_tracker t = {.alloc_minor = gcc_alloc_minor,
			     .alloc_major = gcc_alloc_major,
			     .promote = gcc_promote,
			     .dealloc_minor = gcc_dealloc_minor,
			     .dealloc_major = gcc_dealloc_major,
			     .arg = g};
	cr_assert_eq(memprof_start(1.0, 0, &t), 0);
}

static void settle_all(void)
{
	for (int i = 0; i < 3; i++) {
		rt_minor_gc();
		rt_major_gc();
		cr_assert_eq(rt_poll(), 0);
	}
}

TestSuite(gc_in_callback, .init = harness_setup, .fini = harness_teardown);

/* The major block is dead when its postponed alloc_major callback runs. */
static void check_dies_in_alloc_major(enum gc_kind k)
{
	gcc g = {.in_alloc_major = k};
	rt_value v;
	start(&g);
	cr_assert_eq(rt_alloc_major(4, 0, &v), 0);
	cr_assert_eq(rt_poll(), 0);
	cr_assert_eq(g.alloc_major, 1);
	settle_all();
	cr_assert_eq(g.dealloc_major, 1, "the block died without dealloc_major");
	memprof_stats st;
	memprof_get_stats(&st);
	cr_assert_eq(st.tracked, 0);
}

Test(gc_in_callback, dies_in_alloc_major_minor_gc)
{
	check_dies_in_alloc_major(GC_MINOR);
}

Test(gc_in_callback, dies_in_alloc_major_major_gc)
{
	check_dies_in_alloc_major(GC_MAJOR);
}

/* The promoted block is dropped before its promote callback runs. */
static void check_dies_in_promote(enum gc_kind k)
{
	gcc g = {.in_promote = k};
	rt_value v = RT_UNIT;
	RT_ROOTS(1, &v);
	start(&g);
	cr_assert_eq(rt_alloc(2, 0, &v), 0);
	rt_minor_gc();
	v = RT_UNIT;
	cr_assert_eq(rt_poll(), 0);
	cr_assert_eq(g.promote, 1);
	settle_all();
	cr_assert_eq(g.dealloc_major, 1, "the promoted block died without dealloc_major");
	cr_assert_eq(g.dealloc_minor, 0);
	memprof_stats st;
	memprof_get_stats(&st);
	cr_assert_eq(st.tracked, 0);
	RT_ROOTS_END();
}

Test(gc_in_callback, dies_in_promote_minor_gc)
{
	check_dies_in_promote(GC_MINOR);
}

Test(gc_in_callback, dies_in_promote_major_gc)
{
	check_dies_in_promote(GC_MAJOR);
}

/* Many blocks, each dying young or old, collections inside every callback. */
Test(gc_in_callback, many_blocks_every_callback_collects)
{
	enum { N = 2000 };
	gcc g = {.in_alloc_major = GC_MAJOR, .in_promote = GC_MINOR};
	rt_value keep = RT_UNIT;
	RT_ROOTS(1, &keep);
	cr_assert_eq(rt_alloc_major(64, 0, &keep), 0);
	start(&g);
	for (int i = 0; i < N; i++) {
		rt_value v;
		if (i % 3 == 0)
			cr_assert_eq(rt_alloc_major(2, 0, &v), 0);
		else
			cr_assert_eq(rt_alloc(2, 0, &v), 0);
		if (i % 2 == 0)
			rt_store_field(keep, (size_t)i % 64, v);
		if (i % 7 == 0)
			rt_minor_gc();
		cr_assert_eq(rt_poll(), 0);
	}
	keep = RT_UNIT;
	settle_all();
	cr_assert_eq(g.alloc_minor + g.alloc_major, N + 0u);
	cr_assert_eq(g.dealloc_minor + g.dealloc_major, N + 0u, "%u blocks never got a dealloc",
		     N - g.dealloc_minor - g.dealloc_major);
	RT_ROOTS_END();
}
