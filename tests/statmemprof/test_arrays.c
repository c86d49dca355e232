/*
 * arrays_in_minor, arrays_in_major: arrays of every size in a range, in the
 * minor heap (1..250 fields) or directly in the major heap (>= 300 fields).
 * Checks the sample distribution against a 5.7-sigma binomial bound, that
 * rate 0 samples nothing, that every tracked block gets promote and dealloc
 * exactly once and in order, and that callbacks never nest.
 */
#include <criterion/criterion.h>
#include <stdio.h>

#include "harness.h"

#define MINOR_LO 1
#define MINOR_HI 250
#define MAJOR_LO 300
#define MAJOR_HI 3000
#define COUNTS_RATE 0.01
/* A minor GC every this many tracked allocations, and promotions. */
#define GC_EVERY_ALLOC 100
#define GC_EVERY_PROMOTE 1097

static keeper roots;

static void setup(void)
{
	harness_setup();
	keeper_init(&roots, 40000);
}

static void teardown(void)
{
	keeper_free(&roots);
	harness_teardown();
}

/* Allocate cnt times one array of each size in [lo, hi].  Exported: the
 * callstack checks look its address range up. */
__attribute__((noinline)) void allocate_arrays(size_t lo, size_t hi, size_t cnt, int keep)
{
	for (size_t j = 0; j < cnt; j++) {
		for (size_t i = lo; i <= hi; i++) {
			rt_value v;
			int err = rt_alloc(i, 0, &v);
			cr_assert_eq(err, 0, "rt_alloc(%zu) returned %d", i, err);
			if (keep)
				keeper_push(&roots, v);
		}
		if (!keep)
			keeper_clear(&roots);
		harness_settle();
	}
}

static uint64_t tot_words(size_t lo, size_t hi, size_t cnt)
{
	return (uint64_t)cnt * (lo + hi + 2) * (hi - lo + 1) / 2;
}

/* ---- rate 0 ---- */

static int never_alloc(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)info;
	(*(int *)arg)++;
	*out = MEMPROF_NONE;
	return 0;
}

static void check_nosample(size_t lo, size_t hi, size_t cnt)
{
	int called = 0;
	memprof_tracker t = {
	    .alloc_minor = never_alloc, .alloc_major = never_alloc, .arg = &called};
	cr_assert_eq(memprof_start(0.0, HARNESS_CALLSTACK_SIZE, &t), 0);
	allocate_arrays(lo, hi, cnt, 0);
	cr_assert_eq(memprof_stop(), 0);
	cr_assert_eq(called, 0, "%d callbacks at rate 0", called);
}

/* ---- lifecycle counts, with user data on the heap ----
 *
 * As OCaml's check_counts_full_major: the user data are heap values, a
 * young `ref 42` made by the alloc callback and replaced by a `ref 17` made
 * by promote (a second field names the block's record here).  alloc and
 * promote run a minor collection every GC_EVERY_ALLOC and GC_EVERY_PROMOTE
 * calls, so data made by callbacks move while the core holds them.
 * Once disabled, alloc callbacks allocate a full set of arrays and keep it,
 * as OCaml's do; OCaml keeps every such set (some 100 M words here), this
 * keeps the last CB_RING_SETS sets alive, replacing the oldest.
 */

#define DATA_MINOR 42
#define DATA_MAJOR 17
#define CB_RING_SETS 8

enum { ST_MINOR = 1, ST_MAJOR, ST_PROMOTED, ST_DEAD };

typedef struct heap_counts {
	int enable;
	int major;
	int promotes_allowed;
	uint64_t nalloc, npromote, ndealloc_minor, ndealloc_major;
	unsigned bad;
	char first_bad[160];
	unsigned char *state; /* per tracked block */
	size_t n, cap;
	size_t ring_next;
} heap_counts;

static heap_counts H;
static keeper cb_ring;

static void hc_fail(const char *what, intptr_t idx)
{
	if (H.bad++ == 0)
		snprintf(H.first_bad, sizeof(H.first_bad), "%s (block %ld)", what, (long)idx);
}

static memprof_value hc_data(intptr_t magic, intptr_t idx)
{
	rt_value r;
	if (rt_alloc(2, 0, &r) != 0) {
		hc_fail("rt_alloc of user data failed", idx);
		return MEMPROF_NONE;
	}
	rt_store_field(r, 0, RT_VAL_INT(magic));
	rt_store_field(r, 1, RT_VAL_INT(idx));
	return r;
}

