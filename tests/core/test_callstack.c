/*
 * Call stacks through the core's own unwinder: whatever entry point took
 * the sample (malloc-style, runtime samples postponed to a safe point, the
 * minor-heap trigger, bulk unmarshal), the first frame is the return
 * address into the function that called the core, and none is in the
 * core's code.  A host's own code (memprof_host_ops.own_code) is dropped
 * the same way: here a toy "host entry" in its own section, toy_host_text,
 * whose bounds the linker provides, as rt does for its whole runtime.
 */
#include <string.h>
#include <criterion/criterion.h>

#include "memprof.h"
#include "memprof_host.h"
#include "toy_host.h"

#define FRAMES 8
/* A return address lies within this many bytes of its function's start:
 * the callers below are a few calls long (toy_alloc longer, with ASan). */
#define NEAR 256
#define NEAR_TOY_ALLOC 2048

static uintptr_t first[16];
static size_t n_stacks, last_len;

static int record(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	if (n_stacks < 16)
		first[n_stacks++] = info->callstack_len ? info->callstack[0] : 0;
	last_len = info->callstack_len;
	*out = MEMPROF_NONE;
	return 0;
}

static const memprof_tracker recorder = {.alloc_minor = record, .alloc_major = record};

static volatile uintptr_t sink; /* keeps calls from being tail calls */

/* ---- Callers of each core entry point (noinline, not tail calls) ---- */

__attribute__((noinline)) void via_track_malloc(void)
{
	uint64_t h;
	memprof_track_malloc((memprof_value)0x1000, 4, 1, 1, &h);
	sink++;
}

__attribute__((noinline)) void via_track_major(void)
{
	memprof_track_major((memprof_value)0x2000, 4);
	sink++;
}

__attribute__((noinline)) void via_track_young_runtime(void)
{
	memprof_track_young_runtime((memprof_value)0x3000, 4);
	sink++;
}

__attribute__((noinline)) void via_track_custom(void)
{
	memprof_track_custom((memprof_value)0x4000, 4096);
	sink++;
}

__attribute__((noinline)) void via_track_intern(void)
{
	static const memprof_value blocks[] = {0x5000};
	static const size_t sizes[] = {4};
	memprof_track_intern(1, blocks, sizes);
	sink++;
}

__attribute__((noinline)) void via_track_young(void)
{
	static const size_t sizes[] = {4};
	uintptr_t base;
	toy_alloc(1, sizes, &base);
	sink++;
}

static void setup(void)
{
	toy_init();
	memset(first, 0, sizeof(first));
	n_stacks = 0;
	cr_assert_eq(memprof_start(1.0, FRAMES, &recorder), 0);
}

static void teardown(void)
{
	memprof_stop();
	memprof_discard();
}

TestSuite(core_callstack, .init = setup, .fini = teardown);

static void expect_first_within(void (*caller)(void), uintptr_t near, const char *name)
{
	uintptr_t lo = (uintptr_t)caller;

	cr_assert_eq(memprof_run_postponed(), 0);
	cr_assert_geq(n_stacks, 1, "%s: no sample", name);
	for (size_t i = 0; i < n_stacks; i++)
		cr_expect(first[i] > lo && first[i] < lo + near,
			  "%s: sample %zu starts at %#lx, not in its caller at %#lx", name, i,
			  (unsigned long)first[i], (unsigned long)lo);
	cr_expect_geq(last_len, 2, "%s: the caller's caller is there too", name);
}

static void expect_first_in(void (*caller)(void), const char *name)
{
	expect_first_within(caller, NEAR, name);
}

Test(core_callstack, track_malloc)
{
	via_track_malloc();
	expect_first_in(via_track_malloc, "memprof_track_malloc");
}

Test(core_callstack, track_major)
{
	via_track_major();
	expect_first_in(via_track_major, "memprof_track_major");
}

Test(core_callstack, track_young_runtime)
{
	via_track_young_runtime();
	expect_first_in(via_track_young_runtime, "memprof_track_young_runtime");
}

Test(core_callstack, track_custom)
{
	via_track_custom();
	expect_first_in(via_track_custom, "memprof_track_custom");
}

Test(core_callstack, track_intern)
{
	via_track_intern();
	expect_first_in(via_track_intern, "memprof_track_intern");
}

/* toy_alloc is in the test binary, not in own_code: its frame is first. */
Test(core_callstack, track_young)
{
	via_track_young();
	expect_first_within((void (*)(void))toy_alloc, NEAR_TOY_ALLOC,
			    "memprof_track_young (from toy_alloc)");
}

/* ---- A host's own code ---- */

extern const char __start_toy_host_text[], __stop_toy_host_text[];

/* A host entry point, in the host's own code, that samples. */
__attribute__((noinline, section("toy_host_text"))) void toy_host_entry(void)
{
	memprof_track_major((memprof_value)0x6000, 4);
	sink++;
}

__attribute__((noinline)) void via_host_entry(void)
{
	toy_host_entry();
	sink++;
}

Test(core_callstack, host_code_is_dropped)
{
	toy_set_own_code((uintptr_t)__start_toy_host_text, (uintptr_t)__stop_toy_host_text);
	via_host_entry();
	expect_first_in(via_host_entry, "through the host's own code");
}

Test(core_callstack, host_code_is_kept_when_not_declared)
{
	via_host_entry();
	expect_first_in(toy_host_entry, "through an undeclared host entry");
}
