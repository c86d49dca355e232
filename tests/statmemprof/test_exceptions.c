/*
 * exception_callback, exception_callback_minor, exception_comballoc: a
 * callback's nonzero return is its exception.  It reaches the allocation
 * that ran the callback (rt_alloc, rt_alloc_comb) or the safe point that ran
 * a postponed one (rt_alloc_major, rt_poll), and ends that block's tracking.
 * In a combined allocation, nothing is allocated and the blocks whose alloc
 * callback had run get a simulated dealloc_minor.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "harness.h"

#define ERR_ALLOC_MINOR 101
#define ERR_ALLOC_MAJOR 102
#define ERR_PROMOTE 103
#define ERR_DEALLOC_MINOR 104
#define ERR_DEALLOC_MAJOR 105
#define ERR_COMB 106
/* Bound on the polls needed to drain the postponed callbacks. */
#define MAX_POLLS 100

typedef struct raiser {
	int alloc_minor, alloc_major, promote, dealloc_minor, dealloc_major; /* errors */
	unsigned n_alloc, n_promote, n_dealloc_minor, n_dealloc_major;
} raiser;

static int raise_alloc_minor(void *arg, const memprof_allocation *info, memprof_value *out)
{
	raiser *r = arg;
	(void)info;
	r->n_alloc++;
	*out = RT_VAL_INT(1);
	return r->alloc_minor;
}

static int raise_alloc_major(void *arg, const memprof_allocation *info, memprof_value *out)
{
	raiser *r = arg;
	(void)info;
	r->n_alloc++;
	*out = RT_VAL_INT(2);
	return r->alloc_major;
}

static int raise_promote(void *arg, memprof_value data, memprof_value *out)
{
	raiser *r = arg;
	r->n_promote++;
	*out = data;
	return r->promote;
}

static int raise_dealloc_minor(void *arg, memprof_value data)
{
	raiser *r = arg;
	(void)data;
	r->n_dealloc_minor++;
	return r->dealloc_minor;
}

static int raise_dealloc_major(void *arg, memprof_value data)
{
	raiser *r = arg;
	(void)data;
	r->n_dealloc_major++;
	return r->dealloc_major;
}

static void start_raiser(raiser *r)
{
	memprof_tracker t = {.alloc_minor = raise_alloc_minor,
			     .alloc_major = raise_alloc_major,
			     .promote = raise_promote,
			     .dealloc_minor = raise_dealloc_minor,
			     .dealloc_major = raise_dealloc_major,
			     .arg = r};
	cr_assert_eq(memprof_start(1.0, HARNESS_CALLSTACK_SIZE, &t), 0);
}

/* Poll until no error comes back; returns how many errors came. */
static unsigned drain(int expected)
{
	unsigned errors = 0;
	for (int i = 0; i < MAX_POLLS; i++) {
		int err = rt_poll();
		if (err == 0)
			return errors;
		cr_assert_eq(err, expected, "rt_poll returned %d, expected %d", err, expected);
		errors++;
	}
	cr_assert_fail("rt_poll keeps returning errors");
	return errors;
}

TestSuite(exception_callback, .init = harness_setup, .fini = harness_teardown);

Test(exception_callback, alloc_minor_error_reaches_rt_alloc)
{
	raiser r = {.alloc_minor = ERR_ALLOC_MINOR};
	rt_stats before, after;
	rt_value v = RT_UNIT;
	start_raiser(&r);
	rt_get_stats(&before);
	cr_assert_eq(rt_alloc(4, 0, &v), ERR_ALLOC_MINOR);
	rt_get_stats(&after);
	cr_assert_eq(after.minor_words, before.minor_words, "the block was not allocated");
	cr_assert_eq(r.n_alloc, 1);
	/* The block's tracking ended: nothing more for it. */
	rt_minor_gc();
	rt_major_gc();
	cr_assert_eq(drain(0), 0);
	cr_assert_eq(r.n_promote + r.n_dealloc_minor + r.n_dealloc_major, 0);
	/* The runtime keeps working. */
	r.alloc_minor = 0;
	cr_assert_eq(rt_alloc(4, 0, &v), 0);
	cr_assert_eq(rt_wosize(v), 4);
	cr_assert_eq(r.n_alloc, 2);
}

