/*
 * user_data_regression: user data that are heap values, young or old,
 * returned by alloc_minor, alloc_major and promote, are roots: they survive
 * the collections that run between callbacks (and inside them), are
 * updated when moved, and reach the next callback intact.  The mutator
 * allocates from random call depths with a small minor heap, so
 * collections are frequent.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "harness.h"

#define ITERS 20000
#define MAX_DEPTH 100
#define SLOTS 512
#define MINOR_WORDS 4096
#define DATA_TAG 9
#define DATA_WOSIZE 3
#define MAGIC_MINOR 0x4d49
#define MAGIC_MAJOR 0x4d41
#define MAGIC_PROMOTED 0x5052
/* Every OLD_EVERY-th datum is allocated old, every GC_EVERY-th callback collects. */
#define OLD_EVERY 3
#define GC_EVERY 5

enum ud_state { UD_MINOR = 1, UD_MAJOR, UD_DEAD };

typedef struct ud {
	enum ud_state *state;	   /* per record */
	unsigned char *born_major; /* per record */
	size_t len, cap;
	unsigned callbacks;
	unsigned bad;
	unsigned n_promote, n_dealloc_minor, n_dealloc_major, n_old_data, n_young_data;
	uint32_t rng;
} ud;

static ud u;

/* [magic, record, check]: check ties the fields together. */
static memprof_value make_data(intptr_t magic, intptr_t rec)
{
	rt_value v = RT_UNIT;
	int old = ++u.callbacks % OLD_EVERY == 0;
	RT_ROOTS(1, &v);
	int err =
	    old ? rt_alloc_major(DATA_WOSIZE, DATA_TAG, &v) : rt_alloc(DATA_WOSIZE, DATA_TAG, &v);
	if (err) {
		u.bad++;
		RT_ROOTS_END();
		return MEMPROF_NONE;
	}
	if (old) {
		u.n_old_data++;
		if (rt_is_young(v))
			u.bad++;
	} else {
		u.n_young_data++;
		if (!rt_is_young(v))
			u.bad++;
	}
	rt_store_field(v, 0, RT_VAL_INT(magic));
	rt_store_field(v, 1, RT_VAL_INT(rec));
	rt_store_field(v, 2, RT_VAL_INT(magic ^ (rec * 7919)));
	/* Collect while the datum is held only by this callback. */
	if (u.callbacks % GC_EVERY == 0) {
		if (u.callbacks % (GC_EVERY * 7) == 0)
			rt_major_gc();
		else
			rt_minor_gc();
	}
	RT_ROOTS_END();
	return v;
}

/* The record a datum names, if it is intact; its magic goes to *magic_out. */
static intptr_t check_data(memprof_value v, intptr_t *magic_out)
{
	if (v == MEMPROF_NONE || RT_IS_INT(v) || rt_tag(v) != DATA_TAG ||
	    rt_wosize(v) != DATA_WOSIZE) {
		u.bad++;
		return -1;
	}
	intptr_t magic = RT_INT_VAL(rt_field(v, 0));
	intptr_t rec = RT_INT_VAL(rt_field(v, 1));
	*magic_out = magic;
	if ((magic != MAGIC_MINOR && magic != MAGIC_MAJOR && magic != MAGIC_PROMOTED) ||
	    rt_field(v, 2) != RT_VAL_INT(magic ^ (rec * 7919)) || rec < 0 || (size_t)rec >= u.len) {
		u.bad++;
		return -1;
	}
	return rec;
}

static int ud_alloc(int major, memprof_value *out)
{
	*out = MEMPROF_NONE;
	if (u.len == u.cap) {
		size_t cap = u.cap ? 2 * u.cap : 4096;
		enum ud_state *s = realloc(u.state, cap * sizeof(*s));
		if (s)
			u.state = s;
		unsigned char *b = realloc(u.born_major, cap);
		if (b)
			u.born_major = b;
		if (!s || !b) {
			u.bad++;
			return 0;
		}
		u.cap = cap;
	}
	intptr_t rec = (intptr_t)u.len++;
	u.state[rec] = major ? UD_MAJOR : UD_MINOR;
	u.born_major[rec] = (unsigned char)major;
	*out = make_data(major ? MAGIC_MAJOR : MAGIC_MINOR, rec);
	return 0;
}

static int ud_alloc_minor(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	(void)info;
	return ud_alloc(0, out);
}

static int ud_alloc_major(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	(void)info;
	return ud_alloc(1, out);
}

