/*
 * intern: rt_unmarshal rebuilds a value in one bulk allocation, in the
 * minor heap if it is small (up to RT_MAX_YOUNG_WOSIZE + 1 words), else in
 * the major heap.  Its blocks are sampled with source MEMPROF_SRC_MARSHAL
 * and their alloc_minor / alloc_major callbacks are postponed to the next
 * safe point; young ones are then promoted like any block.  Checks rate 0,
 * the lifecycle of every tracked block (npromote = nalloc_minor once all
 * are promoted), no nesting, and the sample distribution (5.7 sigma).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"

#define MAX_LEN 3000
#define COUNTS_RATE 0.01
/* no_nested: values of these lengths, and callbacks that unmarshal too. */
#define NESTED_LO 100
#define NESTED_HI 140
#define NESTED_INNER 5

static keeper roots;
static void *marshaled[MAX_LEN + 1];
static size_t marshaled_len[MAX_LEN + 1];

static void setup(void)
{
	harness_setup();
	keeper_init(&roots, 2 * MAX_LEN);
}

static void teardown(void)
{
	keeper_free(&roots);
	harness_teardown();
	for (size_t i = 0; i <= MAX_LEN; i++) {
		free(marshaled[i]);
		marshaled[i] = NULL;
	}
}

/*
 * A value of len words in all, headers included, made of blocks of one or
 * two fields: I 1 (len 2), II (2, 3) (len 3), Cons t (len + 2).
 */
static rt_value t_of_len(size_t len)
{
	rt_value t = RT_UNIT, cons = RT_UNIT;
	RT_ROOTS(2, &t, &cons);
	cr_assert_geq(len, 2);
	size_t inner = len % 2 == 0 ? 2 : 3;
	cr_assert_eq(rt_alloc(inner - 1, 0, &t), 0);
	rt_store_field(t, 0, RT_VAL_INT(inner - 1));
	if (inner == 3)
		rt_store_field(t, 1, RT_VAL_INT(3));
	for (size_t l = inner; l < len; l += 2) {
		cr_assert_eq(rt_alloc(1, 1, &cons), 0);
		rt_store_field(cons, 0, t);
		t = cons;
	}
	RT_ROOTS_END();
	return t;
}

static void precompute(size_t lo, size_t hi)
{
	for (size_t len = lo; len <= hi; len++) {
		if (marshaled[len])
			continue;
		rt_value t = t_of_len(len);
		int err = rt_marshal(t, &marshaled[len], &marshaled_len[len]);
		cr_assert_eq(err, 0, "rt_marshal returned %d", err);
	}
}

static rt_value __attribute__((noinline)) get_marshaled(size_t len)
{
	rt_value v;
	int err = rt_unmarshal(marshaled[len], marshaled_len[len], &v);
	cr_assert_eq(err, 0, "rt_unmarshal returned %d", err);
	return v;
}

static void do_intern(size_t lo, size_t hi, size_t cnt, int keep)
{
	for (size_t j = 0; j < cnt; j++) {
		for (size_t len = lo; len <= hi; len++) {
			rt_value v = get_marshaled(len);
			if (keep)
				keeper_push(&roots, v);
		}
		if (!keep)
			keeper_clear(&roots);
		harness_settle();
	}
}

static void full_major(void)
{
	rt_major_gc();
	harness_settle();
}

static int never_alloc(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)info;
	(*(int *)arg)++;
	*out = MEMPROF_NONE;
	return 0;
}

TestSuite(intern, .init = setup, .fini = teardown);

