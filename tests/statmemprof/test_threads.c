/*
 * blocking_in_callback, moved_while_blocking, thread_exit_in_callback: the
 * systhreads model.  Callbacks may release the runtime lock (blocking
 * sections) so that another thread runs callbacks meanwhile; the collector
 * may move user data while a callback blocks; a thread may exit inside a
 * callback, which ends the tracking of that block only.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <unistd.h>

#include "harness.h"

static pthread_t main_tid;
static atomic_uint violations;

static int on_main_thread(void)
{
	return pthread_equal(pthread_self(), main_tid);
}

static void violation(void)
{
	atomic_fetch_add(&violations, 1);
}

static void setup(void)
{
	harness_setup();
	main_tid = pthread_self();
	atomic_store(&violations, 0);
}

/* ---- blocking_in_callback ---- */

/*
 * OCaml's count (100,000 callbacks) and sizes: the main thread allocates
 * even sizes, the other odd ones, 2 * (1..200) + parity words, so about a
 * third are major blocks.  Every COMB_EVERY-th allocation is a combined one
 * of COMB_N small blocks.  What memprof.h promises, checked here:
 *
 * - alloc_minor of a minor-heap sample runs at the allocation, on the
 *   allocating thread, placeholders of a combined allocation included: while
 *   one thread blocks in the callback of block k, the other thread's safe
 *   points must not run blocks k+1.. (they are busy).  Each alloc_minor must
 *   see its own thread's parity.
 * - alloc_major is postponed to a safe point of any thread (unlike OCaml
 *   4.12+, which keeps it for the allocating thread): it may see either
 *   parity, but it sees a major size, once per block.
 */
#define ALLOC_TOT 100000
#define SIZE_CHOICES 200
#define COMB_EVERY 8
#define COMB_N 3
#define COMB_SIZE_CHOICES 64

static int pipe_a[2], pipe_b[2];
static unsigned cb_main, cb_other, alloc_num, wrong_thread, wrong_kind, major_elsewhere;
static unsigned n_minor_cb, n_major_cb;
static uint64_t cb_ids[ALLOC_TOT];
static int stopped;

static void write_byte(int fd)
{
	char c = 'a';
	if (write(fd, &c, 1) != 1)
		violation();
}

static void read_byte(int fd)
{
	char c;
	if (read(fd, &c, 1) != 1)
		violation();
}

/*
 * Each callback posts a token to the other thread's pipe, then waits for
 * one on its own: the threads take turns, one blocked in a callback while
 * the other runs.  The last callback only posts.
 */
static int ping_pong(const memprof_allocation *info, int minor, memprof_value *out)
{
	*out = MEMPROF_NONE;
	if (stopped)
		return 0;
	unsigned n = cb_main + cb_other;
	int do_stop = n + 1 >= ALLOC_TOT;
	if (do_stop)
		stopped = 1;
	int main = on_main_thread();
	if (main)
		cb_main++;
	else
		cb_other++;
	cb_ids[n] = info->id;
	int even = info->size % 2 == 0;
	if (minor) {
		n_minor_cb++;
		if (info->size > RT_MAX_YOUNG_WOSIZE)
			wrong_kind++;
		/* Said at once: the core may crash later on such a bug. */
		if (even != main && wrong_thread++ == 0)
			cr_log_error("alloc_minor of a %zu-word block ran on the %s thread",
				     info->size, main ? "main" : "other");
	} else {
		n_major_cb++;
		if (info->size <= RT_MAX_YOUNG_WOSIZE)
			wrong_kind++;
		if (even != main)
			major_elsewhere++; /* allowed: postponed */
	}
	rt_enter_blocking_section();
	write_byte(main ? pipe_b[1] : pipe_a[1]);
	if (!do_stop)
		read_byte(main ? pipe_a[0] : pipe_b[0]);
	rt_leave_blocking_section();
	*out = RT_VAL_INT(1);
	return 0;
}

static int ping_pong_minor(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	return ping_pong(info, 1, out);
}

static int ping_pong_major(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	return ping_pong(info, 0, out);
}

