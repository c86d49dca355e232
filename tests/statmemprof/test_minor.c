/*
 * minor_no_postpone: the alloc_minor callbacks of the mutator's minor
 * allocations run synchronously, inside rt_alloc, before the block exists.
 * minor_heap_edge: a minor heap as small as rt accepts, combined
 * allocations at rate 1 and callbacks that allocate (collecting inside the
 * callback): no crash, consistent counts, intact data.
 */
#include <criterion/criterion.h>

#include "harness.h"

TestSuite(minor_no_postpone, .init = harness_setup, .fini = harness_teardown);

typedef struct sync_check {
	int armed;
	unsigned done;
	unsigned early;	   /* callbacks while not armed */
	unsigned too_late; /* callbacks that ran after the block existed */
	uint64_t minor_words_before;
} sync_check;

static int sync_alloc_minor(void *arg, const memprof_allocation *info, memprof_value *out)
{
	sync_check *c = arg;
	rt_stats st;
	(void)info;
	*out = MEMPROF_NONE;
	if (!c->armed) {
		c->early++;
		return 0;
	}
	rt_get_stats(&st);
	if (st.minor_words != c->minor_words_before)
		c->too_late++;
	c->done++;
	return 0;
}

static void arm(sync_check *c)
{
	rt_stats st;
	rt_get_stats(&st);
	c->minor_words_before = st.minor_words;
	c->armed = 1;
}

Test(minor_no_postpone, alloc_runs_callback_inside)
{
	sync_check c = {0};
	memprof_tracker t = {.alloc_minor = sync_alloc_minor, .arg = &c};
	cr_assert_eq(memprof_start(1.0, 0, &t), 0);
	for (size_t size = 1; size <= RT_MAX_YOUNG_WOSIZE; size *= 2) {
		rt_value v;
		arm(&c);
		unsigned before = c.done;
		cr_assert_eq(rt_alloc(size, 0, &v), 0);
		c.armed = 0;
		cr_assert_eq(c.done, before + 1,
			     "size %zu: alloc_minor did not run inside rt_alloc", size);
		cr_assert_eq(rt_poll(), 0);
		cr_assert_eq(c.done, before + 1, "nothing was left for the safe point");
	}
	cr_assert_eq(c.early, 0, "a callback ran outside the allocation");
	cr_assert_eq(c.too_late, 0, "a callback ran after its block was allocated");
	cr_assert_eq(memprof_stop(), 0);
}

Test(minor_no_postpone, comb_runs_callbacks_inside)
{
	static const size_t sizes[] = {3, 1, 4, 1, 5};
	sync_check c = {0};
	memprof_tracker t = {.alloc_minor = sync_alloc_minor, .arg = &c};
	rt_value out[5];
	cr_assert_eq(memprof_start(1.0, 0, &t), 0);
	arm(&c);
	cr_assert_eq(rt_alloc_comb(5, sizes, 0, out), 0);
	c.armed = 0;
	cr_assert_eq(c.done, 5);
	cr_assert_eq(c.too_late, 0, "a callback ran after the combined blocks were allocated");
	cr_assert_eq(rt_poll(), 0);
	cr_assert_eq(c.early, 0);
	cr_assert_eq(memprof_stop(), 0);
}

/* ---- minor_heap_edge ---- */

#define EDGE_ITERS 10000
#define EDGE_ARRAY 50
#define EDGE_MAX_NOISE 500

static const size_t edge_heap_sizes[] = {64, 256, 1024, 4096, 16384};

typedef struct edge {
	unsigned n_allocated, n_promoted, n_deallocated;
	uint32_t rng;
} edge;

static int edge_alloc_minor(void *arg, const memprof_allocation *info, memprof_value *out)
{
	edge *e = arg;
	(void)info;
	e->n_allocated++;
	e->rng = e->rng * 1664525u + 1013904223u;
	unsigned noise = (e->rng >> 8) % EDGE_MAX_NOISE;
	for (unsigned i = 0; i < noise; i++) {
		rt_value v;
		if (rt_alloc(1, 0, &v) != 0)
			break;
	}
	*out = RT_VAL_INT(1);
	return 0;
}

static int edge_promote(void *arg, memprof_value data, memprof_value *out)
{
	edge *e = arg;
	(void)data;
	e->n_promoted++;
	*out = MEMPROF_NONE;
	return 0;
}

static int edge_dealloc_minor(void *arg, memprof_value data)
{
	edge *e = arg;
	(void)data;
	e->n_deallocated++;
	return 0;
}

TestSuite(minor_heap_edge, .init = harness_setup, .fini = harness_teardown);

Test(minor_heap_edge, small_minor_heap_stress)
{
	size_t words = 0;
	for (size_t i = 0; i < sizeof(edge_heap_sizes) / sizeof(edge_heap_sizes[0]); i++) {
		if (rt_set_minor_heap_words(edge_heap_sizes[i]) == 0) {
			words = edge_heap_sizes[i];
			break;
		}
	}
	cr_assert_gt(words, 0, "rt accepts none of the small minor heap sizes");

	edge e = {.rng = HARNESS_SEED};
	memprof_tracker t = {.alloc_minor = edge_alloc_minor,
			     .promote = edge_promote,
			     .dealloc_minor = edge_dealloc_minor,
			     .arg = &e};
	rt_value s = RT_UNIT;
	rt_value blocks[2];
	static const size_t sizes[2] = {EDGE_ARRAY, 2};
	RT_ROOTS(1, &s);
	cr_assert_eq(memprof_start(1.0, 0, &t), 0);
	for (intptr_t r = 1; r <= EDGE_ITERS; r++) {
		/* A largeish combined allocation: an array and the cell that conses it. */
		cr_assert_eq(rt_alloc_comb(2, sizes, 0, blocks), 0);
		rt_store_field(blocks[0], EDGE_ARRAY - 1, RT_VAL_INT(r));
		rt_store_field(blocks[1], 0, blocks[0]);
		rt_store_field(blocks[1], 1, s);
		s = blocks[1];
	}
	rt_major_gc();
	cr_assert_eq(rt_poll(), 0);
	/* Every block is reachable: all were promoted, intact. */
	intptr_t r = EDGE_ITERS;
	for (rt_value c = s; !RT_IS_INT(c); c = rt_field(c, 1), r--)
		cr_assert_eq(rt_field(rt_field(c, 0), EDGE_ARRAY - 1), RT_VAL_INT(r));
	cr_assert_eq(r, 0);
	s = RT_UNIT;
	rt_major_gc();
	cr_assert_eq(rt_poll(), 0);
	cr_assert_eq(memprof_stop(), 0);
	RT_ROOTS_END();

	cr_assert_eq(e.n_allocated, 2 * EDGE_ITERS, "minor heap of %zu words", words);
	cr_assert_eq(e.n_promoted + e.n_deallocated, e.n_allocated);
	cr_assert_eq(e.n_promoted, e.n_allocated, "every block was reachable");
}