static void check_major_error(int direct)
{
	raiser r = {.alloc_major = ERR_ALLOC_MAJOR};
	rt_value v = RT_UNIT;
	RT_ROOTS(1, &v);
	start_raiser(&r);
	int err = direct ? rt_alloc_major(8, 0, &v) : rt_alloc(1000, 0, &v);
	if (err == 0)
		err = rt_poll();
	cr_assert_eq(err, ERR_ALLOC_MAJOR,
		     "the alloc_major error reached neither the allocation "
		     "nor the next safe point (got %d)",
		     err);
	cr_assert_eq(r.n_alloc, 1);
	cr_assert_eq(rt_poll(), 0, "the error is reported once");
	v = RT_UNIT;
	rt_major_gc();
	cr_assert_eq(drain(0), 0);
	cr_assert_eq(r.n_dealloc_major, 0, "tracking ended with the error");
	RT_ROOTS_END();
}

Test(exception_callback, alloc_major_error_direct)
{
	check_major_error(1);
}

Test(exception_callback, alloc_major_error_large_block)
{
	check_major_error(0);
}

TestSuite(exception_callback_minor, .init = harness_setup, .fini = harness_teardown);

/*
 * OCaml's exception_callback_minor: `ref (ref 42)` is one combined
 * allocation of two blocks, and an alloc_minor raises.  The error reaches
 * the allocation, nothing is allocated, the blocks after the failing one
 * get no callback, and a block whose callback had succeeded gets a
 * simulated dealloc_minor (it never existed).
 */
typedef struct comb2 {
	unsigned fail_at; /* the alloc_minor call (1-based) that fails */
	unsigned n_alloc, n_promote, n_dealloc_minor, n_dealloc_major;
	memprof_value dealloc_data;
} comb2;

static int comb2_alloc(void *arg, const memprof_allocation *info, memprof_value *out)
{
	comb2 *c = arg;
	(void)info;
	*out = RT_VAL_INT(100 + c->n_alloc);
	return ++c->n_alloc == c->fail_at ? ERR_COMB : 0;
}

static int comb2_promote(void *arg, memprof_value data, memprof_value *out)
{
	comb2 *c = arg;
	c->n_promote++;
	*out = data;
	return 0;
}

static int comb2_dealloc_minor(void *arg, memprof_value data)
{
	comb2 *c = arg;
	c->n_dealloc_minor++;
	c->dealloc_data = data;
	return 0;
}

static int comb2_dealloc_major(void *arg, memprof_value data)
{
	comb2 *c = arg;
	(void)data;
	c->n_dealloc_major++;
	return 0;
}

static void check_comb2_error(unsigned fail_at)
{
	comb2 c = {.fail_at = fail_at};
	memprof_tracker t = {.alloc_minor = comb2_alloc,
			     .alloc_major = comb2_alloc,
			     .promote = comb2_promote,
			     .dealloc_minor = comb2_dealloc_minor,
			     .dealloc_major = comb2_dealloc_major,
			     .arg = &c};
	static const size_t sizes[2] = {1, 1}; /* ref (ref 42) */
	rt_value out[2] = {RT_UNIT, RT_UNIT};
	rt_stats before, after;

	cr_assert_eq(memprof_start(1.0, HARNESS_CALLSTACK_SIZE, &t), 0);
	rt_get_stats(&before);
	cr_assert_eq(rt_alloc_comb(2, sizes, 0, out), ERR_COMB, "the error reaches the allocation");
	rt_get_stats(&after);
	harness_check("failed combined allocation");
	cr_assert_eq(after.minor_words, before.minor_words, "nothing was allocated");
	cr_assert_eq(c.n_alloc, fail_at, "%u alloc_minor calls: none after the failing one",
		     c.n_alloc);
	cr_assert_eq(c.n_dealloc_minor, fail_at - 1,
		     "blocks whose callback succeeded get a simulated dealloc_minor");
	if (fail_at == 2)
		cr_assert_eq(c.dealloc_data, RT_VAL_INT(100), "with the data their alloc returned");
	cr_assert_eq(memprof_stop(), 0);
	rt_minor_gc();
	rt_major_gc();
	cr_assert_eq(drain(0), 0);
	harness_check("collections");
	cr_assert_eq(c.n_promote + c.n_dealloc_major, 0, "callbacks for blocks never allocated");
	cr_assert_eq(c.n_dealloc_minor, fail_at - 1);
	memprof_stats st;
	memprof_get_stats(&st);
	cr_assert_eq(st.tracked, 0, "%llu entries left", (unsigned long long)st.tracked);
}

