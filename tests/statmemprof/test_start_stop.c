/*
 * start_stop, stop_start_in_callback, discard_in_callback: the return codes
 * of memprof_start/stop/discard; callbacks go on after stop and end with
 * discard; stopping, restarting and discarding from inside an alloc
 * callback, in the middle of a combined allocation, is legal and behaves.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <string.h>

#include "harness.h"
#include "memprof_host.h"

#define N_KEPT 10
#define N_DROPPED 10

TestSuite(start_stop, .init = harness_setup, .fini = harness_teardown);

Test(start_stop, return_codes)
{
	memprof_tracker t = {0};
	cr_assert_eq(memprof_stop(), EINVAL, "stop when not sampling");
	cr_assert_eq(memprof_start(NAN, 0, &t), EINVAL);
	cr_assert_eq(memprof_start(-0.1, 0, &t), EINVAL);
	cr_assert_eq(memprof_start(1.5, 0, &t), EINVAL);
	cr_assert_eq(memprof_start(INFINITY, 0, &t), EINVAL);
	cr_assert_eq(memprof_stop(), EINVAL, "a rejected start does not sample");
	cr_assert_eq(memprof_discard(), 0, "discard with no profile");

	cr_assert_eq(memprof_start(0.0, 0, &t), 0);
	cr_assert_eq(memprof_start(0.5, 0, &t), EBUSY, "start twice");
	cr_assert_eq(memprof_discard(), EBUSY, "discard while sampling");
	cr_assert_eq(memprof_stop(), 0);
	cr_assert_eq(memprof_stop(), EINVAL, "stop twice");
	cr_assert_eq(memprof_discard(), 0);
	cr_assert_eq(memprof_discard(), 0, "discard twice");

	cr_assert_eq(memprof_start(1.0, 0, &t), 0, "rate 1 is legal");
	cr_assert_eq(memprof_stop(), 0);
}

/* Allocate N_KEPT young blocks kept in *keep and N_DROPPED dropped ones. */
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

Test(start_stop, callbacks_continue_after_stop)
{
	lifecycle lc;
	lifecycle_init(&lc);
	memprof_tracker t = lifecycle_tracker(&lc);
	rt_value keep = RT_UNIT;
	RT_ROOTS(1, &keep);

	cr_assert_eq(memprof_start(1.0, 0, &t), 0);
	allocate_some(&keep);
	cr_assert_eq(memprof_stop(), 0);
	uint64_t allocs = lc.n_alloc_minor;
	cr_assert_eq(allocs, 1 + N_KEPT + N_DROPPED);
	rt_minor_gc();
	harness_settle();
	cr_assert_eq(lc.n_promote, 1 + N_KEPT, "promote callbacks after stop");
	cr_assert_eq(lc.n_dealloc_minor, N_DROPPED, "dealloc_minor callbacks after stop");
	keep = RT_UNIT;
	rt_major_gc();
	harness_settle();
	cr_assert_eq(lc.n_dealloc_major, 1 + N_KEPT, "dealloc_major callbacks after stop");
	cr_assert_eq(lc.n_alloc_minor, allocs, "no sampling after stop");
	lifecycle_assert_all_dead(&lc);
	RT_ROOTS_END();
	lifecycle_free(&lc);
}

