/*
 * Life cycle of the malloc host: initialisation (lazy, from the first
 * allocation, or from the constructor), the environment, fork, thread exit,
 * process exit, and the in-process API.
 *
 * Initialisation has two steps.  First the next allocator is looked up:
 * while dlsym runs, allocations (dlsym's own included) come from the
 * bootstrap arena.  Then the core is installed (memprof_host_init) and
 * sampling may begin: until then allocations are delegated unsampled.
 *
 * The in-process API: memprof_start, memprof_stop, memprof_discard and the
 * profile handles' memprof_start_profile and memprof_discard_profile are
 * the core's, wrapped.  The build renames the core's definitions
 * (preload_core_*), and the wrappers below run them as profiler code on
 * this thread (their allocations are not sampled, so the core never
 * re-enters itself through malloc) and make the calling thread poll at its
 * next allocation, so sampling starts there at once.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "memprof_host.h"
#include "memprof_probes.h"
#include "preload.h"

enum init_state { INIT_NONE, INIT_RUNNING, INIT_DONE };

atomic_int preload_allocator_ready;
atomic_int preload_profiler_ready;
atomic_int preload_exiting;
static atomic_int init_state;
/* Writers first: a fork must not wait behind an endless stream of readers. */
#define CORE_GATE_INIT PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP
static pthread_rwlock_t core_gate = CORE_GATE_INIT;
static pthread_key_t thread_exit_key;
static int thread_exit_key_ok;

int preload_core_memprof_start(double rate, size_t callstack_size, const memprof_tracker *tracker);
int preload_core_memprof_stop(void);
int preload_core_memprof_discard(void);
int preload_core_memprof_start_profile(double rate, size_t callstack_size,
				       const memprof_tracker *tracker,
				       memprof_profile *profile_out);
int preload_core_memprof_discard_profile(memprof_profile profile);

/* One line on stderr, from pieces (write(2): stdio may allocate). */
static void say(const char *const parts[], size_t n)
{
	char line[512];
	size_t len = 0;

	for (size_t i = 0; i < n; i++)
		for (const char *c = parts[i]; *c && len < sizeof(line) - 1; c++)
			line[len++] = *c;
	line[len++] = '\n';
	ssize_t unused = write(2, line, len);
	(void)unused;
}

static size_t env_bytes(const char *name, size_t dflt)
{
	const char *s = getenv(name);

	if (!s || !*s)
		return dflt;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v == 0 || s[0] < '0' || s[0] > '9' || v > SIZE_MAX / 2) {
		const char *parts[] = {"memprof-preload: ", name, "=", s,
				       " is not a positive number of bytes; using the default"};
		say(parts, sizeof(parts) / sizeof(parts[0]));
		return dflt;
	}
	return (size_t)v;
}

void core_gate_read_lock(void)
{
	pthread_rwlock_rdlock(&core_gate);
}

void core_gate_unlock(void)
{
	pthread_rwlock_unlock(&core_gate);
}

static void thread_exit_destructor(void *unused)
{
	struct preload_thread *t = &preload_self;

	(void)unused;
	if (t->exited)
		return;
	/* Stay inside the profiler for good: later allocations pass through. */
	preload_enter(t);
	if (preload_profiler_usable()) {
		preload_enter_core(t);
		memprof_thread_exit();
		preload_leave_core(t);
	}
	t->exited = 1;
}

void preload_register_thread(struct preload_thread *t)
{
	t->registered = 1;
	if (!thread_exit_key_ok)
		return;
	preload_enter(t);
	pthread_setspecific(thread_exit_key, t);
	preload_leave(t);
}

/*
 * fork: wait until no thread is inside the core, then hold our locks across
 * the fork.  A fork made from inside a callback (this thread already holds
 * the gate) cannot wait for the others: it goes ahead.
 */
static __thread int fork_holds_gate;

static void fork_prepare(void)
{
	struct preload_thread *t = &preload_self;

	preload_enter(t);
	fork_holds_gate = t->core_depth == 0;
	if (fork_holds_gate)
		pthread_rwlock_wrlock(&core_gate);
	/* A tracer-only death takes the core's mutex without the gate.  The
	 * core may take a shard lock under its mutex (its frees): mutex first. */
	memprof_host_fork_lock();
	sampled_blocks_lock_all();
}

static void fork_parent(void)
{
	sampled_blocks_unlock_all();
	memprof_host_fork_unlock();
	if (fork_holds_gate)
		pthread_rwlock_unlock(&core_gate);
	preload_leave(&preload_self);
}

static void fork_child(void)
{
	struct preload_thread *t = &preload_self;

	sampled_blocks_reinit_locks();
	memprof_host_fork_unlock();
	flusher_fork_child();
	got_fork_child();
	core_gate = (pthread_rwlock_t)CORE_GATE_INIT;
	/* Only this thread survives: its own calls into the core hold the gate. */
	if (t->core_depth)
		core_gate_read_lock();
	preload_leave(t);
}