Test(exception_callback_minor, comb_first_alloc_raises)
{
	check_comb2_error(1);
}

Test(exception_callback_minor, comb_second_alloc_raises)
{
	check_comb2_error(2);
}

Test(exception_callback_minor, promote_error_at_safe_point)
{
	raiser r = {.promote = ERR_PROMOTE};
	rt_value v = RT_UNIT;
	RT_ROOTS(1, &v);
	start_raiser(&r);
	cr_assert_eq(rt_alloc(3, 0, &v), 0);
	rt_minor_gc();
	cr_assert_eq(drain(ERR_PROMOTE), 1);
	cr_assert_eq(r.n_promote, 1);
	v = RT_UNIT;
	rt_major_gc();
	cr_assert_eq(drain(0), 0);
	cr_assert_eq(r.n_dealloc_major, 0, "tracking ended with the promote error");
	RT_ROOTS_END();
}

Test(exception_callback_minor, dealloc_minor_error_at_safe_point)
{
	raiser r = {.dealloc_minor = ERR_DEALLOC_MINOR};
	rt_value v;
	start_raiser(&r);
	cr_assert_eq(rt_alloc(3, 0, &v), 0);
	rt_minor_gc();
	cr_assert_eq(drain(ERR_DEALLOC_MINOR), 1);
	cr_assert_eq(r.n_dealloc_minor, 1);
}

Test(exception_callback_minor, dealloc_major_error_at_safe_point)
{
	raiser r = {.dealloc_major = ERR_DEALLOC_MAJOR};
	rt_value v;
	start_raiser(&r);
	cr_assert_eq(rt_alloc_major(3, 0, &v), 0);
	cr_assert_eq(drain(0), 0);
	rt_major_gc();
	cr_assert_eq(drain(ERR_DEALLOC_MAJOR), 1);
	cr_assert_eq(r.n_dealloc_major, 1);
}

Test(exception_callback_minor, many_errors_all_callbacks_run)
{
	enum { N = 50 };
	raiser r = {.promote = ERR_PROMOTE};
	rt_value keep = RT_UNIT;
	RT_ROOTS(1, &keep);
	cr_assert_eq(rt_alloc(N, 0, &keep), 0);
	start_raiser(&r);
	for (int i = 0; i < N; i++) {
		rt_value v;
		cr_assert_eq(rt_alloc(1, 0, &v), 0);
		rt_store_field(keep, i, v);
	}
	rt_minor_gc();
	unsigned errors = drain(ERR_PROMOTE);
	cr_assert_geq(errors, 1);
	cr_assert_eq(r.n_promote, N, "every pending promote ran");
	RT_ROOTS_END();
}

/* ---- exception_comballoc ---- */

#define COMB_N 7
#define PROFILES 10
#define MAX_EVENTS 128

static const size_t comb_wosizes[COMB_N] = {5, 4, 3, 5, 4, 3, 2};
/* Words of each allocation in order: the 7 combined blocks, then a cons. */
static const size_t alloc_words[COMB_N + 1] = {6, 5, 4, 6, 5, 4, 3, 3};

typedef struct comb_raiser {
	int profile;
	int n_alloc;
	/* (profile, allocation, words) triples, packed */
	intptr_t allocs[MAX_EVENTS], deallocs[MAX_EVENTS], excs[MAX_EVENTS];
	size_t n_allocs, n_deallocs, n_excs;
	unsigned bad;
} comb_raiser;

#define TRIPLE(p, a, sz) (((intptr_t)(p) << 24) | ((intptr_t)(a) << 12) | (intptr_t)(sz))
#define TRIPLE_SIZE(t) ((size_t)((t)&0xfff))
#define TRIPLE_ALLOC(t) ((int)(((t) >> 12) & 0xfff))

static void push(intptr_t *set, size_t *n, intptr_t t)
{
	if (*n < MAX_EVENTS)
		set[(*n)++] = t;
}