Test(intern, roundtrip)
{
	precompute(2, 9);
	for (size_t len = 2; len <= 9; len++) {
		rt_value v = get_marshaled(len);
		size_t words = 0;
		while (rt_tag(v) == 1) {
			words += 2;
			v = rt_field(v, 0);
		}
		words += rt_wosize(v) + 1;
		cr_assert_eq(words, len);
		cr_assert_eq(rt_field(v, 0), RT_VAL_INT(rt_wosize(v)));
		cr_assert(rt_is_young(v), "small values are unmarshaled into the minor heap");
	}
	precompute(RT_MAX_YOUNG_WOSIZE + 1, RT_MAX_YOUNG_WOSIZE + 2);
	cr_assert(rt_is_young(get_marshaled(RT_MAX_YOUNG_WOSIZE + 1)), "the largest young value");
	cr_assert(!rt_is_young(get_marshaled(RT_MAX_YOUNG_WOSIZE + 2)), "bigger ones are major");
}

Test(intern, nosample)
{
	int called = 0;
	memprof_tracker t = {
	    .alloc_minor = never_alloc, .alloc_major = never_alloc, .arg = &called};
	precompute(2, MAX_LEN);
	cr_assert_eq(memprof_start(0.0, HARNESS_CALLSTACK_SIZE, &t), 0);
	do_intern(2, MAX_LEN, 1, 0);
	cr_assert_eq(memprof_stop(), 0);
	cr_assert_eq(called, 0);
}

static int marshal_only(lifecycle *lc, const memprof_allocation *info, int major)
{
	int *enable = lc->ctx;
	if (info->source != MEMPROF_SRC_MARSHAL)
		lifecycle_fail(lc, "sample with source %d, major %d", info->source, major);
	return *enable;
}

static void check_counts_full_major(int force_promote)
{
	lifecycle lc;
	int enable = 1;
	lifecycle_init(&lc);
	lc.filter = marshal_only;
	lc.ctx = &enable;
	memprof_tracker t = lifecycle_tracker(&lc);

	precompute(2, MAX_LEN);
	cr_assert_eq(memprof_start(COUNTS_RATE, HARNESS_CALLSTACK_SIZE, &t), 0);
	do_intern(2, MAX_LEN, 1, 1);
	harness_check("intern");
	enable = 0;
	lifecycle_assert_ok(&lc);
	uint64_t nalloc_minor = lc.n_alloc_minor, nalloc_major = lc.n_alloc_major;
	cr_assert_gt(nalloc_minor, 0, "no small value unmarshaled into the minor heap was sampled");
	cr_assert_gt(nalloc_major, 0);
	cr_assert_eq(lc.n_dealloc_major + lc.n_dealloc_minor, 0);
	if (force_promote) {
		full_major();
		harness_check("full major");
		cr_assert_eq(lc.n_dealloc_major + lc.n_dealloc_minor, 0);
		cr_assert_eq(lc.n_promote, nalloc_minor, "%llu promotions for %llu minor samples",
			     (unsigned long long)lc.n_promote, (unsigned long long)nalloc_minor);
		keeper_clear(&roots);
		full_major();
		cr_assert_eq(lc.n_dealloc_minor, 0);
		cr_assert_eq(lc.n_dealloc_major, nalloc_minor + nalloc_major);
	} else {
		keeper_clear(&roots);
		rt_minor_gc();
		harness_settle();
		harness_check("minor GC");
		full_major();
		full_major();
		cr_assert_eq(nalloc_minor, lc.n_dealloc_minor + lc.n_promote);
		cr_assert_eq(lc.n_dealloc_major, lc.n_promote + nalloc_major);
	}
	harness_check("full major");
	cr_assert_eq(lc.n_alloc_minor + lc.n_alloc_major, nalloc_minor + nalloc_major,
		     "samples after the alloc callbacks were disabled");
	lifecycle_assert_all_dead(&lc);
	cr_assert_eq(memprof_stop(), 0);
	lifecycle_free(&lc);
}

Test(intern, counts_full_major)
{
	check_counts_full_major(0);
}

Test(intern, counts_full_major_force_promote)
{
	check_counts_full_major(1);
}

static int intern_in_callback(lifecycle *lc, const memprof_allocation *info, int major)
{
	(void)lc;
	(void)info;
	(void)major;
	for (size_t len = NESTED_LO; len <= NESTED_LO + NESTED_INNER; len++)
		get_marshaled(len);
	return 1;
}