static void profiler_init(void)
{
	struct preload_thread *t = &preload_self;
	memprof_host_ops ops;

	preload_enter_core(t);
	sampler_configure(
	    env_bytes(PRELOAD_ENV_YOUNG_EPOCH, PRELOAD_DEFAULT_YOUNG_EPOCH_BYTES),
	    env_bytes(PRELOAD_ENV_MAJOR_THRESHOLD, PRELOAD_DEFAULT_MAJOR_THRESHOLD_BYTES));
	memset(&ops, 0, sizeof(ops));
	callstack_own_code(&ops.own_code[0]);
	memprof_host_init(&ops);
	thread_exit_key_ok = pthread_key_create(&thread_exit_key, thread_exit_destructor) == 0;
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	preload_leave_core(t);
}

void preload_init(void)
{
	int expected = INIT_NONE;

	if (atomic_load_explicit(&init_state, memory_order_acquire) != INIT_NONE)
		return;
	if (!atomic_compare_exchange_strong(&init_state, &expected, INIT_RUNNING))
		return; /* another thread (or this one, recursively) is at it */
	if (next_allocator_resolve() != 0) {
		/* Injected, nothing calls us yet: stay inert rather than end the program. */
		if (atomic_load_explicit(&preload_injected, memory_order_relaxed))
			return;
		_exit(127); /* no allocator to delegate to: nothing can run */
	}
	atomic_store_explicit(&preload_allocator_ready, 1, memory_order_release);
	profiler_init();
	atomic_store_explicit(&preload_profiler_ready, 1, memory_order_release);
	atomic_store_explicit(&init_state, INIT_DONE, memory_order_release);
	if (atomic_load_explicit(&preload_injected, memory_order_relaxed)) {
		/* Dlopen'ed into a running process: take over its allocation calls. */
		got_redirect_init();
		got_rescan();
	}
}

/*
 * MEMPROF_WAIT_TRACER_MS=N: the program starts only once a tracer turned
 * sampling on (or after N ms), so a short program is profiled from its
 * first allocation (`memprof-bpf attach` finds the preload mapped and
 * waiting).  Sleeping, not spinning.
 */
static void wait_for_tracer(void)
{
	const char *s = getenv(PRELOAD_ENV_WAIT_TRACER);
	struct preload_thread *t = &preload_self;
	const struct timespec pause = {0, 1000000};
	char *end;

	if (!s || !*s || !preload_profiler_usable())
		return;
	unsigned long ms = strtoul(s, &end, 10);
	for (unsigned long i = 0; !*end && i < ms; i++) {
		preload_enter_core(t);
		double rate = memprof_current_rate();
		preload_leave_core(t);
		if (rate > 0)
			break;
		nanosleep(&pause, NULL);
	}
	sampler_force_poll(t);
}

__attribute__((constructor)) static void preload_constructor(void)
{
	preload_init();
	wait_for_tracer();
}

/* Process exit: destructors of other objects may still allocate; from here
 * on they are served without the core. */
__attribute__((destructor)) static void preload_destructor(void)
{
	struct preload_thread *t = &preload_self;

	/* The tracer gets the deaths still queued (memprof:events). */
	if (preload_profiler_usable() && !t->exited) {
		preload_enter_core(t);
		memprof_probe_flush();
		preload_leave_core(t);
	}
	atomic_store_explicit(&preload_exiting, 1, memory_order_relaxed);
}

PRELOAD_EXPORT int memprof_start(double rate, size_t callstack_size, const memprof_tracker *tracker)
{
	struct preload_thread *t = &preload_self;

	preload_init();
	preload_enter_core(t);
	int rc = preload_core_memprof_start(rate, callstack_size, tracker);
	sampler_force_poll(t);
	preload_leave_core(t);
	return rc;
}

PRELOAD_EXPORT int memprof_stop(void)
{
	struct preload_thread *t = &preload_self;

	preload_init();
	preload_enter_core(t);
	int rc = preload_core_memprof_stop();
	sampler_force_poll(t);
	preload_leave_core(t);
	return rc;
}

PRELOAD_EXPORT int memprof_discard(void)
{
	struct preload_thread *t = &preload_self;

	preload_init();
	preload_enter_core(t);
	int rc = preload_core_memprof_discard();
	preload_leave_core(t);
	return rc;
}

PRELOAD_EXPORT int memprof_start_profile(double rate, size_t callstack_size,
					 const memprof_tracker *tracker,
					 memprof_profile *profile_out)
{
	struct preload_thread *t = &preload_self;

	preload_init();
	preload_enter_core(t);
	int rc = preload_core_memprof_start_profile(rate, callstack_size, tracker, profile_out);
	sampler_force_poll(t);
	preload_leave_core(t);
	return rc;
}

PRELOAD_EXPORT int memprof_discard_profile(memprof_profile profile)
{
	struct preload_thread *t = &preload_self;

	preload_init();
	preload_enter_core(t);
	int rc = preload_core_memprof_discard_profile(profile);
	preload_leave_core(t);
	return rc;
}
