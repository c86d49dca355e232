/*
 * Random operations on a toy host, fixed seeds: after every operation the
 * table's invariants hold (memprof_debug_check), and every block's
 * callbacks follow its life: alloc, then at most one promote, then one
 * dealloc of the right kind, nothing after tracking ended.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "memprof.h"
#include "memprof_debug.h"
#include "memprof_host.h"
#include "toy_host.h"

#define FUZZ_OPS 20000
#define MAX_IDS (1u << 20)
#define YOUNG_DATA_MAX 4000
#define ERR_CODE 9

enum life { L_NONE, L_MINOR, L_MAJOR, L_DONE, L_DISCARDED };

static unsigned char *state; /* by entry id */
static uint64_t young_slot_id[YOUNG_DATA_MAX];
static unsigned young_slots;
static unsigned seed;
static unsigned bad;
static uint64_t max_id;

/* The threaded fuzz: a runtime lock that callbacks sometimes release. */
static pthread_mutex_t runtime_lock = PTHREAD_MUTEX_INITIALIZER;
static int threaded;
static unsigned long ops_done;	  /* operations completed, all threads */
static unsigned long interleaved; /* blocking sections in which others ran */

static void runtime_acquire(void)
{
	pthread_mutex_lock(&runtime_lock);
	memprof_thread_switched();
	toy.trigger = memprof_renew_minor_sample(toy.young_ptr, toy.young_start);
}

/* A blocking section inside a callback: other threads run meanwhile. */
static void maybe_block(void)
{
	if (!threaded || rand_r(&seed) % 8)
		return;
	unsigned long before = ops_done;
	pthread_mutex_unlock(&runtime_lock);
	sched_yield();
	runtime_acquire();
	if (ops_done != before)
		interleaved++;
}

/* memprof_discard: blocks still followed get no more callbacks. */
static void forget_followed(void)
{
	for (uint64_t id = 1; id <= max_id; id++)
		if (state[id] == L_MINOR || state[id] == L_MAJOR)
			state[id] = L_DISCARDED;
}

static uint64_t data_id(memprof_value d)
{
	uintptr_t start = toy.young_start;
	uintptr_t end = toy.young_end;

	if (d & 1)
		return d >> 1;
	if (d >= start + toy.moved_offset && d < end + toy.moved_offset)
		d -= toy.moved_offset;
	if (d >= start && d < end)
		return young_slot_id[(d - start) / sizeof(uintptr_t)];
	bad++;
	return 0;
}

/* Data for a callback that keeps tracking: odd (old) or a young value. */
static int give_data(uint64_t id, memprof_value *out)
{
	unsigned r = rand_r(&seed) % 100;

	if (r < 5)
		return ERR_CODE;
	if (r < 10) {
		*out = MEMPROF_NONE;
		return 0;
	}
	if (r < 20 && young_slots < YOUNG_DATA_MAX) {
		young_slot_id[young_slots] = id;
		*out = toy.young_start + young_slots++ * sizeof(uintptr_t);
		return 0;
	}
	*out = (memprof_value)(id << 1 | 1);
	return 0;
}

/* Check and record one callback; then maybe block (a callback that began
 * before a discard may end after it). */
static void move(uint64_t id, enum life from, enum life to)
{
	if (id == 0 || id >= MAX_IDS || state[id] != from)
		bad++;
	else
		state[id] = to;
	maybe_block();
}

static int f_alloc(uint64_t id, enum life kind, memprof_value *out)
{
	if (id > max_id && id < MAX_IDS)
		max_id = id;
	move(id, L_NONE, kind);
	int err = give_data(id, out);
	if (err || *out == MEMPROF_NONE)
		state[id] = L_DONE;
	return err;
}
static int f_alloc_minor(void *a, const memprof_allocation *info, memprof_value *out)
{
	(void)a;
	return f_alloc(info->id, L_MINOR, out);
}
static int f_alloc_major(void *a, const memprof_allocation *info, memprof_value *out)
{
	(void)a;
	return f_alloc(info->id, L_MAJOR, out);
}
static int f_promote(void *a, memprof_value d, memprof_value *out)
{
	(void)a;
	uint64_t id = data_id(d);
	move(id, L_MINOR, L_MAJOR);
	int err = give_data(id, out);
	if ((err || *out == MEMPROF_NONE) && id < MAX_IDS)
		state[id] = L_DONE;
	return err;
}
static int f_dealloc_minor(void *a, memprof_value d)
{
	(void)a;
	move(data_id(d), L_MINOR, L_DONE);
	return rand_r(&seed) % 50 == 0 ? ERR_CODE : 0;
}
static int f_dealloc_major(void *a, memprof_value d)
{
	(void)a;
	move(data_id(d), L_MAJOR, L_DONE);
	return 0;
}

static const memprof_tracker fuzz_tracker = {
    .alloc_minor = f_alloc_minor,
    .alloc_major = f_alloc_major,
    .promote = f_promote,
    .dealloc_minor = f_dealloc_minor,
    .dealloc_major = f_dealloc_major,
};

