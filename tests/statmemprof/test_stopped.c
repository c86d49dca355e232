/*
 * stopped_profile: a stopped profile runs no alloc callback, not even one
 * that was postponed before the stop.  Samples taken inside the runtime
 * (major blocks, unmarshaled blocks, custom blocks) get their alloc
 * callback at the next safe point; if the profile is stopped in between,
 * by a callback run at that safe point (before theirs) or by the program
 * after a callback's error left them pending, they must never run, with
 * the old tracker or with a new profile's.
 *
 * The callback that runs first is the promote of a block Y, made pending
 * by a minor collection (run by the scenario, or, for custom blocks whose
 * allocation passes a safe point first, by the alloc_minor of the custom
 * block's own header sample).  memprof_debug_check runs after each step.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>

#include "harness.h"

#define ERR_PROMOTE 77
/* Blocks of the marshaled chains: big goes to the major heap, small (when
 * rt unmarshals small values into the minor heap) to the minor heap. */
#define CHAIN_BIG 200
#define CHAIN_SMALL 10
#define CUSTOM_BYTES 8000

enum promote_action { PROMOTE_KEEP, PROMOTE_STOP, PROMOTE_STOP_START, PROMOTE_ERROR };
enum target { TARGET_MAJOR, TARGET_INTERN_BIG, TARGET_INTERN_SMALL, TARGET_CUSTOM };

typedef struct stp {
	enum promote_action action;
	int gc_in_next_normal_minor; /* next NORMAL alloc_minor runs a minor GC */
	unsigned alloc_normal_minor;
	unsigned alloc_normal_major;
	unsigned alloc_marshal;
	unsigned alloc_custom;
	unsigned promote;
	unsigned restarted; /* a new profile was started by promote */
	unsigned bad;
} stp;

static stp S;

static int stp_alloc(const memprof_allocation *info, int major, memprof_value *out)
{
	switch (info->source) {
	case MEMPROF_SRC_NORMAL:
		if (major)
			S.alloc_normal_major++;
		else
			S.alloc_normal_minor++;
		if (!major && S.gc_in_next_normal_minor) {
			S.gc_in_next_normal_minor = 0;
			rt_minor_gc();
		}
		break;
	case MEMPROF_SRC_MARSHAL:
		S.alloc_marshal++;
		break;
	case MEMPROF_SRC_CUSTOM:
		S.alloc_custom++;
		break;
	default:
		S.bad++;
	}
	*out = RT_VAL_INT(1);
	return 0;
}

static int stp_alloc_minor(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	return stp_alloc(info, 0, out);
}

static int stp_alloc_major(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	return stp_alloc(info, 1, out);
}

static memprof_tracker stp_tracker(void);

static int stp_promote(void *arg, memprof_value data, memprof_value *out)
{
	(void)arg;
	S.promote++;
	*out = data;
	switch (S.action) {
	case PROMOTE_KEEP:
		break;
	case PROMOTE_STOP:
		if (memprof_stop() != 0)
			S.bad++;
		break;
	case PROMOTE_STOP_START: {
		memprof_tracker t = stp_tracker();
		if (memprof_stop() != 0 || memprof_start(1.0, 0, &t) != 0)
			S.bad++;
		S.restarted++;
		break;
	}
	case PROMOTE_ERROR:
		return ERR_PROMOTE;
	}
	S.action = PROMOTE_KEEP;
	return 0;
}

static memprof_tracker stp_tracker(void)
{
	memprof_tracker t = {
	    .alloc_minor = stp_alloc_minor,
	    .alloc_major = stp_alloc_major,
	    .promote = stp_promote,
	};
	return t;
}

/* A chain of n one-field blocks, marshaled (made before sampling starts). */
static void marshal_chain(size_t n, void **data, size_t *len)
{
	rt_value head = RT_UNIT, cell = RT_UNIT;
	RT_ROOTS(2, &head, &cell);
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(rt_alloc(1, 0, &cell), 0);
		rt_store_field(cell, 0, head);
		head = cell;
	}
	cr_assert_eq(rt_marshal(head, data, len), 0);
	RT_ROOTS_END();
}

static unsigned target_allocs(enum target tg)
{
	switch (tg) {
	case TARGET_MAJOR:
		return S.alloc_normal_major;
	case TARGET_INTERN_BIG:
	case TARGET_INTERN_SMALL:
		return S.alloc_marshal;
	case TARGET_CUSTOM:
		return S.alloc_custom;
	}
	return 0;
}

/* The allocation whose samples' alloc callbacks are postponed. */
static int allocate_target(enum target tg, const void *data, size_t len, rt_value *out)
{
	switch (tg) {
	case TARGET_MAJOR:
		return rt_alloc_major(300, 0, out);
	case TARGET_INTERN_BIG:
	case TARGET_INTERN_SMALL:
		return rt_unmarshal(data, len, out);
	case TARGET_CUSTOM:
		S.gc_in_next_normal_minor = 1;
		return rt_alloc_custom(NULL, CUSTOM_BYTES, NULL, out);
	}
	return EINVAL;
}

