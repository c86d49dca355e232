/*
 * profile_handles: profiles as in OCaml 5.3 (Gc.Memprof.t).
 * memprof_start_profile names the new profile; memprof_discard_profile
 * discards that profile alone: it fails while the profile samples, fails
 * the second time, and an old profile can be discarded while a new one
 * samples (the new one keeps every callback).  memprof_discard discards
 * every stopped profile, handles included.  memprof_debug_check runs after
 * each step.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>

#include "harness.h"

#define N_KEPT 10
#define N_DROPPED 10
#define N_BLOCKS (1 + N_KEPT + N_DROPPED)

TestSuite(profile_handles, .init = harness_setup, .fini = harness_teardown);

/* N_KEPT young blocks kept in *keep (itself young), N_DROPPED dropped. */
static void allocate_some(rt_value *keep)
{
	cr_assert_eq(rt_alloc(N_KEPT, 0, keep), 0);
	for (int i = 0; i < N_KEPT; i++) {
		rt_value v;
		cr_assert_eq(rt_alloc(2, 0, &v), 0);
		rt_store_field(*keep, i, v);
		cr_assert_eq(rt_alloc(2, 0, &v), 0);
	}
}

static uint64_t callbacks(const lifecycle *lc)
{
	return lc->n_alloc_minor + lc->n_alloc_major + lc->n_promote + lc->n_dealloc_minor +
	       lc->n_dealloc_major;
}

Test(profile_handles, return_codes)
{
	memprof_tracker t = {0};
	memprof_profile p = 0, q = 0;

	cr_assert_eq(memprof_start_profile(NAN, 0, &t, &p), EINVAL);
	cr_assert_eq(memprof_start_profile(0.5, 0, &t, NULL), EINVAL, "no handle to fill");
	cr_assert_eq(p, 0, "a failed start gives no handle");
	cr_assert_eq(memprof_discard_profile(0), EINVAL, "0 names no profile");
	cr_assert_eq(memprof_discard_profile(12345), EINVAL, "an unknown handle");

	cr_assert_eq(memprof_start_profile(0.5, 0, &t, &p), 0);
	cr_assert_neq(p, 0);
	harness_check("start_profile");
	cr_assert_eq(memprof_start_profile(0.5, 0, &t, &q), EBUSY, "start twice");
	cr_assert_eq(q, 0);
	cr_assert_eq(memprof_start(0.5, 0, &t), EBUSY, "start twice, old call");
	cr_assert_eq(memprof_discard_profile(p), EBUSY, "discard while it samples");
	cr_assert_eq(memprof_stop(), 0);
	harness_check("stop");
	cr_assert_eq(memprof_discard_profile(p), 0);
	harness_check("discard_profile");
	cr_assert_eq(memprof_discard_profile(p), EINVAL, "second discard of the same profile");

	/* Handles are never reused. */
	cr_assert_eq(memprof_start_profile(0.5, 0, &t, &q), 0);
	cr_assert_neq(q, p);
	cr_assert_eq(memprof_stop(), 0);
	cr_assert_eq(memprof_discard_profile(p), EINVAL, "a stale handle names no new profile");
	cr_assert_eq(memprof_discard_profile(q), 0);
	harness_check("discard q");
}

