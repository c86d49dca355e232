/*
 * memprof Python host: internal interfaces between the files of
 * runtime-probes/hosts/python/.  Not a public header.
 *
 * The library (build/libmemprof-python.so) is injected into a running
 * CPython by `memprof-bpf attach` (or preloaded).  It carries the memprof
 * core and the malloc host's per-byte sampler, sampled-block table and
 * idle flusher (runtime-probes/hosts/preload/: those objects are linked in
 * as they are), and puts them behind CPython's allocator domains instead of
 * the malloc family:
 *   cpython.c   the CPython API, looked up at run time (dlsym in the
 *               process: the executable or libpython exports it), the
 *               version check, and the watcher thread that installs the
 *               hooks (holding the GIL) while a tracer is attached, and
 *               takes them out after
 *   hooks.c     the PyMemAllocatorEx wrappers of the MEM and OBJ domains
 *   frames.c    the sample's call stack: native frames down to the
 *               innermost Python frame, then the Python frames, each a
 *               tagged entry naming a record of the frame table
 *   lifecycle.c what the preload objects expect of their host (its state
 *               flags, the core gate, thread exit, fork), and the
 *               constructor
 * docs/python-host.md describes the design.
 */
#ifndef MEMPROF_PYTHON_HOST_H
#define MEMPROF_PYTHON_HOST_H

#include <stddef.h>
#include <stdint.h>

#define PYHOST_EXPORT __attribute__((visibility("default")))

/* The CPython versions this host walks frames of: 3.11 only. */
#define PYHOST_VERSION_MAJOR 3
#define PYHOST_VERSION_MINOR 11

/* PyMemAllocatorEx, as Python.h declares it (cpython/pymem.h). */
struct pyhost_allocator {
	void *ctx;
	void *(*malloc)(void *ctx, size_t size);
	void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
	void *(*realloc)(void *ctx, void *ptr, size_t new_size);
	void (*free)(void *ctx, void *ptr);
};

/* PyMemAllocatorDomain values. */
#define PYHOST_DOMAIN_RAW 0
#define PYHOST_DOMAIN_MEM 1
#define PYHOST_DOMAIN_OBJ 2

/* The CPython API this host calls, resolved by cpython_resolve. */
struct cpython_api {
	unsigned long version; /* Py_Version: 0xMMmmPPRS */
	int (*is_initialized)(void);
	int (*gilstate_ensure)(void);
	void (*gilstate_release)(int state);
	void (*get_allocator)(int domain, struct pyhost_allocator *out);
	void (*set_allocator)(int domain, struct pyhost_allocator *a);
	void *(*thread_state_unchecked_get)(void);
	int (*code_addr2line)(void *code, int byte_offset);
	int (*is_finalizing)(void);
	/* _PyMem_GetCurrentAllocatorName, or NULL (optional): "pymalloc" while
	 * the three domains are CPython's defaults. */
	const char *(*current_allocator_name)(void);
	/* [start, end) of _PyEval_EvalFrameDefault: where native frames stop. */
	uintptr_t eval_start, eval_end;
};
extern struct cpython_api cpython;

/*
 * Look the API up in the process.  0, or -1 with why set (a missing
 * symbol, or a version this host cannot walk the frames of).
 */
int cpython_resolve(char *why, size_t len);
/* Start the thread that installs the hooks while a tracer is attached. */
int cpython_start_watcher(void);
/* In the child of a fork: start the child's watcher if the parent had one. */
void cpython_watcher_fork_child(void);

/* hooks.c: take over the MEM and OBJ domains, wrapping what is there.
 * Call with the GIL held. */
void hooks_install(void);
/* Put the allocators we wrapped back: 0, or -1 when another allocator now
 * wraps ours (ours then stay).  Call with the GIL held. */
int hooks_uninstall(void);
/* Whether hooks_install has run (for tests and the flusher). */
int hooks_installed(void);

/* frames.c */
/* Create the frame table (a shared memfd mapping).  0, or -1. */
int frames_init(void);
/* The memprof_host_ops.capture_callstack hook. */
size_t frames_capture(uintptr_t *buf, size_t max);
/* In the child of a fork: the index lock is free. */
void frames_fork_child(void);

#endif
