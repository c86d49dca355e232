/*
 * memprof_debug_check: every invariant of the table (memprof_debug.h) is
 * checked, by name.  A real table is built through the toy host (runtime
 * samples with call stacks, malloc-style blocks, a minor collection, one
 * more young sample), then memprof_debug_corrupt breaks one invariant and
 * the check must name exactly that one, and pass again once it is undone.
 * Also: the check holds inside a callback (busy entry), for any number of
 * profiles, and the sanitized build's MEMPROF_ASSERTs abort on a broken
 * table.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <criterion/criterion.h>

#include "memprof.h"
#include "memprof_debug.h"
#include "memprof_host.h"
#include "toy_host.h"

#define STACK_FRAMES 4
#define MAJOR_BLOCKS 6
#define MALLOC_BLOCKS 3

static uint64_t handles[MALLOC_BLOCKS];

/* Old user data (not in the toy minor heap), so entries can stay below young. */
static int keep_alloc(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	*out = (memprof_value)(0x1000 + 16 * info->id);
	return 0;
}

static int keep_promote(void *arg, memprof_value data, memprof_value *out)
{
	(void)arg;
	*out = data;
	return 0;
}

static const memprof_tracker keeper = {
    .alloc_minor = keep_alloc,
    .alloc_major = keep_alloc,
    .promote = keep_promote,
};

/* A table with old and young, runtime and malloc-style entries, all alive. */
static void build_table(void)
{
	static const size_t sizes[] = {3, 4};
	uintptr_t base = 0;

	toy_init();
	toy.survive = 1;
	cr_assert_eq(memprof_start(1.0, STACK_FRAMES, &keeper), 0);
	for (size_t i = 0; i < MAJOR_BLOCKS; i++)
		memprof_track_major((memprof_value)(0x100000 + 64 * i), 2);
	for (size_t i = 0; i < MALLOC_BLOCKS; i++)
		cr_assert_eq(
		    memprof_track_malloc((memprof_value)(0x200000 + 64 * i), 4, 1, 0, &handles[i]),
		    0);
	cr_assert_eq(toy_alloc(2, sizes, &base), 0);
	toy_minor_gc();
	cr_assert_eq(memprof_run_postponed(), 0);
	cr_assert_eq(toy_alloc(2, sizes, &base), 0); /* young again: young < len */
	cr_assert_eq(memprof_run_postponed(), 0);

	struct memprof_debug_indexes ix;
	memprof_debug_get_indexes(&ix);
	cr_assert_eq(ix.len, MAJOR_BLOCKS + MALLOC_BLOCKS + 4);
	cr_assert_lt(ix.young, ix.len);
	cr_assert_gt(ix.young, 0);
	char msg[256];
	cr_assert_eq(memprof_debug_check_report(msg, sizeof(msg)), MEMPROF_INV_OK, "%s", msg);
}

/* Break `inv`, see the check name it, undo, see the check pass. */
static void expect_caught(int inv)
{
	char msg[256];

	build_table();
	cr_assert_eq(memprof_debug_corrupt(inv), 0, "cannot break: %s",
		     memprof_debug_invariant_text(inv));
	int got = memprof_debug_check_report(msg, sizeof(msg));
	cr_expect_eq(got, inv, "broke \"%s\", the check reported %d: %s",
		     memprof_debug_invariant_text(inv), got, msg);
	cr_expect_neq(strstr(msg, memprof_debug_invariant_text(inv)), NULL,
		      "the report names the invariant: %s", msg);
	cr_assert_eq(memprof_debug_corrupt(MEMPROF_INV_OK), 0);
	got = memprof_debug_check_report(msg, sizeof(msg));
	cr_assert_eq(got, MEMPROF_INV_OK, "after the undo: %s", msg);
	cr_assert_eq(memprof_stop(), 0);
	cr_assert_eq(memprof_discard(), 0);
}

#define CAUGHT(name, inv)                                                                          \
	Test(invariants, name)                                                                     \
	{                                                                                          \
		expect_caught(inv);                                                                \
	}

CAUGHT(len_cap, MEMPROF_INV_LEN_CAP)
CAUGHT(young_len, MEMPROF_INV_YOUNG_LEN)
CAUGHT(callback_len, MEMPROF_INV_CALLBACK_LEN)
CAUGHT(delete_len, MEMPROF_INV_DELETE_LEN)
CAUGHT(id, MEMPROF_INV_ID)
CAUGHT(n_samples, MEMPROF_INV_N_SAMPLES)
CAUGHT(source, MEMPROF_INV_SOURCE)
CAUGHT(idx_ptr, MEMPROF_INV_IDX_PTR)
CAUGHT(unbound_busy, MEMPROF_INV_UNBOUND_BUSY)
CAUGHT(promoted_young, MEMPROF_INV_PROMOTED_YOUNG)
CAUGHT(promote_done, MEMPROF_INV_PROMOTE_DONE)
CAUGHT(deleted_index, MEMPROF_INV_DELETED_INDEX)
CAUGHT(deleted_profile, MEMPROF_INV_DELETED_PROFILE)
CAUGHT(data_none, MEMPROF_INV_DATA_NONE)
CAUGHT(stack, MEMPROF_INV_STACK)
CAUGHT(young_suffix, MEMPROF_INV_YOUNG_SUFFIX)
CAUGHT(callback_suffix, MEMPROF_INV_CALLBACK_SUFFIX)
CAUGHT(handle, MEMPROF_INV_HANDLE)
CAUGHT(id_unique, MEMPROF_INV_ID_UNIQUE)
CAUGHT(n_deleted, MEMPROF_INV_N_DELETED)
CAUGHT(handle_count, MEMPROF_INV_HANDLE_COUNT)
CAUGHT(profile_refs, MEMPROF_INV_PROFILE_REFS)
CAUGHT(profile_stopped, MEMPROF_INV_PROFILE_STOPPED)

