/*
 * The malloc-style host path: direct callbacks, handles, young epochs,
 * callbacks blocked on one thread while another runs its own, the order of
 * one block's callbacks across threads, thread exit inside a callback.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>

#include "memprof.h"
#include "memprof_debug.h"
#include "memprof_host.h"
#include "toy_host.h"

#define MAX_EVENTS 64

struct log {
	pthread_mutex_t lock;
	char ev[MAX_EVENTS]; /* 'a', 'A', 'p', 'd', 'D' */
	uint64_t id[MAX_EVENTS];
	pthread_t who[MAX_EVENTS];
	size_t n;
	size_t last_stack_len;
	uintptr_t last_stack0;
};
static struct log lg = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void log_event(char ev, uint64_t id)
{
	pthread_mutex_lock(&lg.lock);
	if (lg.n < MAX_EVENTS) {
		lg.ev[lg.n] = ev;
		lg.id[lg.n] = id;
		lg.who[lg.n] = pthread_self();
		lg.n++;
	}
	pthread_mutex_unlock(&lg.lock);
}

static int ev_alloc_minor(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	log_event('a', info->id);
	lg.last_stack_len = info->callstack_len;
	lg.last_stack0 = info->callstack_len ? info->callstack[0] : 0;
	*out = (memprof_value)info->id;
	return 0;
}
static int ev_alloc_major(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	log_event('A', info->id);
	*out = (memprof_value)info->id;
	return 0;
}
static int ev_promote(void *arg, memprof_value d, memprof_value *out)
{
	(void)arg;
	log_event('p', d);
	*out = d;
	return 0;
}
static int ev_dealloc_minor(void *arg, memprof_value d)
{
	(void)arg;
	log_event('d', d);
	return 0;
}
static int ev_dealloc_major(void *arg, memprof_value d)
{
	(void)arg;
	log_event('D', d);
	return 0;
}

static const memprof_tracker ev_tracker = {
    .alloc_minor = ev_alloc_minor,
    .alloc_major = ev_alloc_major,
    .promote = ev_promote,
    .dealloc_minor = ev_dealloc_minor,
    .dealloc_major = ev_dealloc_major,
};

__attribute__((noinline)) static int track_here(memprof_value block, int major, uint64_t *h)
{
	int err = memprof_track_malloc(block, 8, 2, major, h);
	__asm__ volatile("" ::: "memory");
	return err;
}

Test(malloc_host, life_cycle_and_handles)
{
	uint64_t h1 = 0, h2 = 0, h3 = 0;

	cr_assert_eq(memprof_start(1.0, 8, &ev_tracker), 0);
	cr_assert_eq(track_here(0x1000, 0, &h1), 0);
	cr_assert_neq(h1, 0);
	cr_assert_eq(lg.n, 1);
	cr_assert_eq(lg.ev[0], 'a');
	cr_assert_eq(lg.id[0], h1, "the handle is the entry id");
	cr_assert_gt(lg.last_stack_len, 0, "a DWARF call stack");
	uintptr_t here = (uintptr_t)track_here;
	cr_assert(lg.last_stack0 > here && lg.last_stack0 < here + 256,
		  "first frame is the caller of the core (%#lx vs %#lx)",
		  (unsigned long)lg.last_stack0, (unsigned long)here);

	cr_assert_eq(track_here(0x2000, 0, &h2), 0);
	cr_assert_eq(track_here(0x3000, 1, &h3), 0);
	memprof_block_freed(h2); /* died young */
	memprof_epoch_end();	 /* h1 promoted; h3 was born major */
	memprof_block_freed(h1);
	memprof_block_freed(h3);
	memprof_block_freed(h3); /* twice: ignored */
	memprof_block_freed(0);
	memprof_block_freed(987654321);
	const char *want = "aaAdpDD";
	cr_assert_eq(lg.n, 7);
	for (size_t i = 0; i < 7; i++)
		cr_assert_eq(lg.ev[i], want[i], "event %zu: %c, want %c", i, lg.ev[i], want[i]);
	cr_assert_eq(lg.id[3], h2);
	cr_assert_eq(lg.id[4], h1);
	memprof_stats st;
	memprof_get_stats(&st);
	cr_assert_eq(st.tracked, 0);
	cr_assert_eq(st.callbacks, 7);
	cr_assert_eq(memprof_debug_check(), 0);
	cr_assert_eq(memprof_stop(), 0);
}

static int fail_alloc(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	(void)info;
	(void)out;
	return 42;
}

static int none_alloc(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	(void)info;
	*out = MEMPROF_NONE;
	return 0;
}

Test(malloc_host, errors_and_none_end_tracking)
{
	memprof_tracker t = {.alloc_major = fail_alloc, .alloc_minor = none_alloc};
	uint64_t h = 1;

	cr_assert_eq(memprof_track_malloc(0x1000, 4, 1, 1, &h), 0, "not sampling");
	cr_assert_eq(h, 0);
	cr_assert_eq(memprof_start(0.5, 0, &t), 0);
	cr_assert_eq(memprof_track_malloc(0x1000, 4, 1, 1, &h), 42);
	cr_assert_eq(h, 0);
	cr_assert_eq(memprof_track_malloc(0x2000, 4, 1, 0, &h), 0);
	cr_assert_eq(h, 0);
	memprof_stats st;
	memprof_get_stats(&st);
	cr_assert_eq(st.tracked, 0);
	cr_assert_eq(st.samples, 2);
	cr_assert_eq(memprof_stop(), 0);
}