Test(start_stop, no_callbacks_after_discard)
{
	lifecycle lc;
	lifecycle_init(&lc);
	memprof_tracker t = lifecycle_tracker(&lc);
	rt_value keep = RT_UNIT;
	RT_ROOTS(1, &keep);

	cr_assert_eq(memprof_start(1.0, 0, &t), 0);
	allocate_some(&keep);
	rt_minor_gc();
	harness_settle();
	cr_assert_eq(lc.n_promote, 1 + N_KEPT);
	allocate_some(&keep);
	cr_assert_eq(memprof_stop(), 0);
	cr_assert_eq(memprof_discard(), 0);
	uint64_t callbacks =
	    lc.n_alloc_minor + lc.n_promote + lc.n_dealloc_minor + lc.n_dealloc_major;
	rt_minor_gc();
	keep = RT_UNIT;
	rt_major_gc();
	harness_settle();
	cr_assert_eq(lc.n_alloc_minor + lc.n_promote + lc.n_dealloc_minor + lc.n_dealloc_major,
		     callbacks, "callbacks ran for a discarded profile");
	memprof_stats st;
	memprof_get_stats(&st);
	cr_assert_eq(st.tracked, 0, "%llu entries left after discard",
		     (unsigned long long)st.tracked);

	/* A new profile works after a discard. */
	uint64_t allocs = lc.n_alloc_minor;
	cr_assert_eq(memprof_start(1.0, 0, &t), 0);
	allocate_some(&keep);
	cr_assert_eq(lc.n_alloc_minor, allocs + 1 + N_KEPT + N_DROPPED);
	lifecycle_assert_ok(&lc);
	RT_ROOTS_END();
	lifecycle_free(&lc);
}

Test(start_stop, old_profile_keeps_its_tracker)
{
	lifecycle a, b;
	lifecycle_init(&a);
	lifecycle_init(&b);
	memprof_tracker ta = lifecycle_tracker(&a), tb = lifecycle_tracker(&b);
	rt_value keep_a = RT_UNIT, keep_b = RT_UNIT;
	RT_ROOTS(2, &keep_a, &keep_b);

	cr_assert_eq(memprof_start(1.0, 0, &ta), 0);
	allocate_some(&keep_a);
	cr_assert_eq(memprof_stop(), 0);
	cr_assert_eq(memprof_start(1.0, 0, &tb), 0);
	allocate_some(&keep_b);
	cr_assert_eq(memprof_stop(), 0);
	rt_minor_gc();
	harness_settle();
	keep_a = keep_b = RT_UNIT;
	rt_major_gc();
	harness_settle();
	lifecycle_assert_all_dead(&a);
	lifecycle_assert_all_dead(&b);
	cr_assert_eq(a.len, 1 + N_KEPT + N_DROPPED);
	cr_assert_eq(b.len, 1 + N_KEPT + N_DROPPED);
	cr_assert_eq(a.n_promote, 1 + N_KEPT);
	cr_assert_eq(b.n_promote, 1 + N_KEPT);
	RT_ROOTS_END();
	lifecycle_free(&a);
	lifecycle_free(&b);
}

/* ---- stop/start/discard inside callbacks, in combined allocations ---- */

#define F33_N 7
#define F33_CALLS 4
#define MAX_EVENTS 256

/* A combined allocation of 7 blocks, 33 words, then a cons cell. */
static const size_t f33_wosizes[F33_N] = {5, 4, 3, 5, 4, 3, 2};

typedef struct profiles {
	int restart;
	int discard;
	int n_prof;
	int n_alloc;
	memprof_tracker tracker;
	intptr_t allocs[MAX_EVENTS], promotes[MAX_EVENTS], deallocs_minor[MAX_EVENTS],
	    deallocs_major[MAX_EVENTS];
	size_t n_allocs, n_promotes, n_deallocs_minor, n_deallocs_major;
	size_t words;
	unsigned bad;
} profiles;

#define TRIPLE(p, a, sz) (((intptr_t)(p) << 24) | ((intptr_t)(a) << 12) | (intptr_t)(sz))
#define TRIPLE_SIZE(t) ((size_t)((t)&0xfff))

static void record(profiles *ps, intptr_t *set, size_t *n, intptr_t t)
{
	for (size_t i = 0; i < *n; i++)
		if (set[i] == t)
			ps->bad++; /* recorded twice */
	if (*n < MAX_EVENTS)
		set[(*n)++] = t;
	else
		ps->bad++;
}

static void profile_start(profiles *ps)
{
	ps->n_prof++;
	ps->n_alloc = 0;
	if (memprof_start(1.0, 0, &ps->tracker) != 0)
		ps->bad++;
}

static void profile_stop(profiles *ps)
{
	if (memprof_stop() != 0)
		ps->bad++;
	if (ps->discard && memprof_discard() != 0)
		ps->bad++;
}