static void check_stopped(enum target tg, enum promote_action action)
{
	void *data = NULL;
	size_t len = 0;
	rt_value y = RT_UNIT, v = RT_UNIT;
	RT_ROOTS(2, &y, &v);
	memprof_tracker t = stp_tracker();

	S = (stp){0};
	if (tg == TARGET_INTERN_BIG || tg == TARGET_INTERN_SMALL)
		marshal_chain(tg == TARGET_INTERN_BIG ? CHAIN_BIG : CHAIN_SMALL, &data, &len);
	cr_assert_eq(memprof_start(1.0, 0, &t), 0);
	cr_assert_eq(rt_alloc(2, 0, &y), 0);
	cr_assert_eq(S.alloc_normal_minor, 1, "Y is sampled");
	harness_check("Y allocated");
	/* Y's promote is pending; a custom block's allocation passes a safe
	 * point first: its own header sample's callback collects instead. */
	if (tg != TARGET_CUSTOM)
		rt_minor_gc();
	harness_check("minor GC");
	S.action = action;

	int err = allocate_target(tg, data, len, &v);
	harness_check("target allocated");
	cr_assert_eq(S.promote, 1, "Y's promote ran at the allocation's safe point");
	if (action == PROMOTE_ERROR) {
		cr_assert_eq(err, ERR_PROMOTE, "promote's error reaches the allocation");
		cr_assert_eq(target_allocs(tg), 0, "alloc callbacks ran behind an error");
		cr_assert_eq(memprof_stop(), 0);
		harness_check("stop");
	} else {
		cr_assert_eq(err, 0);
		cr_assert_eq(memprof_stop(), action == PROMOTE_STOP ? EINVAL : 0,
			     "the promote callback stopped the profile");
		harness_check("stop");
	}
	cr_assert_eq(rt_poll(), 0);
	harness_check("safe point after stop");
	cr_assert_eq(target_allocs(tg), 0,
		     "%u postponed alloc callbacks of a stopped profile ran (target %d)",
		     target_allocs(tg), tg);
	cr_assert_eq(S.alloc_normal_major, 0);
	cr_assert_eq(S.bad, 0);
	cr_assert_eq(S.restarted, action == PROMOTE_STOP_START);

	/* The blocks die without any further callback to the profile. */
	v = y = RT_UNIT;
	rt_major_gc();
	cr_assert_eq(rt_poll(), 0);
	harness_check("major GC");
	cr_assert_eq(memprof_discard(), 0);
	harness_check("discard");
	memprof_stats st;
	memprof_get_stats(&st);
	cr_assert_eq(st.tracked, 0, "%llu entries left", (unsigned long long)st.tracked);
	RT_ROOTS_END();
	free(data);
}

TestSuite(stopped_profile, .init = harness_setup, .fini = harness_teardown);

Test(stopped_profile, major_stop_in_callback)
{
	check_stopped(TARGET_MAJOR, PROMOTE_STOP);
}

Test(stopped_profile, major_stop_start_in_callback)
{
	check_stopped(TARGET_MAJOR, PROMOTE_STOP_START);
}

Test(stopped_profile, major_stop_after_error)
{
	check_stopped(TARGET_MAJOR, PROMOTE_ERROR);
}

Test(stopped_profile, intern_stop_in_callback)
{
	check_stopped(TARGET_INTERN_BIG, PROMOTE_STOP);
}

Test(stopped_profile, intern_stop_start_in_callback)
{
	check_stopped(TARGET_INTERN_BIG, PROMOTE_STOP_START);
}

Test(stopped_profile, intern_stop_after_error)
{
	check_stopped(TARGET_INTERN_BIG, PROMOTE_ERROR);
}

Test(stopped_profile, intern_minor_stop_in_callback)
{
	check_stopped(TARGET_INTERN_SMALL, PROMOTE_STOP);
}

Test(stopped_profile, intern_minor_stop_after_error)
{
	check_stopped(TARGET_INTERN_SMALL, PROMOTE_ERROR);
}

Test(stopped_profile, custom_stop_in_callback)
{
	check_stopped(TARGET_CUSTOM, PROMOTE_STOP);
}

Test(stopped_profile, custom_stop_start_in_callback)
{
	check_stopped(TARGET_CUSTOM, PROMOTE_STOP_START);
}

Test(stopped_profile, custom_stop_after_error)
{
	check_stopped(TARGET_CUSTOM, PROMOTE_ERROR);
}

/* The rest of one bulk unmarshal: its first alloc callback stops. */
static int stop_on_first(void *arg, const memprof_allocation *info, memprof_value *out)
{
	unsigned *n = arg;
	(void)info;
	if ((*n)++ == 0 && memprof_stop() != 0)
		*n += 1000;
	*out = RT_VAL_INT(1);
	return 0;
}

Test(stopped_profile, intern_rest_of_bulk)
{
	void *data = NULL;
	size_t len = 0;
	unsigned n = 0;
	rt_value v = RT_UNIT;
	RT_ROOTS(1, &v);
	memprof_tracker t = {.alloc_minor = stop_on_first, .alloc_major = stop_on_first, .arg = &n};

	marshal_chain(CHAIN_BIG, &data, &len);
	cr_assert_eq(memprof_start(1.0, 0, &t), 0);
	cr_assert_eq(rt_unmarshal(data, len, &v), 0);
	harness_check("unmarshal");
	cr_assert_eq(rt_poll(), 0);
	harness_check("safe point");
	cr_assert_eq(n, 1, "%u alloc callbacks for a bulk whose first one stopped the profile", n);
	cr_assert_eq(memprof_stop(), EINVAL);
	RT_ROOTS_END();
	free(data);
}
