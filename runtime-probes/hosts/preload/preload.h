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
 *   got_redirect.c     injected mode: point every object's GOT slots for
 *                      the malloc family at interpose.c
 */
#ifndef MEMPROF_PRELOAD_H
#define MEMPROF_PRELOAD_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define PRELOAD_EXPORT __attribute__((visibility("default")))
/* Hidden data is addressed RIP-relative (one instruction), not through the GOT. */
#define PRELOAD_HIDDEN __attribute__((visibility("hidden")))
#define PRELOAD_LIKELY(x) __builtin_expect(!!(x), 1)
#define PRELOAD_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---- Tuning knobs ---- */

/* A thread's slow path runs at least this often while sampling. */
#define PRELOAD_POLL_BYTES ((size_t)1 << 20)
/* While not sampling, a thread polls for a tracer or a profile this often
 * (and ends epochs no later: nothing young is sampled meanwhile). */
#define PRELOAD_IDLE_POLL_BYTES ((size_t)2 << 20)
/* A thread reports its allocated bytes at least this many times per epoch. */
#define PRELOAD_EPOCH_CHECKS 4
/* Default young epoch: the reference runtime's minor heap, 256 Ki words. */
#define PRELOAD_DEFAULT_YOUNG_EPOCH_BYTES ((size_t)256 * 1024 * 8)
/* Default size at which a block is born major. */
#define PRELOAD_DEFAULT_MAJOR_THRESHOLD_BYTES ((size_t)128 * 1024)
/* Environment variables. */
#define PRELOAD_ENV_YOUNG_EPOCH "MEMPROF_YOUNG_EPOCH_BYTES"
#define PRELOAD_ENV_MAJOR_THRESHOLD "MEMPROF_MAJOR_THRESHOLD_BYTES"
/* At start-up, wait up to this many milliseconds for a tracer (0: do not wait). */
#define PRELOAD_ENV_WAIT_TRACER "MEMPROF_WAIT_TRACER_MS"

/* ---- Bootstrap arena (bootstrap_arena.c) ---- */

/* Size of the arena, bytes.  Only dlsym's own allocations land there. */
#define BOOTSTRAP_ARENA_BYTES ((size_t)256 * 1024)

extern PRELOAD_HIDDEN unsigned char bootstrap_arena[BOOTSTRAP_ARENA_BYTES];
/* Bump-allocate, aligned to align rounded up to a power of two (at least
 * 16).  NULL (errno ENOMEM): no room. */
void *bootstrap_alloc(size_t size, size_t align);
/* Requested size of an arena block. */
size_t bootstrap_block_size(const void *p);
/* The program freed (or reallocated) arena block p: it no longer holds the free gate. */
void bootstrap_release(const void *p);
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
extern PRELOAD_HIDDEN struct next_allocator next;
/*
 * Look the next allocator up.  0, or -1 after one line on stderr.
 * Preloaded (or linked before libc), ours is the first malloc in the global
 * scope and the next is the one after this library (RTLD_NEXT).  Injected
 * (dlopen'ed into a running process), the first one is the program's:
 * that is the one to delegate to, and preload_injected is set.
 */
int next_allocator_resolve(void);

/* ---- Injected mode (got_redirect.c) ---- */

extern atomic_int preload_injected;
/* Learn where this library is (called by got_first_definition if needed). */
void got_self_init(void);
/*
 * The first definition of function `name` in load order, the way the
 * loader binds a PLT slot: undefined references are skipped, also those
 * with a value (the canonical PLT entry of a non-PIE executable that takes
 * the function's address, which dlsym would return).  skip_self: ignore
 * this library.  *is_self (if not NULL): the definition is this library's.
 * 0 if none.
 */
