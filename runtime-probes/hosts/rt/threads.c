/*
 * rt threads: the systhreads model.  One runtime ("master") lock; a thread
 * holds it except inside a blocking section.  rt_yield hands the lock to a
 * waiting thread if there is one.  After every acquisition the memprof core
 * hears that the running thread may have changed and a fresh minor sample
 * is drawn from the new thread's generator.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "rt_internal.h"

_Thread_local struct rt_thread *rt_self;

static struct {
	pthread_mutex_t mutex;
	pthread_cond_t free; /* broadcast when the lock is released */
	int busy;
	unsigned waiters;
	uint64_t acquisitions;
} master = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0};

static struct rt_thread main_thread;

static void master_take(void)
{
	master.waiters++;
	while (master.busy)
		pthread_cond_wait(&master.free, &master.mutex);
	master.waiters--;
	master.busy = 1;
	master.acquisitions++;
}

/* The running thread changed (or may have): tell memprof, redraw. */
static void thread_switched(void)
{
	rt_mp_thread_switched();
	rt_renew_minor_sample();
}

void rt_master_acquire(void)
{
	pthread_mutex_lock(&master.mutex);
	master_take();
	pthread_mutex_unlock(&master.mutex);
	thread_switched();
}

void rt_master_release(void)
{
	pthread_mutex_lock(&master.mutex);
	master.busy = 0;
	pthread_cond_broadcast(&master.free);
	pthread_mutex_unlock(&master.mutex);
}

int rt_threads_init(void)
{
	main_thread = (struct rt_thread){.tid = pthread_self(), .is_main = 1};
	rt_self = &main_thread;
	rt.threads = &main_thread;
	pthread_mutex_lock(&master.mutex);
	master_take();
	pthread_mutex_unlock(&master.mutex);
	return 0;
}

void rt_threads_shutdown(void)
{
	if (rt.threads != &main_thread || main_thread.next)
		fprintf(stderr, "rt: warning: rt_shutdown with other threads registered\n");
	rt_roots_free(&main_thread);
	rt.threads = NULL;
	rt_master_release();
}

static void unlink_thread(struct rt_thread *t)
{
	for (struct rt_thread **link = &rt.threads; *link; link = &(*link)->next) {
		if (*link == t) {
			*link = t->next;
			return;
		}
	}
}

_Noreturn void rt_thread_exit(void *ret)
{
	struct rt_thread *t = rt_self;

	if (t->is_main)
		rt_fatal("rt_thread_exit called by the main thread");
	rt_roots_free(t);
	unlink_thread(t);
	rt_mp_thread_exit();
	rt_self = NULL;
	rt_master_release();
	pthread_exit(ret);
}

static void *thread_start(void *arg)
{
	struct rt_thread *t = arg;

	rt_self = t;
	rt_master_acquire();
	rt_thread_exit(t->fn(t->arg));
}

int rt_thread_create(rt_thread **out, void *(*fn)(void *arg), void *arg)
{
	struct rt_thread *t = calloc(1, sizeof(*t));
	int err;

	if (!t)
		return ENOMEM;
	t->fn = fn;
	t->arg = arg;
	t->next = rt.threads;
	rt.threads = t;
	err = pthread_create(&t->tid, NULL, thread_start, t);
	if (err) {
		unlink_thread(t);
		free(t);
		return err;
	}
	*out = t;
	return 0;
}

int rt_thread_join(rt_thread *t, void **ret)
{
	int err;

	rt_enter_blocking_section();
	err = pthread_join(t->tid, ret);
	rt_leave_blocking_section();
	if (!err)
		free(t);
	return err;
}

void rt_enter_blocking_section(void)
{
	rt_master_release();
}

/*
 * Leaving a blocking section is a safe point, but a void one: rather than
 * run postponed callbacks here, where their error would be lost, it
 * requests a safe point, so they run at the thread's next allocation slow
 * path or rt_poll, which return the error.
 */
void rt_leave_blocking_section(void)
{
	rt_master_acquire();
	rt_request_safe_point();
}

void rt_yield(void)
{
	uint64_t seen;

	pthread_mutex_lock(&master.mutex);
	if (master.waiters == 0) {
		pthread_mutex_unlock(&master.mutex);
		return;
	}
	master.busy = 0;
	pthread_cond_broadcast(&master.free);
	seen = master.acquisitions;
	/* Let a waiter take the lock first, then queue for it again. */
	while (master.acquisitions == seen && master.waiters > 0)
		pthread_cond_wait(&master.free, &master.mutex);
	master_take();
	pthread_mutex_unlock(&master.mutex);
	thread_switched();
}
