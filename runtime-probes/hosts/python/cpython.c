/*
 * The CPython API, looked up at run time in the process the library is
 * loaded into: Debian's python3 exports it from the executable, an
 * embedding program from its libpython.  The library links no libpython,
 * so one build serves any CPython 3.11 process, whatever it is called.
 *
 * The hooks are installed by a thread of this library (the watcher), which
 * takes the GIL with PyGILState_Ensure: PyMem_SetAllocator must not race
 * with allocations of the domains it changes, and the MEM and OBJ domains
 * are used only with the GIL held.  The constructor runs inside an
 * injected dlopen, on whichever thread the injector chose (possibly one
 * holding the GIL, or one waiting for it), so it never waits for the GIL
 * itself: it starts the thread and returns.
 *
 * The hooks are in place only while a tracer is attached, so a detached
 * process pays nothing but the watcher's look at the sample semaphore every
 * WATCHER_PERIOD_NS (a wrapped allocator costs CPython its devirtualised
 * call to pymalloc on every allocation, docs/python-host.md).  When the
 * semaphore rises the watcher takes the GIL and installs the hooks; the
 * first sampled allocation's poll starts sampling.  When it drops, the
 * watcher polls the core (which stops the tracer's sampling and forgets its
 * blocks, as the protocol says) and puts the previous allocators back,
 * unless another allocator (tracemalloc) now wraps ours: then ours stay.
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>

#include "core.h"
#include "memprof_host.h"
#include "preload.h"
#include "python_host.h"

struct cpython_api cpython;

/* The watcher waits at most this long for the interpreter to be initialised. */
#define WATCHER_WAIT_INIT_MS 10000
#define WATCHER_STACK_BYTES ((size_t)256 * 1024)
/* How often the watcher looks at the sample semaphore. */
#define WATCHER_PERIOD_NS 20000000L

static void *lookup(const char *name, const char **missing)
{
	void *p = dlsym(RTLD_DEFAULT, name);

	if (!p && !*missing)
		*missing = name;
	return p;
}

int cpython_resolve(char *why, size_t len)
{
	const char *missing = NULL;
	const unsigned long *version = lookup("Py_Version", &missing);

	cpython.is_initialized = (int (*)(void))lookup("Py_IsInitialized", &missing);
	cpython.gilstate_ensure = (int (*)(void))lookup("PyGILState_Ensure", &missing);
	cpython.gilstate_release = (void (*)(int))lookup("PyGILState_Release", &missing);
	cpython.get_allocator =
	    (void (*)(int, struct pyhost_allocator *))lookup("PyMem_GetAllocator", &missing);
	cpython.set_allocator =
	    (void (*)(int, struct pyhost_allocator *))lookup("PyMem_SetAllocator", &missing);
	cpython.thread_state_unchecked_get =
	    (void *(*)(void))lookup("_PyThreadState_UncheckedGet", &missing);
	cpython.code_addr2line = (int (*)(void *, int))lookup("PyCode_Addr2Line", &missing);
	cpython.is_finalizing = (int (*)(void))lookup("_Py_IsFinalizing", &missing);
	void *eval = lookup("_PyEval_EvalFrameDefault", &missing);
	/* Optional: without it the hooks wrap free too (hooks.c). */
	cpython.current_allocator_name =
	    (const char *(*)(void))dlsym(RTLD_DEFAULT, "_PyMem_GetCurrentAllocatorName");
	if (missing) {
		snprintf(why, len, "no %s in the process: not a CPython 3.11 interpreter", missing);
		return -1;
	}
	cpython.version = *version;
	unsigned major = (unsigned)(cpython.version >> 24) & 0xff;
	unsigned minor = (unsigned)(cpython.version >> 16) & 0xff;
	if (major != PYHOST_VERSION_MAJOR || minor != PYHOST_VERSION_MINOR) {
		snprintf(why, len, "CPython %u.%u: this host walks the frames of %d.%d only", major,
			 minor, PYHOST_VERSION_MAJOR, PYHOST_VERSION_MINOR);
		return -1;
	}
	Dl_info info;
	const ElfW(Sym) *sym = NULL;
	if (dladdr1(eval, &info, (void **)&sym, RTLD_DL_SYMENT) && sym && sym->st_size) {
		cpython.eval_start = (uintptr_t)eval;
		cpython.eval_end = (uintptr_t)eval + sym->st_size;
	}
	return 0;
}

/* Install (want) or remove the hooks, holding the GIL.  0, or -1: leave them. */
static int hooks_switch(int want)
{
	struct preload_thread *t = &preload_self;
	int rc = 0;

	/* After Py_Finalize the GIL is gone: nothing to switch, ever again. */
	if (cpython.is_finalizing() || !cpython.is_initialized())
		return -1;
	int state = cpython.gilstate_ensure();
	if (want) {
		hooks_install();
	} else {
		/* The core sees the tracer gone: its sampling stops, its blocks are forgotten. */
		preload_enter_core(t);
		(void)memprof_run_postponed();
		preload_leave_core(t);
		rc = hooks_uninstall();
	}
	cpython.gilstate_release(state);
	return rc;
}

/* The watcher runs (in this process: a fork's child has none of its own). */
static atomic_int watcher_alive;

static void *watcher_main(void *arg)
{
	const struct timespec pause = {0, 1000000}, period = {0, WATCHER_PERIOD_NS};
	struct preload_thread *t = &preload_self;

	(void)arg;
	pthread_setname_np(pthread_self(), MEMPROF_PROBE_THREAD_PREFIX "pyhook");
	/* Profiler code for its whole life: nothing it allocates is sampled. */
	preload_enter(t);
	/* A program that loaded us before Py_Initialize (an embedding one). */
	for (int i = 0; i < WATCHER_WAIT_INIT_MS && !cpython.is_initialized(); i++)
		nanosleep(&pause, NULL);
	nanosleep(&period, NULL);
	atomic_store(&watcher_alive, 1);
	while (!atomic_load_explicit(&preload_exiting, memory_order_relaxed)) {
		/* Not in the child of a fork made while traced: no tracer listens there. */
		int traced = memprof_tracer_attached();

		if (traced != hooks_installed() && hooks_switch(traced) != 0)
			break; /* finalizing, or someone wraps ours: they stay as they are */
		nanosleep(&period, NULL);
	}
	atomic_store(&watcher_alive, 0);
	preload_leave(t);
	return NULL;
}

void cpython_watcher_fork_child(void)
{
	/*
	 * The child of a fork has no watcher: start its own, which first sleeps a
	 * period, and takes the GIL only when the child's semaphore changes (a
	 * tracer attaches to the child), long after CPython's own after-fork work.
	 */
	/* No thread (no memory): the child's hooks stay as they were at the fork. */
	if (atomic_exchange(&watcher_alive, 0))
		(void)cpython_start_watcher();
}

int cpython_start_watcher(void)
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t thread;
	int rc;

	/* No signal of the program's is ever delivered to our thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_attr_init(&attr);
	if (!rc) {
		pthread_attr_setstacksize(&attr, WATCHER_STACK_BYTES);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		rc = pthread_create(&thread, &attr, watcher_main, NULL);
		pthread_attr_destroy(&attr);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc ? -1 : 0;
}