Test(intern, no_nested)
{
	lifecycle lc;
	lifecycle_init(&lc);
	lc.filter = intern_in_callback;
	memprof_tracker t = lifecycle_tracker(&lc);
	precompute(NESTED_LO, NESTED_HI);
	cr_assert_eq(memprof_start(1.0, HARNESS_CALLSTACK_SIZE, &t), 0);
	do_intern(NESTED_LO, NESTED_HI, 1, 0);
	full_major();
	cr_assert_eq(memprof_stop(), 0);
	cr_assert_gt(lc.len, 0);
	lifecycle_assert_all_dead(&lc);
	lifecycle_free(&lc);
}

typedef struct distrib {
	uint64_t samples;
	unsigned bad;
} distrib;

static int distrib_alloc(void *arg, const memprof_allocation *info, memprof_value *out)
{
	distrib *d = arg;
	*out = MEMPROF_NONE;
	if (info->source != MEMPROF_SRC_MARSHAL || (info->size != 1 && info->size != 2) ||
	    info->n_samples == 0)
		d->bad++;
	d->samples += info->n_samples;
	return 0;
}

static void check_distrib(size_t lo, size_t hi, size_t cnt, double rate)
{
	distrib d = {0};
	memprof_tracker t = {.alloc_minor = distrib_alloc, .alloc_major = distrib_alloc, .arg = &d};
	precompute(lo, hi);
	memprof_set_seed(HARNESS_SEED);
	cr_assert_eq(memprof_start(rate, HARNESS_CALLSTACK_SIZE, &t), 0);
	do_intern(lo, hi, cnt, 0);
	cr_assert_eq(memprof_stop(), 0);
	cr_assert_eq(d.bad, 0, "%u samples with a wrong source or size", d.bad);
	char what[64];
	snprintf(what, sizeof(what), "intern %zu..%zu x%zu at %g", lo, hi, cnt, rate);
	harness_assert_binomial(what, d.samples, (double)cnt * (lo + hi) * (hi - lo + 1) / 2, rate);
}

Test(intern, distrib)
{
	check_distrib(2, MAX_LEN, 3, 0.00001);
	check_distrib(2, MAX_LEN, 1, 0.0001);
	check_distrib(2, 2000, 1, 0.01);
	check_distrib(2, 2000, 1, 0.9);
	check_distrib(MAX_LEN, MAX_LEN, 200, 0.1);
}

typedef struct postponed {
	uint64_t n;
	uint64_t major_words_after; /* the bulk allocation's words, counted */
	unsigned early;		    /* callbacks that ran before it completed */
} postponed;

static int count_alloc(void *arg, const memprof_allocation *info, memprof_value *out)
{
	postponed *p = arg;
	rt_stats st;
	(void)info;
	rt_get_stats(&st);
	if (st.major_words < p->major_words_after)
		p->early++;
	p->n++;
	*out = MEMPROF_NONE;
	return 0;
}

Test(intern, callbacks_postponed_to_safe_point)
{
	postponed p = {0};
	memprof_tracker t = {.alloc_minor = count_alloc, .alloc_major = count_alloc, .arg = &p};
	rt_stats st;
	precompute(1000, 1000);
	rt_get_stats(&st);
	/* The whole value: 1000 words, in one bulk allocation. */
	p.major_words_after = st.major_words + 1000;
	cr_assert_eq(memprof_start(1.0, HARNESS_CALLSTACK_SIZE, &t), 0);
	rt_value v = get_marshaled(1000);
	(void)v;
	cr_assert_eq(rt_poll(), 0);
	/* 499 Cons blocks and one I block, one callback each. */
	cr_assert_eq(p.n, 500);
	cr_assert_eq(p.early, 0, "%u alloc_major callbacks ran before the value was built",
		     p.early);
	cr_assert_eq(rt_poll(), 0);
	cr_assert_eq(p.n, 500, "each postponed callback runs once");
	cr_assert_eq(memprof_stop(), 0);
}