static int ud_promote(void *arg, memprof_value data, memprof_value *out)
{
	(void)arg;
	u.n_promote++;
	*out = MEMPROF_NONE;
	intptr_t magic;
	intptr_t rec = check_data(data, &magic);
	if (rec < 0)
		return 0;
	if (u.state[rec] != UD_MINOR || magic != MAGIC_MINOR)
		u.bad++;
	u.state[rec] = UD_MAJOR;
	/* Alternately keep the minor datum or return a fresh one. */
	if (rec % 2)
		*out = data;
	else
		*out = make_data(MAGIC_PROMOTED, rec);
	return 0;
}

static int ud_dealloc(memprof_value data, int major)
{
	intptr_t magic;
	intptr_t rec = check_data(data, &magic);
	if (rec < 0)
		return 0;
	/*
	 * The datum must be the one the last callback returned: alloc_minor's
	 * for a block that died young; for a major block, alloc_major's, or
	 * promote's (the minor datum kept for odd records, a fresh one for
	 * even records).
	 */
	intptr_t expected = !major		? MAGIC_MINOR
			    : u.born_major[rec] ? MAGIC_MAJOR
			    : rec % 2		? MAGIC_MINOR
						: MAGIC_PROMOTED;
	if (magic != expected || u.state[rec] != (major ? UD_MAJOR : UD_MINOR))
		u.bad++;
	u.state[rec] = UD_DEAD;
	return 0;
}

static int ud_dealloc_minor(void *arg, memprof_value data)
{
	(void)arg;
	u.n_dealloc_minor++;
	return ud_dealloc(data, 0);
}

static int ud_dealloc_major(void *arg, memprof_value data)
{
	(void)arg;
	u.n_dealloc_major++;
	return ud_dealloc(data, 1);
}

static keeper slots;

static uint32_t next_rand(void)
{
	u.rng = u.rng * 1664525u + 1013904223u;
	return u.rng >> 8;
}

/* Allocate from a random depth, so callstacks differ. */
static int __attribute__((noinline)) deep(unsigned n)
{
	if (n > 0)
		return 1 + deep(n - 1);
	rt_value v;
	uint32_t r = next_rand();
	int err = r % 16 == 0 ? rt_alloc(300 + r % 100, 0, &v) : rt_alloc(1 + r % 8, 0, &v);
	cr_assert_eq(err, 0);
	if (r % 4 == 0)
		rt_store_field(slots.array, (r >> 4) % SLOTS, v);
	return 0;
}

static void setup(void)
{
	harness_setup();
	memset(&u, 0, sizeof(u));
	u.rng = HARNESS_SEED;
	cr_assert_eq(rt_set_minor_heap_words(MINOR_WORDS), 0);
	keeper_init(&slots, SLOTS);
	slots.len = SLOTS; /* used as a table of slots: keeper_clear empties all */
}

static void teardown(void)
{
	keeper_free(&slots);
	harness_teardown();
	free(u.state);
	free(u.born_major);
}

TestSuite(user_data_regression, .init = setup, .fini = teardown);

Test(user_data_regression, heap_values_as_user_data)
{
	memprof_tracker t = {.alloc_minor = ud_alloc_minor,
			     .alloc_major = ud_alloc_major,
			     .promote = ud_promote,
			     .dealloc_minor = ud_dealloc_minor,
			     .dealloc_major = ud_dealloc_major};
	cr_assert_eq(memprof_start(0.25, HARNESS_CALLSTACK_SIZE, &t), 0);
	for (int i = 0; i < ITERS; i++) {
		deep(next_rand() % MAX_DEPTH);
		cr_assert_eq(rt_poll(), 0);
		if (i % 1000 == 999)
			rt_major_gc();
	}
	cr_assert_eq(u.bad, 0, "%u damaged user data or callbacks out of order", u.bad);
	keeper_clear(&slots);
	rt_minor_gc();
	rt_major_gc();
	cr_assert_eq(rt_poll(), 0);
	rt_major_gc();
	cr_assert_eq(rt_poll(), 0);
	cr_assert_eq(memprof_stop(), 0);

	cr_assert_eq(u.bad, 0, "%u damaged user data or callbacks out of order", u.bad);
	cr_assert_gt(u.n_promote, 100);
	cr_assert_gt(u.n_old_data, 100);
	cr_assert_gt(u.n_young_data, 100);
	for (size_t i = 0; i < u.len; i++)
		cr_assert_eq(u.state[i], UD_DEAD, "record %zu still tracked", i);
	cr_assert_eq(u.n_dealloc_minor + u.n_dealloc_major, u.len);
}
