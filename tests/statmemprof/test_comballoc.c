/*
 * comballoc: combined allocations (several young blocks in one bump).
 * Each block position gets its own samples, bounded at 5.7 sigma; each
 * entry is bound to the right block (the kept one is promoted, the others
 * die young); the alloc callbacks run in block order with distinct ids; one
 * call site gives one callstack; and no alloc callback runs
 * after a callback stopped the profile midway through a combined allocation.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

#define ITER 100000
#define NBLOCKS 3
#define MAX_SIZE 4
#define STOP_TRIGGERS 200
#define STOP_ALLOCS 1000

static const size_t comb_sizes[NBLOCKS] = {2, 3, 4};

static keeper roots;

static void setup(void)
{
	harness_setup();
	keeper_init(&roots, ITER);
}

static void teardown(void)
{
	keeper_free(&roots);
	harness_teardown();
}

/* (n, (n, n, (n, n, n, n))) in one combined allocation; returns the last. */
static rt_value __attribute__((noinline)) f(intptr_t n)
{
	rt_value out[NBLOCKS];
	int err = rt_alloc_comb(NBLOCKS, comb_sizes, 0, out);
	cr_assert_eq(err, 0, "rt_alloc_comb returned %d", err);
	for (size_t i = 0; i < NBLOCKS; i++) {
		cr_assert_eq(rt_wosize(out[i]), comb_sizes[i]);
		for (size_t j = 0; j < comb_sizes[i]; j++)
			rt_store_field(out[i], j, RT_VAL_INT(n));
	}
	rt_store_field(out[0], 1, out[1]);
	rt_store_field(out[1], 2, out[2]);
	return out[2];
}

typedef struct comb_stats {
	uint64_t allocs[MAX_SIZE + 1];
	uint64_t promotes[MAX_SIZE + 1];
	uint64_t deallocs[MAX_SIZE + 1];
	uintptr_t callstacks[MAX_SIZE + 1][HARNESS_CALLSTACK_SIZE];
	size_t callstack_len[MAX_SIZE + 1];
	int have_callstack[MAX_SIZE + 1];
	unsigned bad;
} comb_stats;

#define PACK(size, n) RT_VAL_INT(((intptr_t)(size) << 32) | (intptr_t)(n))
#define PACKED_SIZE(v) ((size_t)(RT_INT_VAL(v) >> 32))
#define PACKED_N(v) ((uint64_t)(RT_INT_VAL(v) & 0xffffffff))

static int comb_alloc_minor(void *arg, const memprof_allocation *info, memprof_value *out)
{
	comb_stats *s = arg;
	size_t sz = info->size;
	*out = MEMPROF_NONE;
	if (sz > MAX_SIZE || sz < 2) {
		s->bad++;
		return 0;
	}
	s->allocs[sz] += info->n_samples;
	if (!s->have_callstack[sz]) {
		s->have_callstack[sz] = 1;
		s->callstack_len[sz] = info->callstack_len;
		memcpy(s->callstacks[sz], info->callstack,
		       info->callstack_len * sizeof(info->callstack[0]));
	} else if (s->callstack_len[sz] != info->callstack_len ||
		   memcmp(s->callstacks[sz], info->callstack,
			  info->callstack_len * sizeof(info->callstack[0])) != 0) {
		s->bad++;
	}
	*out = PACK(sz, info->n_samples);
	return 0;
}

static int comb_alloc_major(void *arg, const memprof_allocation *info, memprof_value *out)
{
	comb_stats *s = arg;
	(void)info;
	s->bad++;
	*out = MEMPROF_NONE;
	return 0;
}

static int comb_promote(void *arg, memprof_value data, memprof_value *out)
{
	comb_stats *s = arg;
	s->promotes[PACKED_SIZE(data)] += PACKED_N(data);
	*out = MEMPROF_NONE;
	return 0;
}

static int comb_dealloc_minor(void *arg, memprof_value data)
{
	comb_stats *s = arg;
	s->deallocs[PACKED_SIZE(data)] += PACKED_N(data);
	return 0;
}

