/*
 * The idle flusher: while a tracer is attached, one thread of the malloc
 * host hands the tracer what waits in the core's queues.
 *
 * Samples and events are queued (runtime-probes/core/probes.c) and go to
 * the tracer when a queue fills, at the end of an epoch, and at a poll
 * (an allocation slow path) once they waited PROBE_EVENTS_MAX_AGE_NS.  A
 * program that stops allocating after a burst makes no poll: the tail of
 * the burst (up to a full queue, a quarter of a step of the timeline test)
 * would stay out of the live view, top and the timeline for as long as it
 * idles, and a flush the tracer asks for at detach would never be served.
 *
 * So the first slow path that sees the sample semaphore up starts this
 * thread (detached, all signals blocked, a small stack, named
 * "memprof-flush").  Every FLUSHER_PERIOD_NS it enters the core as any
 * allocating thread does (the core gate, so fork still finds no thread
 * inside) and calls memprof_probe_service, then looks for objects loaded
 * since the last rescan (got_poll); it ends at the first wake-up
 * after the tracer went, or when the process exits.  A thread that cannot
 * be created (a seccomp filter, no memory) is not tried again until the
 * next attach: the queues then wait for polls, as before.  The child of a
 * fork has no flusher: its own first slow path under a tracer starts one.
 * No tracer, no thread: the host stays free until a tracer attaches.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>

#include <linux/types.h>

#include "memprof_probe_abi.h"
#include "memprof_probes.h"
#include "preload.h"

/* How often the flusher looks (the queues' age limit: 10 ms). */
#define FLUSHER_PERIOD_NS 10000000L
#define FLUSHER_STACK_BYTES ((size_t)64 * 1024)

enum flusher_state {
	FLUSHER_NONE,	 /* no thread: the next slow path under a tracer starts one */
	FLUSHER_RUNNING, /* a thread runs (or is being created) */
	FLUSHER_FAILED,	 /* creation failed for this attach: not tried again */
};
static atomic_int flusher_state;

static void *flusher_main(void *arg)
{
	const struct timespec period = {0, FLUSHER_PERIOD_NS};
	struct preload_thread *t = &preload_self;
	int traced = 1;

	(void)arg;
	pthread_setname_np(pthread_self(), MEMPROF_PROBE_THREAD_PREFIX "flush");
	/* Profiler code for its whole life: nothing it allocates is sampled. */
	preload_enter(t);
	while (traced && !atomic_load_explicit(&preload_exiting, memory_order_relaxed)) {
		nanosleep(&period, NULL);
		preload_enter_core(t);
		traced = memprof_probe_service();
		preload_leave_core(t);
		/* An object the C library loaded by itself (NSS, iconv) into a
		 * program that no longer allocates through a redirected slot. */
		got_poll();
	}
	atomic_store(&flusher_state, FLUSHER_NONE);
	preload_leave(t);
	return NULL;
}

void flusher_poll(struct preload_thread *t, int traced)
{
	int expected = FLUSHER_NONE;
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t thread;
	int rc;

	if (!traced) {
		/* The tracer went: a failed creation may be tried at the next attach. */
		if (atomic_load_explicit(&flusher_state, memory_order_relaxed) == FLUSHER_FAILED)
			atomic_store(&flusher_state, FLUSHER_NONE);
		return;
	}
	if (PRELOAD_LIKELY(atomic_load_explicit(&flusher_state, memory_order_relaxed) !=
			   FLUSHER_NONE) ||
	    !atomic_compare_exchange_strong(&flusher_state, &expected, FLUSHER_RUNNING))
		return;
	preload_enter(t);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_attr_init(&attr);
	if (!rc) {
		pthread_attr_setstacksize(&attr, FLUSHER_STACK_BYTES);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		rc = pthread_create(&thread, &attr, flusher_main, NULL);
		pthread_attr_destroy(&attr);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		atomic_store(&flusher_state, FLUSHER_FAILED);
	preload_leave(t);
}

void flusher_fork_child(void)
{
	atomic_store(&flusher_state, FLUSHER_NONE);
}