static int pr_alloc_minor(void *arg, const memprof_allocation *info, memprof_value *out)
{
	profiles *ps = arg;
	int a = ++ps->n_alloc;
	int p = ps->n_prof;
	intptr_t t = TRIPLE(p, a, info->size + 1);
	record(ps, ps->allocs, &ps->n_allocs, t);
	ps->words += info->size + 1;
	if (a >= p) {
		/* Stop profile p after p allocations. */
		profile_stop(ps);
		if (ps->restart)
			profile_start(ps);
	}
	*out = RT_VAL_INT(t);
	return 0;
}

static int pr_alloc_major(void *arg, const memprof_allocation *info, memprof_value *out)
{
	profiles *ps = arg;
	(void)info;
	ps->bad++;
	*out = MEMPROF_NONE;
	return 0;
}

static int pr_promote(void *arg, memprof_value data, memprof_value *out)
{
	profiles *ps = arg;
	record(ps, ps->promotes, &ps->n_promotes, RT_INT_VAL(data));
	*out = data;
	return 0;
}

static int pr_dealloc_minor(void *arg, memprof_value data)
{
	profiles *ps = arg;
	record(ps, ps->deallocs_minor, &ps->n_deallocs_minor, RT_INT_VAL(data));
	return 0;
}

static int pr_dealloc_major(void *arg, memprof_value data)
{
	profiles *ps = arg;
	record(ps, ps->deallocs_major, &ps->n_deallocs_major, RT_INT_VAL(data));
	return 0;
}

static int in_set(const intptr_t *set, size_t n, intptr_t t)
{
	for (size_t i = 0; i < n; i++)
		if (set[i] == t)
			return 1;
	return 0;
}

/* f33 n, consed onto *list. */
static void f33_cons(rt_value *list)
{
	rt_value blocks[F33_N], first = RT_UNIT, cons = RT_UNIT;
	RT_ROOTS(2, &first, &cons);
	cr_assert_eq(rt_alloc_comb(F33_N, f33_wosizes, 0, blocks), 0);
	for (int i = 0; i + 1 < F33_N; i++)
		rt_store_field(blocks[i], 0, blocks[i + 1]);
	first = blocks[0];
	cr_assert_eq(rt_alloc(2, 0, &cons), 0);
	rt_store_field(cons, 0, first);
	rt_store_field(cons, 1, *list);
	*list = cons;
	RT_ROOTS_END();
}

static void run_profiles(profiles *ps)
{
	rt_value list = RT_UNIT;
	RT_ROOTS(1, &list);
	ps->tracker = (memprof_tracker){.alloc_minor = pr_alloc_minor,
					.alloc_major = pr_alloc_major,
					.promote = pr_promote,
					.dealloc_minor = pr_dealloc_minor,
					.dealloc_major = pr_dealloc_major,
					.arg = ps};
	profile_start(ps);
	for (int i = 0; i < F33_CALLS; i++) {
		f33_cons(&list);
		if (!ps->restart && i + 1 < F33_CALLS)
			profile_start(ps);
	}
	if (ps->restart)
		profile_stop(ps);
	rt_minor_gc();
	harness_settle();
	list = RT_UNIT;
	rt_major_gc();
	harness_settle();
	RT_ROOTS_END();
	cr_assert_eq(ps->bad, 0, "%u bad events (double records, failed start/stop)", ps->bad);
	cr_assert_eq(memprof_stop(), EINVAL, "every profile was stopped");
}

/*
 * Expected: profile p sees p allocations, then stops.  Without restart,
 * profile p runs over the p-th f33 call: 1 + 2 + 3 + 4 allocations, the
 * first blocks of each combined allocation.  With restart, the blocks of a
 * combined allocation after the stopping one are not sampled, and the next
 * profile starts with the cons cell: 1 + 2 + 3 + 4 + 1 allocations.
 */
#define NO_RESTART_ALLOCS (1 + 2 + 3 + 4)
#define NO_RESTART_WORDS (6 + (6 + 5) + (6 + 5 + 4) + (6 + 5 + 4 + 6))
#define RESTART_ALLOCS (1 + 2 + 3 + 4 + 1)
#define RESTART_WORDS (6 + (3 + 6) + (3 + 6 + 5) + (3 + 6 + 5 + 4) + 3)