uintptr_t got_first_definition(const char *name, int skip_self, int *is_self);
/* Learn what to redirect where (after next_allocator_resolve). */
void got_redirect_init(void);
/* Rewrite the GOT slots of every loaded object now. */
void got_rescan(void);
void got_poll_slow(void);
/* In the child of a fork (lifecycle.c's handler). */
void got_fork_child(void);
/* On every slow path: rescan if objects were loaded since the last time. */
static inline void got_poll(void)
{
	if (PRELOAD_UNLIKELY(atomic_load_explicit(&preload_injected, memory_order_relaxed)))
		got_poll_slow();
}

/* interpose.c's functions under hidden names: their addresses in this
 * library, whatever symbol lookup would find. */
void *preload_malloc(size_t size);
void preload_free(void *p);
void *preload_calloc(size_t n, size_t size);
void *preload_realloc(void *p, size_t size);
void *preload_reallocarray(void *p, size_t n, size_t size);
int preload_posix_memalign(void **out, size_t align, size_t size);
void *preload_aligned_alloc(size_t align, size_t size);
void *preload_memalign(size_t align, size_t size);
void *preload_valloc(size_t size);
void *preload_pvalloc(size_t size);
size_t preload_malloc_usable_size(void *p);

/* ---- The free gate (sampled_blocks.c) ---- */

/*
 * Nonzero while some block needs a look at free: sampled blocks alive, or
 * bootstrap-arena blocks not yet freed.  While it is zero (nothing was
 * ever sampled, or every sampled block died: the detached case) free is
 * one load, one branch and the jump to the next allocator's free.  It is
 * raised before such a block reaches the program and lowered after it is
 * gone, as the filter below, so a free never misses one.
 */
extern PRELOAD_HIDDEN _Atomic uint32_t preload_free_gate;

/* ---- Sampled blocks (sampled_blocks.c) ---- */

/*
 * The filter: 2^SAMPLED_FILTER_BITS slots, each with a count of the sampled
 * live blocks (and live bootstrap-arena blocks) whose address hashes to it
 * (sampled_blocks.c) and one bit,
 * set while that count is nonzero.  free reads the bit only: the bitmap
 * is 8 KiB, so it stays in the first-level cache where the counts (256 KiB)
 * would not.  A slot's shard is the slot's top bits, so the count and the
 * bit of a slot (and the 64 bits of a bitmap word) change under one lock.
 */
#define SAMPLED_FILTER_BITS 16
#define SAMPLED_SHARD_BITS 6
extern PRELOAD_HIDDEN _Atomic uint64_t sampled_filter_bits[(size_t)1 << (SAMPLED_FILTER_BITS - 6)];

static inline size_t sampled_filter_index(const void *p)
{
	return (size_t)((((uintptr_t)p >> 4) * 0x9e3779b97f4a7c15ull) >>
			(64 - SAMPLED_FILTER_BITS));
}
/* Constant time, no lock: 0 means p is certainly neither a sampled block
 * nor a bootstrap-arena block. */
static inline int sampled_blocks_may_contain(const void *p)
{
	size_t i = sampled_filter_index(p);

	return (atomic_load_explicit(&sampled_filter_bits[i >> 6], memory_order_relaxed) >>
		(i & 63)) &
	       1;
}
/* Block p is about to be inserted: start loading what the insert will touch
 * (its table slot and filter count are cold), so that the call stack's
 * capture in between hides the cache misses. */
void sampled_blocks_prefetch(const void *p);
/* A bootstrap-arena block p was handed out (delta +1) or freed (-1): its
 * filter slot counts it, so that free's one test of the filter sends it to
 * bootstrap_release, with no test of the arena's bounds on every free. */