/* The record index the data name, after checking its magic; -1 if bad. */
static intptr_t hc_check(memprof_value v, intptr_t magic, const char *what)
{
	if (RT_IS_INT(v) || v == MEMPROF_NONE || rt_wosize(v) != 2 ||
	    rt_field(v, 0) != RT_VAL_INT(magic)) {
		hc_fail(what, -1);
		return -1;
	}
	intptr_t idx = RT_INT_VAL(rt_field(v, 1));
	if (idx < 0 || (size_t)idx >= H.n) {
		hc_fail(what, idx);
		return -1;
	}
	return idx;
}

static int hc_alloc(const memprof_allocation *info, int major, memprof_value *out)
{
	(void)info;
	*out = MEMPROF_NONE;
	if (!H.enable) {
		/* Allocations made by a callback are not sampled: keep a set. */
		size_t base = (H.ring_next++ % CB_RING_SETS) * MINOR_HI;
		for (size_t i = MINOR_LO; i <= MINOR_HI; i++) {
			rt_value v;
			if (rt_alloc(i, 0, &v) != 0) {
				hc_fail("rt_alloc in a callback failed", -1);
				return 0;
			}
			rt_store_field(cb_ring.array, base + i - 1, v);
		}
		return 0;
	}
	if (major != H.major)
		hc_fail(major ? "alloc_major for a minor array" : "alloc_minor for a major array",
			-1);
	if (H.n == H.cap) {
		H.cap = H.cap ? 2 * H.cap : 4096;
		H.state = realloc(H.state, H.cap);
		if (!H.state)
			abort();
	}
	intptr_t idx = (intptr_t)H.n++;
	H.state[idx] = major ? ST_MAJOR : ST_MINOR;
	if (++H.nalloc % GC_EVERY_ALLOC == 0)
		rt_minor_gc();
	*out = hc_data(major ? DATA_MAJOR : DATA_MINOR, idx);
	return 0;
}

static int hc_alloc_minor(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	return hc_alloc(info, 0, out);
}

static int hc_alloc_major(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	return hc_alloc(info, 1, out);
}

static int hc_promote(void *arg, memprof_value data, memprof_value *out)
{
	(void)arg;
	*out = MEMPROF_NONE;
	intptr_t idx = hc_check(data, DATA_MINOR, "promote: data is not the alloc's ref 42");
	if (!H.promotes_allowed)
		hc_fail("promote after every tracked block was promoted", idx);
	if (idx >= 0 && H.state[idx] != ST_MINOR)
		hc_fail("promote of a block not in the minor heap", idx);
	if (idx >= 0)
		H.state[idx] = ST_PROMOTED;
	if (++H.npromote % GC_EVERY_PROMOTE == 0)
		rt_minor_gc();
	*out = hc_data(DATA_MAJOR, idx);
	return 0;
}

static int hc_dealloc_minor(void *arg, memprof_value data)
{
	(void)arg;
	intptr_t idx = hc_check(data, DATA_MINOR, "dealloc_minor: data is not the alloc's ref 42");
	if (idx >= 0 && H.state[idx] != ST_MINOR)
		hc_fail("dealloc_minor of a block not in the minor heap", idx);
	if (idx >= 0)
		H.state[idx] = ST_DEAD;
	H.ndealloc_minor++;
	return 0;
}

static int hc_dealloc_major(void *arg, memprof_value data)
{
	(void)arg;
	intptr_t idx = hc_check(data, DATA_MAJOR, "dealloc_major: data is not promote's ref 17");
	if (idx >= 0 && H.state[idx] != ST_PROMOTED && H.state[idx] != ST_MAJOR)
		hc_fail("dealloc_major of a block not in the major heap", idx);
	if (idx >= 0)
		H.state[idx] = ST_DEAD;
	H.ndealloc_major++;
	return 0;
}

static void full_major(void)
{
	rt_major_gc();
	harness_settle();
	harness_check("full major");
}

static void hc_assert_ok(void)
{
	cr_assert_eq(H.bad, 0, "%u violations in callbacks, first: %s", H.bad, H.first_bad);
}