/* arg: 0 for even sizes (the main thread), 1 for odd ones. */
static void *allocate_until_done(void *arg)
{
	size_t parity = (size_t)(uintptr_t)arg;
	unsigned seed = 1 + (unsigned)parity;
	while (alloc_num < ALLOC_TOT) {
		alloc_num++;
		seed = seed * 1103515245u + 12345u;
		unsigned r = seed >> 16;
		rt_value v[COMB_N];
		int err;
		if (r % COMB_EVERY == 0) {
			size_t sizes[COMB_N];
			for (size_t k = 0; k < COMB_N; k++)
				sizes[k] =
				    2 * ((r >> (4 + 6 * k)) % COMB_SIZE_CHOICES + 1) + parity;
			err = rt_alloc_comb(COMB_N, sizes, 0, v);
		} else {
			err = rt_alloc(2 * ((r >> 3) % SIZE_CHOICES + 1) + parity, 0, v);
		}
		if (err != 0)
			violation();
	}
	if (rt_poll() != 0)
		violation();
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

Test(blocking_in_callback, two_pipes_ping_pong, .init = setup, .fini = harness_teardown,
     .timeout = HARNESS_THREAD_TIMEOUT)
{
	memprof_tracker t = {.alloc_minor = ping_pong_minor, .alloc_major = ping_pong_major};
	rt_thread *th;

	cr_assert_eq(pipe(pipe_a), 0);
	cr_assert_eq(pipe(pipe_b), 0);
	cr_assert_eq(memprof_start(1.0, HARNESS_CALLSTACK_SIZE, &t), 0);
	cr_assert_eq(rt_thread_create(&th, allocate_until_done, (void *)(uintptr_t)1), 0);
	allocate_until_done((void *)(uintptr_t)0);
	cr_assert_eq(rt_thread_join(th, NULL), 0);
	cr_assert_eq(memprof_stop(), 0);

	cr_log_info("alloc_minor %u, alloc_major %u (%u on the other thread)", n_minor_cb,
		    n_major_cb, major_elsewhere);
	cr_assert_eq(atomic_load(&violations), 0, "failed pipe I/O or allocation");
	cr_assert_eq(wrong_thread, 0,
		     "%u alloc_minor callbacks ran on a thread that did not allocate the block",
		     wrong_thread);
	cr_assert_eq(wrong_kind, 0, "%u alloc callbacks of the wrong kind for the size",
		     wrong_kind);
	cr_assert_eq(cb_main + cb_other, ALLOC_TOT, "callbacks until the stop");
	qsort(cb_ids, ALLOC_TOT, sizeof(cb_ids[0]), cmp_u64);
	for (size_t i = 1; i < ALLOC_TOT; i++)
		cr_assert_neq(cb_ids[i], cb_ids[i - 1], "two alloc callbacks for block %llu",
			      (unsigned long long)cb_ids[i]);
	cr_assert_gt(n_major_cb, ALLOC_TOT / 5, "major blocks: %u", n_major_cb);
	cr_assert_geq(cb_main + 1, cb_other, "main %u, other %u", cb_main, cb_other);
	cr_assert_geq(cb_other + 1, cb_main, "main %u, other %u", cb_main, cb_other);
	cr_assert_gt(cb_other, 0, "the other thread ran callbacks");
	/* Every token was consumed but the last one. */
	close(pipe_a[1]);
	close(pipe_b[1]);
	char c;
	ssize_t left = read(pipe_a[0], &c, 1) + read(pipe_b[0], &c, 1);
	cr_assert_eq(left, 1, "tokens left in the pipes: %zd", left);
}

/* ---- moved_while_blocking ---- */

#define MINOR_MAGIC 0x11
#define MAJOR_MAGIC 0x22
#define PROMOTED_MAGIC 0x33
#define DATA_TAG 7
#define BIG_WOSIZE 1000

static sem_t t2_begin, t2_promoting, t2_finish_promote, t2_done;
static rt_value global_ref = RT_UNIT;
static unsigned n_promote, n_dealloc_major, n_alloc_major, n_alloc_minor;
static unsigned last_dealloc_magic;

static void await(sem_t *s)
{
	rt_enter_blocking_section();
	while (sem_wait(s) != 0)
		;
	rt_leave_blocking_section();
}

/* A young block [magic, serial] used as user data. */
static memprof_value make_data(intptr_t magic, intptr_t serial)
{
	rt_value v;
	if (rt_alloc(2, DATA_TAG, &v) != 0) {
		violation();
		return MEMPROF_NONE;
	}
	rt_store_field(v, 0, RT_VAL_INT(magic));
	rt_store_field(v, 1, RT_VAL_INT(serial));
	return v;
}

static int data_is(memprof_value v, intptr_t magic)
{
	return v != MEMPROF_NONE && !RT_IS_INT(v) && rt_tag(v) == DATA_TAG && rt_wosize(v) == 2 &&
	       rt_field(v, 0) == RT_VAL_INT(magic);
}

static int mwb_alloc_minor(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	(void)info;
	n_alloc_minor++;
	*out = make_data(MINOR_MAGIC, n_alloc_minor);
	return 0;
}

static int mwb_alloc_major(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	(void)info;
	n_alloc_major++;
	*out = make_data(MAJOR_MAGIC, n_alloc_major);
	return 0;
}

static int mwb_promote(void *arg, memprof_value minor_data, memprof_value *out)
{
	(void)arg;
	rt_value md = minor_data, p = RT_UNIT;
	RT_ROOTS(2, &md, &p);
	n_promote++;
	if (!data_is(md, MINOR_MAGIC))
		violation();
	p = make_data(PROMOTED_MAGIC, n_promote);
	if (!rt_is_young(p))
		violation();
	sem_post(&t2_promoting);
	/* The main thread collects while this callback is blocked. */
	await(&t2_finish_promote);
	if (rt_is_young(p))
		violation(); /* a minor collection ran: p was moved */
	if (!data_is(md, MINOR_MAGIC) || !data_is(p, PROMOTED_MAGIC) ||
	    rt_field(p, 1) != RT_VAL_INT(n_promote))
		violation();
	*out = p;
	RT_ROOTS_END();
	return 0;
}

static int mwb_dealloc_major(void *arg, memprof_value data)
{
	(void)arg;
	n_dealloc_major++;
	if (data_is(data, MAJOR_MAGIC))
		last_dealloc_magic = MAJOR_MAGIC;
	else if (data_is(data, PROMOTED_MAGIC))
		last_dealloc_magic = PROMOTED_MAGIC;
	else
		violation();
	return 0;
}

static void *t2_main(void *arg)
{
	(void)arg;
	await(&t2_begin);
	rt_value r;
	if (rt_alloc(1, 0, &r) != 0)
		violation();
	global_ref = r;
	rt_minor_gc();
	/* The promote callback runs here, in this thread, and blocks. */
	if (rt_poll() != 0)
		violation();
	global_ref = RT_UNIT;
	sem_post(&t2_done);
	return NULL;
}

Test(moved_while_blocking, promote_blocks_during_gcs, .init = setup, .fini = harness_teardown,
     .timeout = HARNESS_THREAD_TIMEOUT)
{
	memprof_tracker t = {.alloc_minor = mwb_alloc_minor,
			     .alloc_major = mwb_alloc_major,
			     .promote = mwb_promote,
			     .dealloc_major = mwb_dealloc_major};
	rt_value big = RT_UNIT;
	rt_thread *th;

	sem_init(&t2_begin, 0, 0);
	sem_init(&t2_promoting, 0, 0);
	sem_init(&t2_finish_promote, 0, 0);
	sem_init(&t2_done, 0, 0);
	rt_register_global(&global_ref);
	RT_ROOTS(1, &big);
	cr_assert_eq(rt_thread_create(&th, t2_main, NULL), 0);
	cr_assert_eq(memprof_start(1.0, HARNESS_CALLSTACK_SIZE, &t), 0);

	cr_assert_eq(rt_alloc(BIG_WOSIZE, 0, &big), 0);
	cr_assert_eq(rt_poll(), 0);
	cr_assert_eq(n_alloc_major, 1, "alloc_major of the big block");
	sem_post(&t2_begin);
	await(&t2_promoting);

	/* T2 is blocked in its promote callback: collect, moving its data. */
	big = RT_UNIT;
	rt_minor_gc();
	rt_major_gc();
	cr_assert_eq(rt_poll(), 0);
	cr_assert_eq(n_dealloc_major, 1, "the big block died");
	cr_assert_eq(last_dealloc_magic, MAJOR_MAGIC);
	sem_post(&t2_finish_promote);
	await(&t2_done);

	rt_minor_gc();
	rt_major_gc();
	cr_assert_eq(rt_poll(), 0);
	cr_assert_eq(n_promote, 1);
	cr_assert_eq(n_dealloc_major, 2, "T2's block died after its promote returned");
	cr_assert_eq(last_dealloc_magic, PROMOTED_MAGIC, "dealloc_major got promote's data");
	cr_assert_eq(memprof_stop(), 0);
	cr_assert_eq(rt_thread_join(th, NULL), 0);
	RT_ROOTS_END();
	rt_unregister_global(&global_ref);
	cr_assert_eq(atomic_load(&violations), 0, "user data wrong after blocking");
}

/* ---- thread_exit_in_callback ---- */

#define MAIN_BLOCKS 10

enum exit_point { EXIT_IN_ALLOC_MINOR, EXIT_IN_ALLOC_MAJOR, EXIT_IN_PROMOTE, EXIT_IN_COMB };

/* EXIT_IN_COMB: the other thread exits in the alloc callback of this block. */
#define COMB_EXIT_AT 2

static enum exit_point exit_point;
static unsigned te_allocs_main, te_allocs_other, te_n_promote, te_n_dealloc, te_n_other_dealloc;

static int te_alloc(int major, memprof_value *out)
{
	*out = MEMPROF_NONE;
	if (!on_main_thread()) {
		te_allocs_other++;
		if ((exit_point == EXIT_IN_ALLOC_MINOR && !major) ||
		    (exit_point == EXIT_IN_ALLOC_MAJOR && major) ||
		    (exit_point == EXIT_IN_COMB && te_allocs_other == COMB_EXIT_AT))
			rt_thread_exit(NULL);
		*out = RT_VAL_INT(-1); /* tracked, marked as the other thread's */
		return 0;
	}
	te_allocs_main++;
	*out = RT_VAL_INT(te_allocs_main);
	return 0;
}

static int te_alloc_minor(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	(void)info;
	return te_alloc(0, out);
}

static int te_alloc_major(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	(void)info;
	return te_alloc(1, out);
}

static int te_promote_cb(void *arg, memprof_value data, memprof_value *out)
{
	(void)arg;
	*out = data;
	if (data == RT_VAL_INT(-1)) {
		if (on_main_thread() || exit_point != EXIT_IN_PROMOTE)
			violation();
		else
			rt_thread_exit(NULL);
	}
	if (!RT_IS_INT(data) || RT_INT_VAL(data) < 1 || RT_INT_VAL(data) > (intptr_t)te_allocs_main)
		violation();
	te_n_promote++;
	return 0;
}

static int te_dealloc_cb(void *arg, memprof_value data)
{
	(void)arg;
	if (data == RT_VAL_INT(-1) && exit_point == EXIT_IN_COMB) {
		/* A block before the exit in the combined allocation: it never
		 * came to exist; a simulated dealloc is allowed, once. */
		te_n_other_dealloc++;
		return 0;
	}
	if (!RT_IS_INT(data) || RT_INT_VAL(data) < 1 || RT_INT_VAL(data) > (intptr_t)te_allocs_main)
		violation(); /* a callback for the block whose thread exited */
	te_n_dealloc++;
	return 0;
}

static void *te_thread(void *arg)
{
	(void)arg;
	rt_value v = RT_UNIT;
	switch (exit_point) {
	case EXIT_IN_ALLOC_MINOR:
		rt_alloc(1, 0, &v);
		break;
	case EXIT_IN_ALLOC_MAJOR:
		if (rt_alloc_major(4, 0, &v) == 0)
			rt_poll();
		break;
	case EXIT_IN_COMB: {
		static const size_t sizes[] = {1, 2, 3};
		rt_value out[3];
		rt_alloc_comb(3, sizes, 0, out);
		break;
	}
	case EXIT_IN_PROMOTE:
		if (rt_alloc(1, 0, &global_ref) == 0) {
			rt_minor_gc();
			rt_poll();
		}
		break;
	}
	violation(); /* the callback should have ended this thread */
	return NULL;
}

static void check_thread_exit(enum exit_point where)
{
	memprof_tracker t = {.alloc_minor = te_alloc_minor,
			     .alloc_major = te_alloc_major,
			     .promote = te_promote_cb,
			     .dealloc_minor = te_dealloc_cb,
			     .dealloc_major = te_dealloc_cb};
	rt_value keep = RT_UNIT;
	rt_thread *th;

	exit_point = where;
	global_ref = RT_UNIT;
	rt_register_global(&global_ref);
	RT_ROOTS(1, &keep);
	cr_assert_eq(memprof_start(1.0, HARNESS_CALLSTACK_SIZE, &t), 0);
	cr_assert_eq(rt_thread_create(&th, te_thread, NULL), 0);
	cr_assert_eq(rt_thread_join(th, NULL), 0);
	cr_assert_eq(te_allocs_other, where == EXIT_IN_COMB ? COMB_EXIT_AT : 1,
		     "the other thread's callbacks ran once each");

	/* The process keeps working; the main thread's blocks keep callbacks. */
	cr_assert_eq(rt_alloc(MAIN_BLOCKS, 0, &keep), 0);
	for (int i = 0; i < MAIN_BLOCKS; i++) {
		rt_value v;
		cr_assert_eq(rt_alloc(1, 0, &v), 0);
		rt_store_field(keep, i, v);
	}
	cr_assert_eq(te_allocs_main, MAIN_BLOCKS + 1);
	rt_minor_gc();
	cr_assert_eq(rt_poll(), 0);
	cr_assert_eq(te_n_promote, MAIN_BLOCKS + 1);
	keep = RT_UNIT;
	global_ref = RT_UNIT;
	rt_minor_gc();
	rt_major_gc();
	cr_assert_eq(rt_poll(), 0);
	cr_assert_eq(te_n_dealloc, MAIN_BLOCKS + 1, "the main thread's blocks died");
	memprof_stats st;
	memprof_get_stats(&st);
	cr_assert_eq(st.tracked, 0, "%llu entries left", (unsigned long long)st.tracked);
	cr_assert_eq(memprof_stop(), 0);
	RT_ROOTS_END();
	rt_unregister_global(&global_ref);
	cr_assert_leq(te_n_other_dealloc, 1);
	cr_assert_eq(atomic_load(&violations), 0, "callbacks for the exited thread's block");
}

TestSuite(thread_exit_in_callback, .init = setup, .fini = harness_teardown,
	  .timeout = HARNESS_THREAD_TIMEOUT);

Test(thread_exit_in_callback, alloc_minor)
{
	check_thread_exit(EXIT_IN_ALLOC_MINOR);
}

Test(thread_exit_in_callback, alloc_major)
{
	check_thread_exit(EXIT_IN_ALLOC_MAJOR);
}

Test(thread_exit_in_callback, combined_allocation)
{
	check_thread_exit(EXIT_IN_COMB);
}

Test(thread_exit_in_callback, promote)
{
	check_thread_exit(EXIT_IN_PROMOTE);
}

/* ---- callbacks of two threads interleaved, each one releasing the lock ---- */

#define STRESS_ITERS 20000
#define STRESS_RATE 0.05
#define STRESS_MAX_RECORDS 200000
#define STRESS_SLOTS 256
#define STRESS_GC_EVERY 1000

enum { REC_MINOR = 1, REC_MAJOR, REC_PROMOTED, REC_DEAD };

typedef struct stress_rec {
	unsigned char state;
	unsigned char busy;
} stress_rec;

static stress_rec *recs;
static atomic_size_t n_recs;
static pthread_mutex_t recs_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned stress_threads_seen[2];

/* Enter a callback for record i: it must not be running another one. */
static stress_rec *stress_enter(memprof_value data)
{
	if (!RT_IS_INT(data) || RT_INT_VAL(data) < 0 ||
	    (size_t)RT_INT_VAL(data) >= atomic_load(&n_recs)) {
		violation();
		return NULL;
	}
	stress_rec *r = &recs[RT_INT_VAL(data)];
	pthread_mutex_lock(&recs_lock);
	if (r->busy)
		violation(); /* two callbacks of one block at once */
	r->busy = 1;
	pthread_mutex_unlock(&recs_lock);
	return r;
}

static void stress_leave(stress_rec *r, int from_a, int from_b, int to)
{
	pthread_mutex_lock(&recs_lock);
	if (r->state != from_a && r->state != from_b)
		violation();
	r->state = (unsigned char)to;
	r->busy = 0;
	pthread_mutex_unlock(&recs_lock);
}

/* Let the other thread run (and run its own callbacks) meanwhile. */
static void stress_release_lock(void)
{
	stress_threads_seen[!on_main_thread()]++;
	rt_enter_blocking_section();
	sched_yield();
	rt_leave_blocking_section();
}

static int stress_alloc(int major, memprof_value *out)
{
	size_t i = atomic_fetch_add(&n_recs, 1);
	*out = MEMPROF_NONE;
	if (i >= STRESS_MAX_RECORDS) {
		violation();
		return 0;
	}
	recs[i].state = major ? REC_MAJOR : REC_MINOR;
	recs[i].busy = 1;
	stress_release_lock();
	pthread_mutex_lock(&recs_lock);
	recs[i].busy = 0;
	pthread_mutex_unlock(&recs_lock);
	*out = RT_VAL_INT(i);
	return 0;
}

static int stress_alloc_minor(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	(void)info;
	return stress_alloc(0, out);
}

static int stress_alloc_major(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	(void)info;
	return stress_alloc(1, out);
}

static int stress_promote(void *arg, memprof_value data, memprof_value *out)
{
	(void)arg;
	*out = data;
	stress_rec *r = stress_enter(data);
	if (!r)
		return 0;
	stress_release_lock();
	stress_leave(r, REC_MINOR, REC_MINOR, REC_PROMOTED);
	return 0;
}

static int stress_dealloc_minor(void *arg, memprof_value data)
{
	(void)arg;
	stress_rec *r = stress_enter(data);
	if (!r)
		return 0;
	stress_release_lock();
	stress_leave(r, REC_MINOR, REC_MINOR, REC_DEAD);
	return 0;
}

static int stress_dealloc_major(void *arg, memprof_value data)
{
	(void)arg;
	stress_rec *r = stress_enter(data);
	if (!r)
		return 0;
	stress_release_lock();
	stress_leave(r, REC_MAJOR, REC_PROMOTED, REC_DEAD);
	return 0;
}

static rt_value stress_slots[2] = {RT_UNIT, RT_UNIT};

static void *stress_mutator(void *arg)
{
	uintptr_t who = (uintptr_t)arg;
	uint32_t rng = HARNESS_SEED + (uint32_t)who;
	for (int i = 0; i < STRESS_ITERS; i++) {
		rng = rng * 1664525u + 1013904223u;
		uint32_t r = rng >> 8;
		rt_value v;
		int err =
		    r % 64 == 0 ? rt_alloc_major(1 + r % 16, 0, &v) : rt_alloc(1 + r % 16, 0, &v);
		if (err)
			violation();
		else if (r % 3 == 0)
			rt_store_field(stress_slots[who], (r >> 8) % STRESS_SLOTS, v);
		if (i % STRESS_GC_EVERY == STRESS_GC_EVERY - 1) {
			if ((i / STRESS_GC_EVERY) % 4 == 3)
				rt_major_gc();
			else
				rt_minor_gc();
		}
		if (rt_poll() != 0)
			violation();
	}
	return NULL;
}

Test(callbacks_across_threads, interleaved_blocking_callbacks, .init = setup,
     .fini = harness_teardown, .timeout = HARNESS_THREAD_TIMEOUT)
{
	memprof_tracker t = {.alloc_minor = stress_alloc_minor,
			     .alloc_major = stress_alloc_major,
			     .promote = stress_promote,
			     .dealloc_minor = stress_dealloc_minor,
			     .dealloc_major = stress_dealloc_major};
	rt_thread *th;

	recs = calloc(STRESS_MAX_RECORDS, sizeof(*recs));
	cr_assert_not_null(recs);
	for (int k = 0; k < 2; k++) {
		rt_register_global(&stress_slots[k]);
		cr_assert_eq(rt_alloc_major(STRESS_SLOTS, 0, &stress_slots[k]), 0);
	}
	memprof_set_seed(HARNESS_SEED);
	cr_assert_eq(memprof_start(STRESS_RATE, HARNESS_CALLSTACK_SIZE, &t), 0);
	cr_assert_eq(rt_thread_create(&th, stress_mutator, (void *)(uintptr_t)1), 0);
	stress_mutator((void *)(uintptr_t)0);
	cr_assert_eq(rt_thread_join(th, NULL), 0);
	cr_assert_eq(memprof_stop(), 0);

	stress_slots[0] = stress_slots[1] = RT_UNIT;
	for (int k = 0; k < 3; k++) {
		rt_minor_gc();
		rt_major_gc();
		cr_assert_eq(rt_poll(), 0);
	}
	size_t n = atomic_load(&n_recs);
	cr_assert_eq(atomic_load(&violations), 0,
		     "callbacks of one block ran concurrently or out of order");
	cr_assert_gt(n, 1000);
	cr_assert_gt(stress_threads_seen[0], 0);
	cr_assert_gt(stress_threads_seen[1], 0, "the second thread ran no callback");
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(recs[i].state, REC_DEAD, "block %zu of %zu never got its dealloc", i,
			     n);
	for (int k = 0; k < 2; k++)
		rt_unregister_global(&stress_slots[k]);
	free(recs);
}
