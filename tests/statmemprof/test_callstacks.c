/*
 * callstacks: the callstack of a sample holds the return addresses of the
 * code that allocated, innermost first.  Each allocation comes from a known
 * noinline function; its address range comes from its ELF symbol (the
 * binary is linked with -rdynamic, so dladdr1 sees it).
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define MAX_FRAMES HARNESS_CALLSTACK_SIZE

typedef struct captured {
	uintptr_t frames[MAX_FRAMES];
	size_t len;
	size_t n;
	size_t max_len;
	enum memprof_source source;
	int major;
} captured;

static int capture(captured *c, const memprof_allocation *info, int major)
{
	if (info->callstack_len > c->max_len)
		c->max_len = info->callstack_len;
	if (c->n++ == 0) {
		c->len = info->callstack_len < MAX_FRAMES ? info->callstack_len : MAX_FRAMES;
		memcpy(c->frames, info->callstack, c->len * sizeof(uintptr_t));
		c->source = info->source;
		c->major = major;
	}
	return 0;
}

static int capture_minor(void *arg, const memprof_allocation *info, memprof_value *out)
{
	*out = MEMPROF_NONE;
	return capture(arg, info, 0);
}

static int capture_major(void *arg, const memprof_allocation *info, memprof_value *out)
{
	*out = MEMPROF_NONE;
	return capture(arg, info, 1);
}

/* Index of the first frame inside fn, or -1. */
static int frame_in(const captured *c, void *fn)
{
	fn_range r = harness_fn_range(fn);
	for (size_t i = 0; i < c->len; i++) {
		/* A return address follows its call: it may equal the end. */
		if (c->frames[i] > r.lo && c->frames[i] <= r.hi)
			return (int)i;
	}
	return -1;
}

static captured cap;
static memprof_tracker capture_tracker = {
    .alloc_minor = capture_minor,
    .alloc_major = capture_major,
    .arg = &cap,
};

static void start_capture(size_t callstack_size)
{
	memset(&cap, 0, sizeof(cap));
	cr_assert_eq(memprof_start(1.0, callstack_size, &capture_tracker), 0);
}

static void stop_capture(void)
{
	cr_assert_eq(rt_poll(), 0);
	cr_assert_eq(memprof_stop(), 0);
	cr_assert_gt(cap.n, 0, "no sample");
}

__attribute__((noinline)) void callstacks_alloc_minor_here(void)
{
	rt_value v;
	cr_assert_eq(rt_alloc(5, 0, &v), 0);
}

__attribute__((noinline)) void callstacks_alloc_minor_outer(void)
{
	callstacks_alloc_minor_here();
	cr_assert_eq(rt_poll(), 0);
}

__attribute__((noinline)) void callstacks_alloc_major_here(void)
{
	rt_value v;
	cr_assert_eq(rt_alloc(1000, 0, &v), 0);
}

__attribute__((noinline)) void callstacks_alloc_comb_here(void)
{
	static const size_t sizes[] = {3, 4, 5};
	rt_value out[3];
	cr_assert_eq(rt_alloc_comb(3, sizes, 0, out), 0);
}

__attribute__((noinline)) void callstacks_unmarshal_here(const void *data, size_t len)
{
	rt_value v;
	cr_assert_eq(rt_unmarshal(data, len, &v), 0);
}

static void custom_noop(void *data)
{
	(void)data;
}

__attribute__((noinline)) void callstacks_alloc_custom_here(void)
{
	rt_value v;
	cr_assert_eq(rt_alloc_custom(NULL, 4096, custom_noop, &v), 0);
}

static void assert_in(void *fn, const char *name)
{
	cr_assert_geq(frame_in(&cap, fn), 0, "no frame of %s among %zu frames", name, cap.len);
}

TestSuite(callstacks, .init = harness_setup, .fini = harness_teardown);

Test(callstacks, minor_innermost_first)
{
	start_capture(HARNESS_CALLSTACK_SIZE);
	callstacks_alloc_minor_outer();
	stop_capture();
	cr_assert_eq(cap.major, 0);
	int inner = frame_in(&cap, (void *)callstacks_alloc_minor_here);
	int outer = frame_in(&cap, (void *)callstacks_alloc_minor_outer);
	cr_assert_geq(inner, 0, "no frame of the allocating function");
	cr_assert_geq(outer, 0, "no frame of its caller");
	cr_assert_lt(inner, outer, "innermost frame first");
	cr_assert_leq(cap.max_len, HARNESS_CALLSTACK_SIZE);
}

Test(callstacks, major)
{
	start_capture(HARNESS_CALLSTACK_SIZE);
	callstacks_alloc_major_here();
	stop_capture();
	cr_assert_eq(cap.major, 1);
	assert_in((void *)callstacks_alloc_major_here, "callstacks_alloc_major_here");
}

Test(callstacks, combined)
{
	start_capture(HARNESS_CALLSTACK_SIZE);
	callstacks_alloc_comb_here();
	stop_capture();
	cr_assert_eq(cap.n, 3);
	assert_in((void *)callstacks_alloc_comb_here, "callstacks_alloc_comb_here");
}

Test(callstacks, unmarshal)
{
	rt_value a = RT_UNIT;
	void *data;
	size_t len;
	RT_ROOTS(1, &a);
	cr_assert_eq(rt_alloc(3, 0, &a), 0);
	cr_assert_eq(rt_marshal(a, &data, &len), 0);
	RT_ROOTS_END();
	start_capture(HARNESS_CALLSTACK_SIZE);
	callstacks_unmarshal_here(data, len);
	stop_capture();
	free(data);
	cr_assert_eq(cap.source, MEMPROF_SRC_MARSHAL);
	assert_in((void *)callstacks_unmarshal_here, "callstacks_unmarshal_here");
}

Test(callstacks, custom)
{
	start_capture(HARNESS_CALLSTACK_SIZE);
	callstacks_alloc_custom_here();
	stop_capture();
	assert_in((void *)callstacks_alloc_custom_here, "callstacks_alloc_custom_here");
}

Test(callstacks, size_limit)
{
	start_capture(2);
	for (int i = 0; i < 10; i++)
		callstacks_alloc_minor_outer();
	stop_capture();
	cr_assert_leq(cap.max_len, 2, "callstack of %zu frames with callstack_size 2", cap.max_len);
	cr_assert_gt(cap.max_len, 0);
}

Test(callstacks, size_zero)
{
	start_capture(0);
	callstacks_alloc_minor_outer();
	stop_capture();
	cr_assert_eq(cap.max_len, 0);
}