Test(invariants, every_code_has_a_test_and_a_text)
{
	/* The CAUGHT list above covers 1 .. MEMPROF_INV_COUNT - 1. */
	cr_assert_eq(MEMPROF_INV_COUNT, 24, "a new invariant needs its CAUGHT test");
	for (int i = 0; i < MEMPROF_INV_COUNT; i++)
		cr_assert_str_neq(memprof_debug_invariant_text(i), "unknown invariant");
	cr_assert_str_eq(memprof_debug_invariant_text(MEMPROF_INV_COUNT), "unknown invariant");
}

Test(invariants, report_names_the_entry)
{
	char msg[256];

	build_table();
	cr_assert_eq(memprof_debug_corrupt(MEMPROF_INV_N_SAMPLES), 0);
	cr_assert_eq(memprof_debug_check_report(msg, sizeof(msg)), MEMPROF_INV_N_SAMPLES);
	cr_assert_eq(strncmp(msg, "entry 0 (id ", 12), 0, "%s", msg);
	cr_assert_eq(memprof_debug_corrupt(MEMPROF_INV_OK), 0);
	cr_assert_eq(memprof_debug_corrupt(MEMPROF_INV_OK), EINVAL, "nothing left to undo");
	cr_assert_eq(memprof_debug_corrupt(MEMPROF_INV_COUNT), EINVAL);
	cr_assert_eq(memprof_stop(), 0);
}

Test(invariants, malloc_invariants_need_a_malloc_entry)
{
	toy_init();
	cr_assert_eq(memprof_start(1.0, 0, &keeper), 0);
	memprof_track_major((memprof_value)0x100000, 2);
	cr_assert_eq(memprof_debug_corrupt(MEMPROF_INV_HANDLE), ENOENT);
	cr_assert_eq(memprof_debug_check(), MEMPROF_INV_OK);
	cr_assert_eq(memprof_stop(), 0);
}

/* ---- The check from inside a callback: the running entry is busy ---- */

static int checks_inside, check_inside_result = -1;

static int check_in_alloc(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	(void)info;
	checks_inside++;
	check_inside_result = memprof_debug_check();
	*out = (memprof_value)0x30;
	return 0;
}

/* The alloc callback of a runtime sample with a call stack: the stack was
 * handed to the callback, and the busy entry keeps none. */
Test(invariants, holds_inside_a_callback)
{
	memprof_tracker t = {.alloc_major = check_in_alloc};

	toy_init();
	cr_assert_eq(memprof_start(1.0, STACK_FRAMES, &t), 0);
	memprof_track_major((memprof_value)0x100000, 2);
	cr_assert_eq(memprof_run_postponed(), 0);
	cr_assert_eq(checks_inside, 1);
	cr_assert_eq(check_inside_result, MEMPROF_INV_OK, "inside the callback: %s",
		     memprof_debug_invariant_text(check_inside_result));
	cr_assert_eq(memprof_debug_check(), MEMPROF_INV_OK);
	cr_assert_eq(memprof_stop(), 0);
}

/* ---- Any number of profiles ---- */

#define PROFILES 100

Test(invariants, any_number_of_profiles)
{
	char msg[256];

	toy_init();
	for (size_t p = 0; p < PROFILES; p++) {
		cr_assert_eq(memprof_start(1.0, 0, &keeper), 0);
		memprof_track_major((memprof_value)(0x100000 + 64 * p), 2);
		cr_assert_eq(memprof_run_postponed(), 0);
		if (p + 1 < PROFILES)
			cr_assert_eq(memprof_stop(), 0);
	}
	cr_assert_eq(memprof_debug_check_report(msg, sizeof(msg)), MEMPROF_INV_OK, "%s", msg);
	/* The sampling profile is the PROFILES-th one the check meets. */
	cr_assert_eq(memprof_debug_corrupt(MEMPROF_INV_PROFILE_REFS), 0);
	cr_assert_eq(memprof_debug_check_report(msg, sizeof(msg)), MEMPROF_INV_PROFILE_REFS, "%s",
		     msg);
	cr_assert_eq(memprof_debug_corrupt(MEMPROF_INV_OK), 0);
	cr_assert_eq(memprof_stop(), 0);
	cr_assert_eq(memprof_discard(), 0);
	cr_assert_eq(memprof_debug_check(), MEMPROF_INV_OK);
}

/* ---- MEMPROF_ASSERT (sanitized build: -DMEMPROF_DEBUG) ---- */

#ifdef MEMPROF_DEBUG
/* A handle that maps to the wrong entry: freeing its block trips the
 * assertion in memprof_block_freed instead of freeing another block. */
Test(invariants, assert_aborts_on_a_wrong_handle, .signal = SIGABRT)
{
	build_table();
	cr_assert_eq(memprof_debug_corrupt(MEMPROF_INV_HANDLE), 0);
	for (size_t i = 0; i < MALLOC_BLOCKS; i++)
		memprof_block_freed(handles[i]);
}

/* young beyond len: a minor collection trips the assertion in
 * memprof_scan_young_roots instead of scanning nothing. */
Test(invariants, assert_aborts_on_young_beyond_len, .signal = SIGABRT)
{
	build_table();
	cr_assert_eq(memprof_debug_corrupt(MEMPROF_INV_YOUNG_LEN), 0);
	toy_minor_gc();
}
#endif