/* ---- one thread blocks in a callback while another runs its own ---- */

static sem_t blocked_in_cb, release_cb;
static atomic_uint_fast64_t blocked_id;

static int blocking_alloc(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	if (info->size == 99) {
		atomic_store(&blocked_id, info->id);
		sem_post(&blocked_in_cb);
		sem_wait(&release_cb);
	}
	log_event('a', info->id);
	*out = (memprof_value)info->id;
	return 0;
}

static void *blocking_thread(void *arg)
{
	uint64_t h = 0;
	(void)arg;
	cr_assert_eq(memprof_track_malloc(0x5000, 99 * 8, 1, 1, &h), 0); /* 99 words */
	/* Freed while its alloc callback ran: not tracked any more. */
	cr_assert_eq(h, 0);
	return NULL;
}

Test(malloc_host, blocked_callback_does_not_block_others)
{
	memprof_tracker t = ev_tracker;
	t.alloc_major = blocking_alloc;
	pthread_t th;

	sem_init(&blocked_in_cb, 0, 0);
	sem_init(&release_cb, 0, 0);
	cr_assert_eq(memprof_start(1.0, 0, &t), 0);
	cr_assert_eq(pthread_create(&th, NULL, blocking_thread, NULL), 0);
	sem_wait(&blocked_in_cb);
	uint64_t bid = atomic_load(&blocked_id);

	/* The blocked block dies now: its dealloc must wait for its alloc. */
	memprof_block_freed(bid);
	/* Other blocks get their callbacks meanwhile, on this thread. */
	uint64_t h = 0;
	cr_assert_eq(memprof_track_malloc(0x6000, 4, 1, 1, &h), 0);
	memprof_block_freed(h);
	pthread_mutex_lock(&lg.lock);
	size_t n_before = lg.n;
	pthread_mutex_unlock(&lg.lock);
	cr_assert_eq(n_before, 2, "alloc and dealloc of the other block ran");

	sem_post(&release_cb);
	pthread_join(th, NULL);
	cr_assert_eq(lg.n, 4);
	cr_assert_eq(lg.ev[2], 'a');
	cr_assert_eq(lg.id[2], bid);
	cr_assert_eq(lg.ev[3], 'D', "dealloc after alloc, same block");
	cr_assert_eq(lg.id[3], bid);
	cr_assert(pthread_equal(lg.who[3], th), "run by the thread that held the block");
	memprof_stats st;
	memprof_get_stats(&st);
	cr_assert_eq(st.tracked, 0);
	cr_assert_eq(memprof_debug_check(), 0);
	cr_assert_eq(memprof_stop(), 0);
}

/* ---- thread exit inside a callback ---- */

static int exiting_alloc(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	(void)info;
	*out = 1;
	memprof_thread_exit();
	pthread_exit(NULL);
}

static void *exiting_malloc_thread(void *arg)
{
	uint64_t h;
	(void)arg;
	memprof_track_malloc(0x7000, 4, 1, 1, &h);
	return (void *)1; /* not reached */
}

Test(malloc_host, thread_exit_in_callback_ends_tracking)
{
	memprof_tracker t = {.alloc_major = exiting_alloc, .dealloc_major = ev_dealloc_major};
	pthread_t th;
	void *ret = (void *)2;

	cr_assert_eq(memprof_start(1.0, 0, &t), 0);
	cr_assert_eq(pthread_create(&th, NULL, exiting_malloc_thread, NULL), 0);
	pthread_join(th, &ret);
	cr_assert_null(ret);
	memprof_stats st;
	memprof_get_stats(&st);
	cr_assert_eq(st.tracked, 0, "as if the callback returned NONE");
	cr_assert_eq(memprof_debug_check(), 0);
	/* The core still works: the table is not wedged. */
	uint64_t h = 0;
	t.alloc_major = ev_alloc_major;
	cr_assert_eq(memprof_stop(), 0);
	cr_assert_eq(memprof_start(1.0, 0, &t), 0);
	cr_assert_eq(memprof_track_malloc(0x8000, 4, 1, 1, &h), 0);
	cr_assert_neq(h, 0);
	memprof_block_freed(h);
	cr_assert_eq(lg.n, 2);
	cr_assert_eq(lg.ev[1], 'D');
	cr_assert_eq(memprof_stop(), 0);
}

static void *exiting_young_thread(void *arg)
{
	static const size_t comb[] = {2, 2, 2};
	uintptr_t base;
	(void)arg;
	toy_alloc(3, comb, &base);
	return (void *)1;
}

static unsigned young_exit_calls;
static int exiting_alloc_minor(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	(void)info;
	*out = 1;
	if (++young_exit_calls == 2) {
		memprof_thread_exit();
		pthread_exit(NULL);
	}
	return 0;
}