static void one_op(void)
{
	static const size_t sizes[] = {1, 3, 0, 7, 2, 5, 4, 1};
	unsigned r = rand_r(&seed) % 100;
	uintptr_t base;
	int err;

	if (r < 40) {
		size_t n = 1 + rand_r(&seed) % 8;
		err = toy_alloc(n, sizes, &base);
		cr_assert(err == 0 || err == ERR_CODE, "toy_alloc: %d", err);
	} else if (r < 50) {
		memprof_track_major((memprof_value)(0x7000000 + 16 * (rand_r(&seed) % 100000)),
				    1 + rand_r(&seed) % 50);
	} else if (r < 55) {
		memprof_track_young_runtime(toy.young_start + 8 * (rand_r(&seed) % 64), 3);
	} else if (r < 58) {
		memprof_track_custom((memprof_value)0x7100000, 8 * (1 + rand_r(&seed) % 64));
	} else if (r < 70) {
		err = memprof_run_postponed();
		cr_assert(err == 0 || err == ERR_CODE, "run_postponed: %d", err);
	} else if (r < 82) {
		toy_minor_gc();
	} else if (r < 88) {
		toy_minor_gc(); /* a major collection starts with a minor one */
		memprof_major_update();
	} else if (r < 91) {
		if (memprof_stop() == 0 && rand_r(&seed) % 2) {
			cr_assert_eq(memprof_discard(), 0);
			forget_followed();
		}
		cr_assert_eq(memprof_start(0.05 + (rand_r(&seed) % 10) / 20.0, 2, &fuzz_tracker),
			     0);
	} else {
		static const size_t one = 6;
		err = toy_alloc(1, &one, &base);
		cr_assert(err == 0 || err == ERR_CODE);
	}
}

static void run_fuzz(unsigned op_seed, size_t table_limit)
{
	state = calloc(MAX_IDS, 1);
	cr_assert_not_null(state);
	toy_init();
	toy.survive = -1;
	toy.major_dead = -1;
	toy.rand_seed = 12345;
	seed = op_seed;
	memprof_set_seed(4242);
	memprof_debug_set_table_limit(table_limit);
	cr_assert_eq(memprof_start(0.2, 2, &fuzz_tracker), 0);
	for (int i = 0; i < FUZZ_OPS; i++) {
		one_op();
		cr_assert_eq(memprof_debug_check(), 0, "invariants after op %d", i);
		cr_assert_eq(bad, 0, "callback order broken at op %d", i);
	}
	/* Everything dies: every block still tracked gets its dealloc. */
	memprof_stop();
	toy.survive = 0;
	toy.major_dead = 1;
	toy_minor_gc();
	memprof_major_update();
	while (memprof_run_postponed() != 0)
		;
	cr_assert_eq(memprof_debug_check(), 0);
	memprof_stats st;
	memprof_get_stats(&st);
	cr_assert_eq(bad, 0);
	cr_assert_gt(st.samples, 1000, "the fuzz sampled enough");
	/* Every block still followed got its dealloc: only discarded ones did not. */
	size_t unfinished = 0;
	for (uint64_t id = 1; id < MAX_IDS; id++)
		if (state[id] == L_MINOR || state[id] == L_MAJOR)
			unfinished++;
	cr_log_info(
	    "fuzz: samples %lu callbacks %lu dropped %lu tracked %lu unfinished %zu young data %u",
	    (unsigned long)st.samples, (unsigned long)st.callbacks, (unsigned long)st.dropped,
	    (unsigned long)st.tracked, unfinished, young_slots);
	cr_assert_eq(unfinished, 0, "blocks without their dealloc");
	free(state);
}

Test(fuzz, random_operations_keep_the_invariants)
{
	run_fuzz(777, 0);
}

/* A small table: samples are dropped, the rest still holds. */
Test(fuzz, random_operations_with_a_full_table)
{
	run_fuzz(31, 40);
	memprof_stats st;
	memprof_get_stats(&st);
	cr_assert_gt(st.dropped, 0);
}

#define THREADS 3
#define THREAD_OPS 4000

static void *fuzz_thread(void *arg)
{
	(void)arg;
	memprof_set_seed((uint64_t)(uintptr_t)arg);
	for (int i = 0; i < THREAD_OPS; i++) {
		runtime_acquire();
		one_op();
		ops_done++;
		if (memprof_debug_check() != 0)
			bad += 1000;
		pthread_mutex_unlock(&runtime_lock);
	}
	return NULL;
}

/* The runtime-lock model: callbacks release the lock (blocking sections)
 * while other threads allocate, collect and run other blocks' callbacks. */
Test(fuzz, threads_with_blocking_callbacks)
{
	pthread_t th[THREADS];

	state = calloc(MAX_IDS, 1);
	cr_assert_not_null(state);
	toy_init();
	toy.survive = -1;
	toy.major_dead = -1;
	toy.rand_seed = 99;
	seed = 5;
	threaded = 1;
	cr_assert_eq(memprof_start(0.2, 2, &fuzz_tracker), 0);
	for (uintptr_t i = 0; i < THREADS; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, fuzz_thread, (void *)(i + 1)), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	threaded = 0;
	cr_assert_eq(bad, 0, "invariants or callback order broken: %u", bad);
	memprof_stop();
	toy.survive = 0;
	toy.major_dead = 1;
	toy_minor_gc();
	memprof_major_update();
	while (memprof_run_postponed() != 0)
		;
	cr_assert_eq(memprof_debug_check(), 0);
	size_t unfinished = 0;
	for (uint64_t id = 1; id < MAX_IDS; id++)
		if (state[id] == L_MINOR || state[id] == L_MAJOR)
			unfinished++;
	memprof_stats st;
	memprof_get_stats(&st);
	cr_log_info("threaded fuzz: samples %lu callbacks %lu unfinished %zu interleaved %lu",
		    (unsigned long)st.samples, (unsigned long)st.callbacks, unfinished,
		    interleaved);
	cr_assert_gt(interleaved, 0, "callbacks blocked while other threads worked");
	cr_assert_gt(st.samples, 1000);
	cr_assert_eq(unfinished, 0);
	cr_assert_eq(bad, 0);
	free(state);
}