static void check_counts_full_major(int major, int force_promote)
{
	memprof_tracker t = {
	    .alloc_minor = hc_alloc_minor,
	    .alloc_major = hc_alloc_major,
	    .promote = hc_promote,
	    .dealloc_minor = hc_dealloc_minor,
	    .dealloc_major = hc_dealloc_major,
	};
	H = (heap_counts){.enable = 1, .major = major, .promotes_allowed = 1};
	keeper_init(&cb_ring, CB_RING_SETS * MINOR_HI);

	cr_assert_eq(memprof_start(COUNTS_RATE, HARNESS_CALLSTACK_SIZE, &t), 0);
	if (major)
		allocate_arrays(MAJOR_LO, MAJOR_HI, 1, 1);
	else
		allocate_arrays(MINOR_LO, MINOR_HI, 100, 1);
	harness_check("allocations");
	H.enable = 0;
	hc_assert_ok();
	cr_assert_gt(H.nalloc, 0, "nothing was sampled");
	cr_assert_eq(H.ndealloc_minor + H.ndealloc_major, 0, "a kept array died");

	uint64_t born_minor = major ? 0 : H.nalloc;
	if (force_promote) {
		full_major();
		H.promotes_allowed = 0;
		allocate_arrays(MINOR_LO, MINOR_HI, 10, 1);
		full_major();
		hc_assert_ok();
		cr_assert_eq(H.ndealloc_minor + H.ndealloc_major, 0, "a kept array died");
		cr_assert_eq(H.npromote, born_minor, "%llu promotions for %llu minor blocks",
			     (unsigned long long)H.npromote, (unsigned long long)born_minor);
		keeper_clear(&roots);
		full_major();
		cr_assert_eq(H.ndealloc_minor, 0);
		cr_assert_eq(H.ndealloc_major, H.nalloc);
	} else {
		keeper_clear(&roots);
		rt_minor_gc();
		harness_settle();
		harness_check("minor GC");
		full_major();
		full_major();
		cr_assert_eq(H.ndealloc_minor + H.npromote, born_minor);
		cr_assert_eq(H.ndealloc_major, H.npromote + (H.nalloc - born_minor));
	}
	hc_assert_ok();
	for (size_t i = 0; i < H.n; i++)
		cr_assert_eq(H.state[i], ST_DEAD, "block %zu still in state %d", i, H.state[i]);
	cr_assert_eq(memprof_stop(), 0);
	keeper_free(&cb_ring);
	free(H.state);
	H.state = NULL;
}

/* ---- no nesting ----
 * Every callback allocates as much as OCaml's do: arrays of 1..100 fields,
 * ten times, and a 1000-cell list (none of it sampled, none kept). */

#define NESTED_ARRAYS_HI 100
#define NESTED_ROUNDS 10
#define NESTED_LIST_LEN 1000

static void allocate_in_callback(lifecycle *lc)
{
	for (size_t j = 0; j < NESTED_ROUNDS; j++)
		for (size_t i = 1; i <= NESTED_ARRAYS_HI; i++) {
			rt_value v;
			if (rt_alloc(i, 0, &v) != 0)
				lifecycle_fail(lc, "rt_alloc(%zu) in a callback failed", i);
		}
	rt_value list = RT_UNIT, cell = RT_UNIT;
	RT_ROOTS(2, &list, &cell);
	for (size_t n = 0; n < NESTED_LIST_LEN; n++) {
		if (rt_alloc(2, 0, &cell) != 0) {
			lifecycle_fail(lc, "list cell in a callback failed");
			break;
		}
		rt_store_field(cell, 0, RT_VAL_INT(n));
		rt_store_field(cell, 1, list);
		list = cell;
	}
	RT_ROOTS_END();
}

static void check_no_nested(int major)
{
	lifecycle lc;
	lifecycle_init(&lc);
	lc.callback_work = allocate_in_callback;
	memprof_tracker t = lifecycle_tracker(&lc);
	rt_stats before, after;
	rt_get_stats(&before);
	cr_assert_eq(memprof_start(1.0, HARNESS_CALLSTACK_SIZE, &t), 0);
	if (major)
		allocate_arrays(MAJOR_LO, MAJOR_LO, 100, 0);
	else
		allocate_arrays(MINOR_LO, MINOR_HI, 5, 0);
	harness_check("allocations");
	full_major();
	cr_assert_eq(memprof_stop(), 0);
	lifecycle_assert_all_dead(&lc);
	cr_assert_gt(lc.len, 0);
	/* Every block allocated outside callbacks was sampled (rate 1), and
	 * nothing the callbacks allocated was. */
	cr_assert_eq(lc.len, major ? 100 : 5 * (MINOR_HI - MINOR_LO + 1),
		     "%zu tracked blocks: callback allocations were sampled", lc.len);
	rt_get_stats(&after);
	uint64_t per_cb =
	    NESTED_ROUNDS * (NESTED_ARRAYS_HI + 3) * NESTED_ARRAYS_HI / 2 + 3 * NESTED_LIST_LEN;
	uint64_t ncb = lc.n_alloc_minor + lc.n_alloc_major + lc.n_promote + lc.n_dealloc_minor +
		       lc.n_dealloc_major;
	cr_assert_geq(after.minor_words - before.minor_words, ncb * per_cb,
		      "the callbacks allocated less than OCaml's");
	lifecycle_free(&lc);
}

