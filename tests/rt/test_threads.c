/*
 * rt threads under one runtime lock: several threads allocate, collect,
 * yield and block at once; their roots survive each other's collections;
 * rt_thread_exit from a nested call hands its value to the joiner.
 */
#include <errno.h>
#include <unistd.h>
#include <criterion/criterion.h>

#include "rt.h"

#define N_THREADS 4
#define CELLS 20000

static void setup(void)
{
	rt_config c = {.minor_heap_words = 8192};

	cr_assert_eq(rt_init(&c), 0);
}

static void teardown(void)
{
	rt_shutdown();
}

TestSuite(rt_threads, .init = setup, .fini = teardown);

static rt_value shared = RT_UNIT; /* a global root every thread writes to */

/* Builds a list tagged with its thread number, yielding and blocking. */
static void *worker(void *arg)
{
	intptr_t id = (intptr_t)arg;
	rt_value list = RT_UNIT, cell = RT_UNIT;
	intptr_t n = 0;

	RT_ROOTS(2, &list, &cell);
	for (intptr_t i = 0; i < CELLS; i++) {
		if (rt_alloc(2, (unsigned)id, &cell))
			return (void *)-1;
		rt_store_field(cell, 0, RT_VAL_INT(i));
		rt_store_field(cell, 1, list);
		list = cell;
		if (i % 1000 == 0)
			rt_yield();
		if (i % 5000 == 0) {
			rt_enter_blocking_section();
			usleep(100);
			rt_leave_blocking_section();
			rt_store_field(shared, (size_t)id, list);
		}
		if (i % 7000 == 0)
			rt_major_gc();
	}
	for (rt_value l = list; l != RT_UNIT; l = rt_field(l, 1), n++)
		if (rt_tag(l) != (unsigned)id || RT_INT_VAL(rt_field(l, 0)) != CELLS - 1 - n)
			return (void *)-2;
	RT_ROOTS_END();
	return (void *)n;
}

Test(rt_threads, workers_with_blocking_sections)
{
	rt_thread *t[N_THREADS];
	void *ret;
	rt_stats st;

	rt_register_global(&shared);
	cr_assert_eq(rt_alloc_major(N_THREADS, 0, &shared), 0);
	for (intptr_t i = 0; i < N_THREADS; i++)
		cr_assert_eq(rt_thread_create(&t[i], worker, (void *)i), 0);
	for (int i = 0; i < N_THREADS; i++) {
		cr_assert_eq(rt_thread_join(t[i], &ret), 0);
		cr_assert_eq((intptr_t)ret, CELLS, "thread %d returned %ld", i,
			     (long)(intptr_t)ret);
	}
	rt_major_gc();
	for (size_t i = 0; i < N_THREADS; i++)
		cr_assert_eq(rt_tag(rt_field(shared, i)), i, "last list published by thread %zu",
			     i);
	rt_get_stats(&st);
	cr_assert_gt(st.minor_collections, N_THREADS * 2 * CELLS * 3 / 8192 / 2);
	rt_unregister_global(&shared);
}

static void exit_deep(int depth)
{
	rt_value v = RT_UNIT;

	RT_ROOTS(1, &v);
	if (rt_alloc(1, 0, &v))
		return;
	if (depth == 0)
		rt_thread_exit((void *)(intptr_t)1234);
	exit_deep(depth - 1);
	RT_ROOTS_END();
}

static void *exiter(void *arg)
{
	(void)arg;
	exit_deep(10);
	return NULL;
}

Test(rt_threads, exit_from_nested_call_releases_lock_and_roots)
{
	rt_thread *t;
	void *ret = NULL;
	rt_value v = RT_UNIT;

	cr_assert_eq(rt_thread_create(&t, exiter, NULL), 0);
	cr_assert_eq(rt_thread_join(t, &ret), 0);
	cr_assert_eq((intptr_t)ret, 1234);
	/* The exited thread's roots are gone: collections still work. */
	RT_ROOTS(1, &v);
	for (int i = 0; i < 50000; i++)
		cr_assert_eq(rt_alloc(3, 0, &v), 0);
	rt_major_gc();
	RT_ROOTS_END();
}

static int spins;

static void *spinner(void *arg)
{
	(void)arg;
	for (int i = 0; i < 100; i++) {
		spins++;
		rt_yield();
	}
	return NULL;
}

Test(rt_threads, yield_lets_others_run)
{
	rt_thread *t;
	int seen;

	cr_assert_eq(rt_thread_create(&t, spinner, NULL), 0);
	/* The spinner cannot run until we give up the lock. */
	usleep(10000);
	cr_assert_eq(spins, 0);
	for (int i = 0; i < 1000 && spins == 0; i++) {
		rt_yield();
		if (spins == 0) {
			rt_enter_blocking_section();
			usleep(1000);
			rt_leave_blocking_section();
		}
	}
	seen = spins;
	cr_assert_gt(seen, 0);
	cr_assert_eq(rt_thread_join(t, NULL), 0);
	cr_assert_eq(spins, 100);
}
