/*
 * Life cycle of the Python host, and what the malloc host's sampler,
 * sampled-block table and flusher (linked in from runtime-probes/hosts/
 * preload/, see preload.h) expect of the host that carries them: its
 * readiness flags, the core gate, thread exit and fork.  There is no
 * malloc interposer here and no GOT to rewrite: the allocator hooks are
 * CPython's own (hooks.c).
 *
 * The constructor, run inside the dlopen that loads the library (injected
 * by the loader, or LD_PRELOAD), does everything that needs no GIL: it
 * looks the CPython API up, checks the version, creates the frame table,
 * installs the core, and starts the watcher, the thread that installs the
 * hooks while a tracer is attached (cpython.c).  A
 * process that is not a CPython 3.11 keeps running untouched: one line on
 * stderr, and the library stays inert.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "memprof_host.h"
#include "memprof_probes.h"
#include "preload.h"
#include "python_host.h"

atomic_int preload_allocator_ready;
atomic_int preload_profiler_ready;
atomic_int preload_exiting;
/* Never injected in the malloc host's sense: no GOT slot is rewritten. */
atomic_int preload_injected;
_Atomic uint32_t preload_free_gate;

#define CORE_GATE_INIT PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP
static pthread_rwlock_t core_gate = CORE_GATE_INIT;
static pthread_key_t thread_exit_key;
static int thread_exit_key_ok;

void got_poll_slow(void)
{
}

/* Initialisation happens once, in the constructor; later calls have nothing to do. */
void preload_init(void)
{
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
	if (thread_exit_key_ok)
		pthread_setspecific(thread_exit_key, t);
}

/* fork: no thread inside the core, and our locks held, while the child is made. */
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
	frames_fork_child();
	flusher_fork_child();
	core_gate = (pthread_rwlock_t)CORE_GATE_INIT;
	if (t->core_depth)
		core_gate_read_lock();
	preload_leave(t);
	cpython_watcher_fork_child();
}

static void say(const char *what, const char *why)
{
	char line[400];
	int n = snprintf(line, sizeof(line), "memprof-python: %s: %s\n", what, why);

	if (n > 0) {
		ssize_t unused =
		    write(2, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line));
		(void)unused;
	}
}

__attribute__((constructor)) static void python_host_constructor(void)
{
	struct preload_thread *t = &preload_self;
	memprof_host_ops ops;
	char why[200];

	if (cpython_resolve(why, sizeof(why))) {
		say("not profiling", why);
		return;
	}
	if (frames_init()) {
		say("not profiling", "cannot create the frame table");
		return;
	}
	preload_enter_core(t);
	sampler_configure(PRELOAD_DEFAULT_YOUNG_EPOCH_BYTES, PRELOAD_DEFAULT_MAJOR_THRESHOLD_BYTES);
	memset(&ops, 0, sizeof(ops));
	callstack_own_code(&ops.own_code[0]);
	ops.capture_callstack = frames_capture;
	memprof_host_init(&ops);
	thread_exit_key_ok = pthread_key_create(&thread_exit_key, thread_exit_destructor) == 0;
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	preload_leave_core(t);
	atomic_store_explicit(&preload_allocator_ready, 1, memory_order_release);
	atomic_store_explicit(&preload_profiler_ready, 1, memory_order_release);
	if (cpython_start_watcher())
		say("not profiling", "cannot start the thread that installs the allocator hooks");
}

/* Process exit: the tracer gets the deaths still queued. */
__attribute__((destructor)) static void python_host_destructor(void)
{
	struct preload_thread *t = &preload_self;

	if (preload_profiler_usable() && !t->exited) {
		preload_enter_core(t);
		memprof_probe_flush();
		preload_leave_core(t);
	}
	atomic_store_explicit(&preload_exiting, 1, memory_order_relaxed);
}