/* ---- distribution ---- */

typedef struct distrib_ctx {
	size_t lo, hi;
	int major;
	uint64_t samples;
	unsigned bad;
	unsigned bad_stack;
	fn_range allocator;
} distrib_ctx;

static int distrib_alloc(distrib_ctx *d, const memprof_allocation *info, int major)
{
	if (major != d->major || info->size < d->lo || info->size > d->hi || info->n_samples == 0 ||
	    info->source != MEMPROF_SRC_NORMAL)
		d->bad++;
	if (!harness_stack_has(info, d->allocator))
		d->bad_stack++;
	d->samples += info->n_samples;
	return 0;
}

static int distrib_minor(void *arg, const memprof_allocation *info, memprof_value *out)
{
	*out = MEMPROF_NONE;
	return distrib_alloc(arg, info, 0);
}

static int distrib_major(void *arg, const memprof_allocation *info, memprof_value *out)
{
	*out = MEMPROF_NONE;
	return distrib_alloc(arg, info, 1);
}

static void check_distrib(int major, size_t lo, size_t hi, size_t cnt, double rate)
{
	distrib_ctx d = {.lo = lo, .hi = hi, .major = major};
	d.allocator = harness_fn_range((void *)allocate_arrays);
	memprof_tracker t = {.alloc_minor = distrib_minor, .alloc_major = distrib_major, .arg = &d};
	cr_assert_eq(memprof_start(rate, HARNESS_CALLSTACK_SIZE, &t), 0);
	allocate_arrays(lo, hi, cnt, 0);
	harness_settle();
	cr_assert_eq(memprof_stop(), 0);
	cr_assert_eq(d.bad, 0, "%u samples with a wrong kind, size or source", d.bad);
	cr_assert_eq(d.bad_stack, 0, "%u callstacks without allocate_arrays", d.bad_stack);
	char what[96];
	snprintf(what, sizeof(what), "arrays %zu..%zu x%zu at %g", lo, hi, cnt, rate);
	harness_assert_binomial(what, d.samples, (double)tot_words(lo, hi, cnt), rate);
}

TestSuite(arrays_in_minor, .init = setup, .fini = teardown);

Test(arrays_in_minor, nosample)
{
	check_nosample(MINOR_LO, MINOR_HI, 100);
}

Test(arrays_in_minor, counts_full_major)
{
	check_counts_full_major(0, 0);
}

Test(arrays_in_minor, counts_full_major_force_promote)
{
	check_counts_full_major(0, 1);
}

Test(arrays_in_minor, no_nested)
{
	check_no_nested(0);
}

Test(arrays_in_minor, distrib)
{
	check_distrib(0, MINOR_LO, MINOR_HI, 1000, 0.00001);
	check_distrib(0, MINOR_LO, MINOR_HI, 1000, 0.0001);
	check_distrib(0, MINOR_LO, MINOR_HI, 1000, 0.01);
	check_distrib(0, MINOR_LO, MINOR_HI, 100, 0.9);
	check_distrib(0, 1, 1, 10000000, 0.01);
	check_distrib(0, MINOR_HI, MINOR_HI, 100000, 0.1);
}

TestSuite(arrays_in_major, .init = setup, .fini = teardown);

Test(arrays_in_major, nosample)
{
	check_nosample(MAJOR_LO, MAJOR_HI, 1);
}

Test(arrays_in_major, counts_full_major)
{
	check_counts_full_major(1, 0);
}

Test(arrays_in_major, counts_full_major_force_promote)
{
	check_counts_full_major(1, 1);
}

Test(arrays_in_major, no_nested)
{
	check_no_nested(1);
}

Test(arrays_in_major, distrib)
{
	check_distrib(1, MAJOR_LO, MAJOR_HI, 3, 0.00001);
	check_distrib(1, MAJOR_LO, MAJOR_HI, 1, 0.0001);
	check_distrib(1, MAJOR_LO, MAJOR_HI, 1, 0.01);
	check_distrib(1, MAJOR_LO, MAJOR_HI, 1, 0.9);
	check_distrib(1, MAJOR_LO, MAJOR_LO, 10000, 0.1);
	check_distrib(1, 300000, 300000, 30, 0.1);
}