Test(profile_handles, discard_old_while_new_samples)
{
	lifecycle a, b;
	lifecycle_init(&a);
	lifecycle_init(&b);
	memprof_tracker ta = lifecycle_tracker(&a), tb = lifecycle_tracker(&b);
	memprof_profile pa, pb;
	rt_value keep_a = RT_UNIT, keep_b = RT_UNIT;
	RT_ROOTS(2, &keep_a, &keep_b);

	cr_assert_eq(memprof_start_profile(1.0, 0, &ta, &pa), 0);
	allocate_some(&keep_a);
	cr_assert_eq(memprof_stop(), 0);
	harness_check("a sampled");
	cr_assert_eq(a.n_alloc_minor, N_BLOCKS);

	cr_assert_eq(memprof_start_profile(1.0, 0, &tb, &pb), 0);
	cr_assert_neq(pa, pb);
	allocate_some(&keep_b);
	harness_check("b sampled");
	uint64_t before_a = callbacks(&a);

	/* a is stopped, b samples: a can go. */
	cr_assert_eq(memprof_discard_profile(pa), 0);
	harness_check("a discarded");
	cr_assert_eq(memprof_discard_profile(pa), EINVAL, "second discard of a");
	cr_assert_eq(memprof_discard_profile(pb), EBUSY, "b samples");

	/* b goes on sampling and gets every callback; a gets none. */
	allocate_some(&keep_b);
	rt_minor_gc();
	harness_settle();
	harness_check("minor GC");
	cr_assert_eq(b.n_alloc_minor, 2 * N_BLOCKS);
	cr_assert_eq(b.n_promote, 1 + N_KEPT, "b's second keeper and its blocks were promoted");
	cr_assert_eq(b.n_dealloc_minor, 2 * N_DROPPED + N_KEPT + 1,
		     "b's dropped blocks, its first keeper and that one's blocks died young");
	keep_a = keep_b = RT_UNIT;
	rt_major_gc();
	harness_settle();
	harness_check("major GC");
	cr_assert_eq(callbacks(&a), before_a, "callbacks ran for a discarded profile");
	lifecycle_assert_ok(&a);
	cr_assert_eq(memprof_stop(), 0);
	lifecycle_assert_all_dead(&b);

	cr_assert_eq(memprof_discard_profile(pb), 0);
	harness_check("b discarded");
	memprof_stats st;
	memprof_get_stats(&st);
	cr_assert_eq(st.tracked, 0);
	RT_ROOTS_END();
	lifecycle_free(&a);
	lifecycle_free(&b);
}

/* The old call discards every stopped profile: their handles then fail. */
Test(profile_handles, discard_all_discards_handles)
{
	lifecycle a;
	lifecycle_init(&a);
	memprof_tracker ta = lifecycle_tracker(&a);
	memprof_profile pa, pb;
	rt_value keep = RT_UNIT;
	RT_ROOTS(1, &keep);

	cr_assert_eq(memprof_start_profile(1.0, 0, &ta, &pa), 0);
	allocate_some(&keep);
	cr_assert_eq(memprof_stop(), 0);
	cr_assert_eq(memprof_start_profile(1.0, 0, &ta, &pb), 0);
	cr_assert_eq(memprof_discard(), EBUSY);
	cr_assert_eq(memprof_stop(), 0);
	cr_assert_eq(memprof_discard(), 0);
	harness_check("discard all");
	cr_assert_eq(memprof_discard_profile(pa), EINVAL);
	cr_assert_eq(memprof_discard_profile(pb), EINVAL);
	uint64_t before = callbacks(&a);
	keep = RT_UNIT;
	rt_major_gc();
	harness_settle();
	cr_assert_eq(callbacks(&a), before);
	RT_ROOTS_END();
	lifecycle_free(&a);
}

/* Discarding the old profile from a callback of the new one. */
typedef struct discard_in_cb {
	memprof_profile old;
	int result;
	unsigned calls;
} discard_in_cb;

static int discard_old(void *arg, const memprof_allocation *info, memprof_value *out)
{
	discard_in_cb *d = arg;
	(void)info;
	if (d->calls++ == 0)
		d->result = memprof_discard_profile(d->old);
	*out = MEMPROF_NONE;
	return 0;
}

Test(profile_handles, discard_old_in_callback_of_new)
{
	lifecycle a;
	lifecycle_init(&a);
	memprof_tracker ta = lifecycle_tracker(&a);
	discard_in_cb d = {.result = -1};
	memprof_tracker tb = {.alloc_minor = discard_old, .alloc_major = discard_old, .arg = &d};
	memprof_profile pb;
	rt_value keep = RT_UNIT, v;
	RT_ROOTS(1, &keep);

	cr_assert_eq(memprof_start_profile(1.0, 0, &ta, &d.old), 0);
	allocate_some(&keep);
	cr_assert_eq(memprof_stop(), 0);
	uint64_t before = callbacks(&a);
	cr_assert_eq(memprof_start_profile(1.0, 0, &tb, &pb), 0);
	cr_assert_eq(rt_alloc(3, 0, &v), 0);
	harness_check("discard in callback");
	cr_assert_eq(d.result, 0, "discard of the old profile from a callback: %d", d.result);
	cr_assert_eq(memprof_discard_profile(d.old), EINVAL);
	keep = RT_UNIT;
	rt_major_gc();
	harness_settle();
	cr_assert_eq(callbacks(&a), before);
	cr_assert_eq(memprof_stop(), 0);
	cr_assert_eq(memprof_discard_profile(pb), 0);
	RT_ROOTS_END();
	lifecycle_free(&a);
}
