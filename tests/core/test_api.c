/* Return codes of memprof_start / stop / discard and their use in callbacks. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>

#include "memprof.h"
#include "memprof_host.h"

Test(api, start_rejects_bad_rates)
{
	cr_expect_eq(memprof_start(NAN, 0, NULL), EINVAL);
	cr_expect_eq(memprof_start(-0.1, 0, NULL), EINVAL);
	cr_expect_eq(memprof_start(1.5, 0, NULL), EINVAL);
	cr_expect_eq(memprof_start(INFINITY, 0, NULL), EINVAL);
	cr_expect_eq(memprof_current_rate(), 0.0);
}

Test(api, start_stop_discard_codes)
{
	cr_expect_eq(memprof_stop(), EINVAL, "stop while not sampling");
	cr_expect_eq(memprof_start(0.0, 0, NULL), 0, "rate 0 is valid");
	cr_expect_eq(memprof_start(0.5, 0, NULL), EBUSY);
	cr_expect_eq(memprof_discard(), EBUSY, "discard while sampling");
	cr_expect_eq(memprof_stop(), 0);
	cr_expect_eq(memprof_stop(), EINVAL);
	cr_expect_eq(memprof_discard(), 0);
	cr_expect_eq(memprof_start(1.0, 4, NULL), 0, "rate 1 is valid");
	cr_expect_eq(memprof_current_rate(), 1.0);
	cr_expect_eq(memprof_stop(), 0);
	cr_expect_eq(memprof_current_rate(), 0.0);
}

static int in_cb_codes[4];

static int start_stop_in_callback(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	(void)info;
	in_cb_codes[0] = memprof_start(0.5, 0, NULL);
	in_cb_codes[1] = memprof_stop();
	in_cb_codes[2] = memprof_discard();
	in_cb_codes[3] = memprof_sampling_here();
	*out = 1;
	return 0;
}

Test(api, start_stop_legal_inside_callback)
{
	memprof_tracker t = {.alloc_major = start_stop_in_callback};
	uint64_t handle = 0;

	cr_assert_eq(memprof_start(1.0, 0, &t), 0);
	cr_assert_eq(memprof_track_malloc(0x1000, 4, 1, 1, &handle), 0);
	cr_expect_eq(in_cb_codes[0], EBUSY);
	cr_expect_eq(in_cb_codes[1], 0, "stop from inside the callback");
	cr_expect_eq(in_cb_codes[2], 0, "discard once stopped, from inside the callback");
	cr_expect_eq(in_cb_codes[3], 0, "no sampling inside a callback");
	cr_expect_eq(handle, 0, "discarded while its own callback ran");
	cr_expect_eq(memprof_stop(), EINVAL);
	memprof_stats st;
	memprof_get_stats(&st);
	cr_expect_eq(st.tracked, 0);
}

Test(api, null_tracker_tracks_nothing)
{
	uint64_t handle = 1;
	memprof_tracker empty = {0};

	cr_assert_eq(memprof_start(1.0, 0, NULL), 0);
	cr_assert_eq(memprof_track_malloc(0x1000, 4, 1, 0, &handle), 0);
	cr_expect_eq(handle, 0, "alloc of a NULL tracker returns NONE");
	cr_assert_eq(memprof_stop(), 0);
	cr_assert_eq(memprof_start(1.0, 0, &empty), 0);
	memprof_track_major(0x2000, 3);
	cr_assert_eq(memprof_run_postponed(), 0);
	memprof_stats st;
	memprof_get_stats(&st);
	cr_expect_eq(st.samples, 2);
	cr_expect_eq(st.tracked, 0);
	cr_expect_eq(st.callbacks, 0);
	cr_assert_eq(memprof_stop(), 0);
}

static size_t deep_len;
static int deep_alloc(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	deep_len = info->callstack_len;
	*out = MEMPROF_NONE;
	return 0;
}

Test(api, huge_callstack_size_is_capped)
{
	memprof_tracker t = {.alloc_major = deep_alloc};
	uint64_t handle;

	cr_assert_eq(memprof_start(1.0, SIZE_MAX, &t), 0);
	cr_assert_eq(memprof_track_malloc(0x1000, 4, 1, 1, &handle), 0);
	cr_expect_gt(deep_len, 0);
	cr_expect_lt(deep_len, 4096);
	cr_assert_eq(memprof_stop(), 0);
}