void sampled_filter_hold(const void *p, int delta);
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
	size_t budget;		  /* countdown - 1 (mod 2^64): bytes before the next
				     slow path, less one; the fast path takes b while
				     budget - b stays >= 0 as a signed number (a
				     countdown of 0 is SIZE_MAX: always slow) */
	size_t armed;		  /* countdown when last armed: armed - countdown bytes
				     were allocated since */
	size_t sample_after;	  /* bytes from the end of the countdown to the next
				     sample point (sampling only) */
	double rate;		  /* rate the sample point was drawn at, 0: polling */
	size_t saved_countdown;	  /* countdown while inside the profiler */
	unsigned inside;	  /* reentrancy depth: the profiler is running */
	unsigned core_depth;	  /* calls into the core in progress (gate held) */
	unsigned char registered; /* thread-exit destructor armed */
	unsigned char exited;	  /* memprof_thread_exit ran: pass through */
};
extern __thread struct preload_thread preload_self __attribute__((tls_model("initial-exec")));

/* The countdown: bytes before the next slow path (the fast path: > b). */
static inline size_t preload_countdown(const struct preload_thread *t)
{
	return t->budget + 1;
}
static inline void preload_set_countdown(struct preload_thread *t, size_t c)
{
	t->budget = c - 1;
}

/*
 * The fast path's test: take `bytes` off the budget; 1 if it stays
 * non-negative (the countdown was above bytes), else 0 with the budget
 * left for the slow path to restore (preload_untake).  One subtraction, one
 * store, one sign branch.  A request above 2^63 bytes (which fails) may
 * pass it and leave the countdown higher by 2^64 - bytes.
 */
static inline int preload_take(struct preload_thread *t, size_t bytes)
{
	size_t left = t->budget - bytes;

	t->budget = left;
	return (intptr_t)left >= 0;
}
static inline void preload_untake(struct preload_thread *t, size_t bytes)
{
	t->budget += bytes;
}

/*
 * Enter / leave the profiler on this thread: allocations in between are
 * not sampled and do not advance the countdown.
 */
static inline void preload_enter(struct preload_thread *t)
{
	if (t->inside++ == 0) {
		t->saved_countdown = preload_countdown(t);
		preload_set_countdown(t, 0);
	}
}
static inline void preload_leave(struct preload_thread *t)
{
	if (--t->inside == 0)
		preload_set_countdown(t, t->saved_countdown);
}

/*
 * The core gate: a reader-writer lock every call into the core holds (as a
 * reader, taken once per thread however deeply calls nest), but a
 * tracer-only block's death, which takes the core's mutex alone.  fork takes
 * the gate as the writer, then the core's mutex, so no thread is inside the
 * core (holding its mutex, or the unwinder's locks) when the child is made.
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
 * The countdown ran out on an allocation of `bytes` bytes: account the
 * bytes, end epochs, poll the core, and return how many sample points fall
 * in this block (0: not sampled).  Re-arms the countdown.  When it returns
 * nonzero the thread is still inside the core (one gate round trip per
 * sample, not two): the caller allocates, then calls sampler_track, which
 * leaves it, whether the allocation succeeded or not.
 */
size_t sampler_countdown_expired(struct preload_thread *t, size_t bytes);
/* Track block p (NULL: the allocation failed) of `bytes` requested bytes,
 * sampled n_samples times, with the core; then leave the core. */
void sampler_track(struct preload_thread *t, void *p, size_t n_samples, size_t bytes);
/*
 * sampler_track, with the call stack started at the program's frame:
 * frame is the frame pointer of the host's function the program called (or
 * jumped to from the exported function's tail call), so frame[0] is the
 * program's %rbp and frame[1] the return address into it.  The core checks
 * that address: one in the host's own code (the function was called, not
 * jumped to) makes it walk from its own frame as always.
 */
void sampler_track_from(struct preload_thread *t, void *p, size_t n_samples, size_t bytes,
			const uintptr_t *frame);
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

/*
 * The idle flusher (flusher.c): called on every slow path with whether a
 * tracer is attached; starts the thread that hands over queued samples and
 * events while the program does not allocate.
 */
void flusher_poll(struct preload_thread *t, int traced);
/* In the child of a fork: no flusher runs there. */
void flusher_fork_child(void);

#endif