static void check_stop_start(int restart)
{
	static profiles ps;
	memset(&ps, 0, sizeof(ps));
	ps.restart = restart;
	run_profiles(&ps);

	for (size_t i = 0; i < ps.n_promotes; i++)
		cr_assert(in_set(ps.deallocs_major, ps.n_deallocs_major, ps.promotes[i]),
			  "a promoted block never got dealloc_major");
	for (size_t i = 0; i < ps.n_deallocs_minor; i++) {
		cr_assert(in_set(ps.allocs, ps.n_allocs, ps.deallocs_minor[i]));
		cr_assert(!in_set(ps.deallocs_major, ps.n_deallocs_major, ps.deallocs_minor[i]));
	}
	for (size_t i = 0; i < ps.n_deallocs_major; i++)
		cr_assert(in_set(ps.allocs, ps.n_allocs, ps.deallocs_major[i]));
	for (size_t i = 0; i < ps.n_allocs; i++)
		cr_assert(in_set(ps.deallocs_minor, ps.n_deallocs_minor, ps.allocs[i]) ||
			      in_set(ps.deallocs_major, ps.n_deallocs_major, ps.allocs[i]),
			  "an allocated block was never deallocated");
	cr_assert_eq(ps.n_allocs, restart ? RESTART_ALLOCS : NO_RESTART_ALLOCS);
	cr_assert_eq(ps.words, restart ? RESTART_WORDS : NO_RESTART_WORDS);
}

TestSuite(stop_start_in_callback, .init = harness_setup, .fini = harness_teardown);

Test(stop_start_in_callback, restart)
{
	check_stop_start(1);
}

Test(stop_start_in_callback, no_restart)
{
	check_stop_start(0);
}

static void check_discard(int restart)
{
	static profiles ps;
	memset(&ps, 0, sizeof(ps));
	ps.restart = restart;
	ps.discard = 1;
	run_profiles(&ps);
	cr_assert_eq(ps.n_promotes + ps.n_deallocs_minor + ps.n_deallocs_major, 0,
		     "callbacks ran for blocks of discarded profiles");
	cr_assert_eq(ps.n_allocs, restart ? RESTART_ALLOCS : NO_RESTART_ALLOCS);
	cr_assert_eq(ps.words, restart ? RESTART_WORDS : NO_RESTART_WORDS);
	memprof_stats st;
	memprof_get_stats(&st);
	cr_assert_eq(st.tracked, 0);
}

TestSuite(discard_in_callback, .init = harness_setup, .fini = harness_teardown);

Test(discard_in_callback, restart)
{
	check_discard(1);
}

Test(discard_in_callback, no_restart)
{
	check_discard(0);
}

/* ---- memprof_sampling_here: on, and not inside a callback ---- */

static int here_alloc_minor(void *arg, const memprof_allocation *info, memprof_value *out)
{
	int *inside = arg;
	(void)info;
	*inside = memprof_sampling_here();
	*out = MEMPROF_NONE;
	return 0;
}

Test(start_stop, sampling_here)
{
	int inside = -1;
	memprof_tracker t = {.alloc_minor = here_alloc_minor, .arg = &inside};
	rt_value v;
	cr_assert_eq(memprof_sampling_here(), 0, "not sampling before start");
	cr_assert_eq(memprof_start(1.0, 0, &t), 0);
	cr_assert_eq(memprof_sampling_here(), 1);
	cr_assert_eq(rt_alloc(1, 0, &v), 0);
	cr_assert_eq(inside, 0, "sampling is off inside a callback");
	cr_assert_eq(memprof_stop(), 0);
	cr_assert_eq(memprof_sampling_here(), 0, "not sampling after stop");
	cr_assert_eq(memprof_start(0.0, 0, &t), 0);
	cr_assert_eq(memprof_sampling_here(), 0, "rate 0 samples nothing");
	cr_assert_eq(memprof_stop(), 0);
}
