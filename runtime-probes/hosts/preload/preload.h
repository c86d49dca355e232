/*
 * memprof malloc host ("preload"): internal interfaces between the files of
 * runtime-probes/hosts/preload/.  Not a public header.
 *
 * The pieces:
 *   bootstrap_arena.c  static arena for allocations made before the next
 *                      allocator is known (while dlsym runs)
 *   next_allocator.c   the allocator we delegate to (dlsym RTLD_NEXT)
 *   sampled_blocks.c   which live blocks are sampled: a counting filter
 *                      for a lock-free "not sampled" answer at free, and a
 *                      sharded address -> handle table behind it
 *   sampler.c          per-thread countdown, Poisson draws, young epochs
 *   callstack.c        this object's code range, dropped from call stacks
 *   lifecycle.c        initialisation, environment, fork, thread exit,
 *                      the in-process API (memprof_start/stop/discard, profile handles)
 *   interpose.c        the exported malloc family
 */
#ifndef MEMPROF_PRELOAD_H
#define MEMPROF_PRELOAD_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define PRELOAD_EXPORT __attribute__((visibility("default")))
#define PRELOAD_LIKELY(x) __builtin_expect(!!(x), 1)
#define PRELOAD_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---- Tuning knobs ---- */

/* While not sampling, a thread polls for a tracer or a profile this often. */
#define PRELOAD_POLL_BYTES ((size_t)1 << 20)
/* A thread reports its allocated bytes at least this many times per epoch. */
#define PRELOAD_EPOCH_CHECKS 4
/* Default young epoch: the reference runtime's minor heap, 256 Ki words. */
#define PRELOAD_DEFAULT_YOUNG_EPOCH_BYTES ((size_t)256 * 1024 * 8)
/* Default size at which a block is born major. */
#define PRELOAD_DEFAULT_MAJOR_THRESHOLD_BYTES ((size_t)128 * 1024)
/* Environment variables. */
#define PRELOAD_ENV_YOUNG_EPOCH "MEMPROF_YOUNG_EPOCH_BYTES"
#define PRELOAD_ENV_MAJOR_THRESHOLD "MEMPROF_MAJOR_THRESHOLD_BYTES"

/* Words of a request of `bytes` bytes: ceil(bytes / 8), without overflow. */
static inline size_t preload_words(size_t bytes)
{
	return (bytes >> 3) + ((bytes & 7) != 0);
}

/* ---- Bootstrap arena (bootstrap_arena.c) ---- */

/* Size of the arena, bytes.  Only dlsym's own allocations land there. */
#define BOOTSTRAP_ARENA_BYTES ((size_t)256 * 1024)

extern unsigned char bootstrap_arena[BOOTSTRAP_ARENA_BYTES];
/* Bump-allocate, aligned to align rounded up to a power of two (at least
 * 16).  NULL (errno ENOMEM): no room. */
void *bootstrap_alloc(size_t size, size_t align);
/* Requested size of an arena block. */
size_t bootstrap_block_size(const void *p);
/* Does p point into the arena?  One subtraction and one compare. */
static inline int bootstrap_owns(const void *p)
{
	return (uintptr_t)p - (uintptr_t)bootstrap_arena < BOOTSTRAP_ARENA_BYTES;
}

/* ---- The next allocator (next_allocator.c) ---- */

struct next_allocator {
	void *(*malloc)(size_t);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void (*free)(void *);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	size_t (*malloc_usable_size)(void *);
};
extern struct next_allocator next;
/* Look the next allocator up.  0, or -1 after one line on stderr. */
int next_allocator_resolve(void);

/* ---- Sampled blocks (sampled_blocks.c) ---- */

#define SAMPLED_FILTER_BITS 16
extern _Atomic uint32_t sampled_filter[(size_t)1 << SAMPLED_FILTER_BITS];

static inline size_t sampled_filter_index(const void *p)
{
	return (size_t)((((uintptr_t)p >> 4) * 0x9e3779b97f4a7c15ull) >>
			(64 - SAMPLED_FILTER_BITS));
}
/* Constant time, no lock: 0 means p is certainly not a sampled block. */
static inline int sampled_blocks_may_contain(const void *p)
{
	return atomic_load_explicit(&sampled_filter[sampled_filter_index(p)],
				    memory_order_relaxed) != 0;
}
/* Remember that block p has core handle h.  0, or -1 (out of memory). */
int sampled_blocks_insert(const void *p, uint64_t h);
/* Forget block p; returns its handle, 0 if it was not sampled. */
uint64_t sampled_blocks_remove(const void *p);
/* fork: take every lock / release them in the parent / re-init in the child. */
void sampled_blocks_lock_all(void);
void sampled_blocks_unlock_all(void);
void sampled_blocks_reinit_locks(void);