static int comb_alloc_minor(void *arg, const memprof_allocation *info, memprof_value *out)
{
	comb_raiser *c = arg;
	int a = ++c->n_alloc;
	intptr_t t = TRIPLE(c->profile, a, info->size + 1);
	push(c->allocs, &c->n_allocs, t);
	*out = MEMPROF_NONE;
	if (a >= c->profile) {
		push(c->excs, &c->n_excs, t);
		return ERR_COMB;
	}
	*out = RT_VAL_INT(t);
	return 0;
}

static int comb_alloc_major(void *arg, const memprof_allocation *info, memprof_value *out)
{
	comb_raiser *c = arg;
	(void)info;
	c->bad++;
	*out = MEMPROF_NONE;
	return 0;
}

static int comb_promote(void *arg, memprof_value data, memprof_value *out)
{
	(void)arg;
	*out = data;
	return 0;
}

static int comb_dealloc(void *arg, memprof_value data)
{
	comb_raiser *c = arg;
	push(c->deallocs, &c->n_deallocs, RT_INT_VAL(data));
	return 0;
}

static int contains(const intptr_t *set, size_t n, intptr_t t)
{
	for (size_t i = 0; i < n; i++)
		if (set[i] == t)
			return 1;
	return 0;
}

Test(exception_callback, exception_comballoc)
{
	static comb_raiser c;
	memset(&c, 0, sizeof(c));
	memprof_tracker t = {.alloc_minor = comb_alloc_minor,
			     .alloc_major = comb_alloc_major,
			     .promote = comb_promote,
			     .dealloc_minor = comb_dealloc,
			     .dealloc_major = comb_dealloc,
			     .arg = &c};
	rt_value arr = RT_UNIT, cons = RT_UNIT, first = RT_UNIT;
	rt_value blocks[COMB_N];
	int n_exc = 0;
	RT_ROOTS(3, &arr, &cons, &first);

	for (int p = 1; p <= PROFILES; p++) {
		c.profile = p;
		c.n_alloc = 0;
		cr_assert_eq(memprof_start(1.0, 0, &t), 0);
		rt_stats before, after;
		rt_get_stats(&before);
		int err = rt_alloc_comb(COMB_N, comb_wosizes, 0, blocks);
		rt_get_stats(&after);
		if (err) {
			cr_assert_eq(err, ERR_COMB);
			cr_assert_eq(after.minor_words, before.minor_words,
				     "profile %d: a failed combined allocation allocated", p);
			n_exc++;
		} else {
			/* The combined blocks live through their first one. */
			first = blocks[0];
			err = rt_alloc(2, 0, &cons);
			if (err) {
				cr_assert_eq(err, ERR_COMB);
				n_exc++;
			} else {
				rt_store_field(cons, 0, first);
				rt_store_field(cons, 1, arr);
				arr = cons;
			}
		}
		cr_assert_eq(memprof_stop(), 0);
		rt_minor_gc();
		harness_settle();
	}
	arr = cons = first = RT_UNIT;
	rt_major_gc();
	harness_settle();
	RT_ROOTS_END();

	cr_assert_eq(c.bad, 0);
	cr_assert_eq((size_t)n_exc, c.n_excs);
	cr_assert_eq(n_exc, 8, "profiles 1..8 raise");
	/* Every alloc callback either raised or got its dealloc, not both. */
	for (size_t i = 0; i < c.n_deallocs; i++) {
		cr_assert(contains(c.allocs, c.n_allocs, c.deallocs[i]));
		cr_assert(!contains(c.excs, c.n_excs, c.deallocs[i]));
	}
	for (size_t i = 0; i < c.n_allocs; i++)
		cr_assert(contains(c.deallocs, c.n_deallocs, c.allocs[i]) ||
			  contains(c.excs, c.n_excs, c.allocs[i]));
	cr_assert_eq(c.n_deallocs, 0 + 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 8);
	cr_assert_eq(c.n_allocs, c.n_deallocs + c.n_excs);
	/* Callbacks run in block order: the a-th has the a-th size. */
	for (size_t i = 0; i < c.n_allocs; i++) {
		int a = TRIPLE_ALLOC(c.allocs[i]);
		cr_assert_eq(TRIPLE_SIZE(c.allocs[i]), alloc_words[a - 1],
			     "allocation %d of a profile has %zu words", a,
			     TRIPLE_SIZE(c.allocs[i]));
	}
}
