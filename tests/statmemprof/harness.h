/*
 * Shared helpers of the statmemprof scenarios (tests/statmemprof): a fixture that
 * sets up the reference runtime, a tracker that records the life of every
 * tracked block and checks the order of its callbacks, a heap array to keep
 * blocks alive, and the 5.7-sigma binomial bound.
 */
#ifndef TESTS_STATMEMPROF_HARNESS_H
#define TESTS_STATMEMPROF_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "memprof.h"
#include "rt.h"

/* Seed of every scenario, so runs are reproducible. */
#define HARNESS_SEED 0x5eed5eedu
/* Deadlock guard for the threaded scenarios, in seconds. */
#define HARNESS_THREAD_TIMEOUT 60
/* Frames asked of the core for each sample. */
#define HARNESS_CALLSTACK_SIZE 16

/* Criterion fixture: rt_init with the default minor heap, fixed seed. */
void harness_setup(void);
/* Stop and discard any profile, then rt_shutdown. */
void harness_teardown(void);

/* Run the postponed callbacks; the scenario expects no error from them. */
void harness_settle(void);

/* memprof_debug_check: every invariant of the core holds now.  Scenarios
 * call it after each step (outside callbacks). */
void harness_check(const char *step);

/* Exact when p == 1; otherwise within_binomial (testlib.h: 5.7 sigma). */
void harness_assert_binomial(const char *what, uint64_t observed, double trials, double p);

/* ---- Callstacks ---- */
/* The address range of an exported function (needs -rdynamic), from its ELF symbol. */
typedef struct fn_range {
	uintptr_t lo;
	uintptr_t hi;
} fn_range;
fn_range harness_fn_range(void *fn);
/* Does the callstack hold a return address inside the function? */
int harness_stack_has(const memprof_allocation *info, fn_range r);

/* ---- A heap array of values kept alive (a global root) ---- */
typedef struct keeper {
	rt_value array;
	size_t cap;
	size_t len;
} keeper;
/* Allocates the array directly in the major heap: call before sampling. */
void keeper_init(keeper *k, size_t cap);
void keeper_push(keeper *k, rt_value v);
void keeper_clear(keeper *k);
void keeper_free(keeper *k);

/* ---- The lifecycle recorder ---- */
enum block_state {
	BLOCK_MINOR = 1, /* alloc_minor ran */
	BLOCK_MAJOR,	 /* alloc_major ran */
	BLOCK_PROMOTED,	 /* promote ran */
	BLOCK_DEAD_MINOR,
	BLOCK_DEAD_MAJOR,
};

typedef struct block_record {
	uint64_t id;
	size_t size;
	size_t n_samples;
	enum memprof_source source;
	enum block_state state;
	int born_major;
} block_record;

struct lifecycle;
/* Decides whether a sampled block is tracked (1) or not (0). */
typedef int (*lifecycle_filter)(struct lifecycle *lc, const memprof_allocation *info, int major);

typedef struct lifecycle {
	block_record *recs;
	size_t len;
	size_t cap;
	/* Callbacks run, by kind. */
	uint64_t n_alloc_minor;
	uint64_t n_alloc_major;
	uint64_t n_promote;
	uint64_t n_dealloc_minor;
	uint64_t n_dealloc_major;
	/* Samples seen by the alloc callbacks, tracked or not. */
	uint64_t samples_minor;
	uint64_t samples_major;
	/* Violations seen inside callbacks; reported by lifecycle_assert_ok. */
	unsigned errors;
	char first_error[256];
	lifecycle_filter filter; /* NULL: track every block */
	/* Allocate this many small blocks inside each callback (not sampled). */
	size_t alloc_in_callback;
	/* If not NULL, run inside each callback too (more allocation, say). */
	void (*callback_work)(struct lifecycle *lc);
	void *ctx;
} lifecycle;

void lifecycle_init(lifecycle *lc);
void lifecycle_free(lifecycle *lc);
memprof_tracker lifecycle_tracker(lifecycle *lc);
/* Record a violation (for scenario-specific checks inside callbacks). */
void lifecycle_fail(lifecycle *lc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* No violation was recorded. */
void lifecycle_assert_ok(const lifecycle *lc);
/* Every tracked block got its dealloc: nothing is still being tracked. */
void lifecycle_assert_all_dead(const lifecycle *lc);
/* Callback counts are consistent with the records. */
void lifecycle_assert_balanced(const lifecycle *lc);
/* Number of records in a state. */
size_t lifecycle_count(const lifecycle *lc, enum block_state state);

#endif