/* ---- Per-thread sampling state (sampler.c) ---- */

struct preload_thread {
	size_t countdown;	  /* words before the next slow path (fast path: > w) */
	size_t armed;		  /* countdown when last armed: armed - countdown words
				     were allocated since */
	size_t sample_after;	  /* words from the end of the countdown to the next
				     sample point (sampling only) */
	double rate;		  /* rate the sample point was drawn at, 0: polling */
	size_t saved_countdown;	  /* countdown while inside the profiler */
	unsigned inside;	  /* reentrancy depth: the profiler is running */
	unsigned core_depth;	  /* calls into the core in progress (gate held) */
	unsigned char registered; /* thread-exit destructor armed */
	unsigned char exited;	  /* memprof_thread_exit ran: pass through */
};
extern __thread struct preload_thread preload_self __attribute__((tls_model("initial-exec")));

/*
 * Enter / leave the profiler on this thread: allocations in between are
 * not sampled and do not advance the countdown.
 */
static inline void preload_enter(struct preload_thread *t)
{
	if (t->inside++ == 0) {
		t->saved_countdown = t->countdown;
		t->countdown = 0;
	}
}
static inline void preload_leave(struct preload_thread *t)
{
	if (--t->inside == 0)
		t->countdown = t->saved_countdown;
}

/*
 * The core gate: a reader-writer lock every call into the core holds (as a
 * reader, taken once per thread however deeply calls nest).  fork takes it
 * as the writer, so no thread is inside the core (holding its mutex, or the
 * unwinder's locks) when the child is made.
 */
void core_gate_read_lock(void);
void core_gate_unlock(void);
static inline void preload_enter_core(struct preload_thread *t)
{
	preload_enter(t);
	if (t->core_depth++ == 0)
		core_gate_read_lock();
}
static inline void preload_leave_core(struct preload_thread *t)
{
	if (--t->core_depth == 0)
		core_gate_unlock();
	preload_leave(t);
}

/*
 * The countdown ran out on an allocation of `words` words: account the
 * words, end epochs, poll the core, and return how many sample points fall
 * in this block (0: not sampled).  Re-arms the countdown.
 */
size_t sampler_countdown_expired(struct preload_thread *t, size_t words);
/* Track block p (sampled n_samples times) with the core. */
void sampler_track(struct preload_thread *t, void *p, size_t words, size_t n_samples, size_t bytes);
/* Block p is being freed: report it if it was sampled. */
void sampler_block_freed(struct preload_thread *t, const void *p);
/* Report the death of a block already removed from sampled_blocks. */
void sampler_handle_freed(struct preload_thread *t, uint64_t handle);
/* Make this thread poll at its next allocation (sampling state changed). */
void sampler_force_poll(struct preload_thread *t);
/* Configuration, set by lifecycle.c before profiling is ready. */
void sampler_configure(size_t young_epoch_bytes, size_t major_threshold_bytes);

/* ---- Call stacks (callstack.c) ---- */

struct memprof_code_range;
/* The executable range of this shared object (the host's own_code). */
void callstack_own_code(struct memprof_code_range *out);

/* ---- Life cycle (lifecycle.c) ---- */

/* The next allocator is known (next.* may be called). */
extern atomic_int preload_allocator_ready;
/* The core is initialised (memprof_* may be called). */
extern atomic_int preload_profiler_ready;
/* The process is exiting: stop calling the core. */
extern atomic_int preload_exiting;
/* Initialise if nobody has; safe to call recursively (returns at once). */
void preload_init(void);
/* Called on a thread's first slow path: arm its exit destructor. */
void preload_register_thread(struct preload_thread *t);

static inline int preload_allocator_usable(void)
{
	return atomic_load_explicit(&preload_allocator_ready, memory_order_acquire);
}
static inline int preload_profiler_usable(void)
{
	return atomic_load_explicit(&preload_profiler_ready, memory_order_acquire) &&
	       !atomic_load_explicit(&preload_exiting, memory_order_relaxed);
}

#endif