static void test_rate(double rate)
{
	static comb_stats s;
	memset(&s, 0, sizeof(s));
	memprof_tracker t = {.alloc_minor = comb_alloc_minor,
			     .alloc_major = comb_alloc_major,
			     .promote = comb_promote,
			     .dealloc_minor = comb_dealloc_minor,
			     .arg = &s};
	memprof_set_seed(HARNESS_SEED);
	cr_assert_eq(memprof_start(rate, HARNESS_CALLSTACK_SIZE, &t), 0);
	for (intptr_t i = 0; i < ITER; i++)
		keeper_push(&roots, f(i));
	rt_minor_gc();
	harness_settle();
	cr_assert_eq(memprof_stop(), 0);

	cr_assert_eq(s.bad, 0, "%u callbacks with a wrong size or a changed callstack", s.bad);
	for (size_t k = 0; k < NBLOCKS; k++) {
		size_t sz = comb_sizes[k];
		char what[64];
		cr_assert_eq(s.deallocs[sz] + s.promotes[sz], s.allocs[sz], "size %zu", sz);
		snprintf(what, sizeof(what), "comballoc block of size %zu at %g", sz, rate);
		harness_assert_binomial(what, s.allocs[sz], (double)(sz + 1) * ITER, rate);
		cr_assert(s.have_callstack[sz] && s.callstack_len[sz] > 0);
	}
	/* Only the last block is kept: it is promoted, the others die young. */
	cr_assert_eq(s.promotes[2] + s.promotes[3], 0);
	cr_assert_eq(s.promotes[4], s.allocs[4]);
	for (intptr_t i = 0; i < ITER; i += ITER / 100)
		cr_assert_eq(rt_field(rt_field(roots.array, i), 3), RT_VAL_INT(i));
	keeper_clear(&roots);
}

TestSuite(comballoc, .init = setup, .fini = teardown);

Test(comballoc, rate_0_42)
{
	test_rate(0.42);
}

Test(comballoc, rate_0_01)
{
	test_rate(0.01);
}

Test(comballoc, rate_0_83)
{
	test_rate(0.83);
}

/* ---- entries bound to the right blocks, callbacks in order ---- */

Test(comballoc, entries_bound_to_blocks)
{
	static const size_t sizes[] = {1, 2, 3, 4};
	lifecycle lc;
	lifecycle_init(&lc);
	memprof_tracker t = lifecycle_tracker(&lc);
	rt_value out[4];

	cr_assert_eq(memprof_start(1.0, HARNESS_CALLSTACK_SIZE, &t), 0);
	cr_assert_eq(rt_alloc_comb(4, sizes, 0, out), 0);
	cr_assert_eq(lc.n_alloc_minor, 4, "one alloc_minor per block, run inside rt_alloc_comb");
	keeper_push(&roots, out[2]);
	rt_minor_gc();
	harness_settle();
	lifecycle_assert_ok(&lc);
	for (size_t i = 0; i < lc.len; i++) {
		const block_record *r = &lc.recs[i];
		cr_assert_eq(r->size, sizes[i], "alloc callbacks run in block order");
		cr_assert_eq(r->n_samples, r->size + 1);
		cr_assert_eq(r->state, r->size == 3 ? BLOCK_PROMOTED : BLOCK_DEAD_MINOR,
			     "block of size %zu in state %d", r->size, r->state);
	}
	keeper_clear(&roots);
	rt_major_gc();
	harness_settle();
	cr_assert_eq(memprof_stop(), 0);
	lifecycle_assert_all_dead(&lc);
	lifecycle_free(&lc);
}

/* ---- no callback after stop ---- */

typedef struct stop_ctx {
	int stopped;
	int trigger;
	int cnt;
	unsigned after_stop;
} stop_ctx;

static int stop_alloc_minor(void *arg, const memprof_allocation *info, memprof_value *out)
{
	stop_ctx *c = arg;
	(void)info;
	*out = MEMPROF_NONE;
	if (c->stopped)
		c->after_stop++;
	if (++c->cnt > c->trigger) {
		if (memprof_stop() != 0)
			c->after_stop += 1000;
		c->stopped = 1;
	}
	return 0;
}

Test(comballoc, no_callback_after_stop)
{
	for (int trigger = 0; trigger < STOP_TRIGGERS; trigger++) {
		stop_ctx c = {.trigger = trigger};
		memprof_tracker t = {.alloc_minor = stop_alloc_minor, .arg = &c};
		cr_assert_eq(memprof_start(1.0, 0, &t), 0);
		for (int i = 0; i < STOP_ALLOCS; i++)
			f(i);
		cr_assert(c.stopped, "trigger %d: never stopped", trigger);
		cr_assert_eq(c.after_stop, 0, "trigger %d: %u alloc callbacks after stop", trigger,
			     c.after_stop);
		cr_assert_eq(c.cnt, trigger + 1);
		cr_assert_eq(memprof_discard(), 0);
	}
}