Test(malloc_host, thread_exit_in_combined_allocation)
{
	memprof_tracker t = {.alloc_minor = exiting_alloc_minor};
	pthread_t th;
	void *ret = (void *)2;

	toy_init();
	uintptr_t before = toy.young_ptr;
	cr_assert_eq(memprof_start(1.0, 0, &t), 0);
	cr_assert_eq(pthread_create(&th, NULL, exiting_young_thread, NULL), 0);
	pthread_join(th, &ret);
	cr_assert_null(ret);
	cr_assert_eq(young_exit_calls, 2);
	cr_assert_eq(toy.young_ptr, before, "the combined allocation never happened");
	memprof_stats st;
	memprof_get_stats(&st);
	cr_assert_eq(st.tracked, 0, "its placeholders are gone");
	cr_assert_eq(memprof_debug_check(), 0);
	toy_minor_gc();
	cr_assert_eq(memprof_debug_check(), 0);
	cr_assert_eq(memprof_stop(), 0);
}

/* ---- many threads at once, no runtime lock ---- */

#define STRESS_THREADS 4
#define STRESS_ALLOCS 20000

static atomic_uint cb_allocs, cb_deallocs, cb_promotes;
static int st_alloc(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	atomic_fetch_add(&cb_allocs, 1);
	*out = (memprof_value)info->id;
	return 0;
}
static int st_promote(void *arg, memprof_value d, memprof_value *out)
{
	(void)arg;
	atomic_fetch_add(&cb_promotes, 1);
	*out = d;
	return 0;
}
static int st_dealloc(void *arg, memprof_value d)
{
	(void)arg;
	(void)d;
	atomic_fetch_add(&cb_deallocs, 1);
	return 0;
}

static void *stress_thread(void *arg)
{
	uint64_t live[16] = {0};
	uintptr_t base = (uintptr_t)arg << 32;

	memprof_set_seed((uint64_t)(uintptr_t)arg);
	for (size_t i = 0; i < STRESS_ALLOCS; i++) {
		size_t slot = i % 16;
		memprof_block_freed(live[slot]);
		live[slot] = 0;
		memprof_track_malloc(base + 16 * i, 4, 1, i % 3 == 0, &live[slot]);
		if (i % 1000 == 0)
			memprof_epoch_end();
	}
	for (size_t k = 0; k < 16; k++)
		memprof_block_freed(live[k]);
	return NULL;
}

Test(malloc_host, concurrent_threads)
{
	memprof_tracker t = {.alloc_minor = st_alloc,
			     .alloc_major = st_alloc,
			     .promote = st_promote,
			     .dealloc_minor = st_dealloc,
			     .dealloc_major = st_dealloc};
	pthread_t th[STRESS_THREADS];

	cr_assert_eq(memprof_start(1.0, 4, &t), 0);
	for (uintptr_t i = 0; i < STRESS_THREADS; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, stress_thread, (void *)(i + 1)), 0);
	for (int i = 0; i < STRESS_THREADS; i++)
		pthread_join(th[i], NULL);
	memprof_stats st;
	memprof_get_stats(&st);
	cr_assert_eq(cb_allocs, STRESS_THREADS * STRESS_ALLOCS);
	cr_assert_eq(cb_deallocs, cb_allocs, "every tracked block got its dealloc");
	cr_assert_eq(st.tracked, 0);
	cr_assert_eq(st.dropped, 0);
	cr_assert_eq(memprof_debug_check(), 0);
	cr_assert_eq(memprof_stop(), 0);
}

/* A safe point inside memprof_track_young's reserve runs a postponed
 * callback that exits the thread: the placeholders held by the outer
 * allocation are released too. */
static void *exiting_nested_thread(void *arg)
{
	static const size_t one = 2;
	uintptr_t base;
	(void)arg;
	memprof_track_major((memprof_value)0x9000, 4); /* alloc_major postponed */
	toy_alloc(1, &one, &base);
	return (void *)1;
}

Test(malloc_host, thread_exit_in_safe_point_inside_reserve)
{
	memprof_tracker t = {.alloc_major = exiting_alloc, .alloc_minor = ev_alloc_minor};
	pthread_t th;
	void *ret = (void *)2;

	toy_init();
	toy.safe_point_in_reserve = 1;
	cr_assert_eq(memprof_start(1.0, 0, &t), 0);
	cr_assert_eq(pthread_create(&th, NULL, exiting_nested_thread, NULL), 0);
	pthread_join(th, &ret);
	cr_assert_null(ret);
	cr_assert_eq(lg.n, 1);
	cr_assert_eq(lg.ev[0], 'a', "alloc_minor ran before reserve");
	memprof_stats st;
	memprof_get_stats(&st);
	cr_assert_eq(st.tracked, 0, "the held placeholder went with the thread");
	cr_assert_eq(memprof_debug_check(), 0);
	toy_minor_gc();
	memprof_major_update();
	cr_assert_eq(memprof_debug_check(), 0);
	cr_assert_eq(memprof_stop(), 0);
}
