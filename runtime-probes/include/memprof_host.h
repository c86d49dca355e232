/*
 * memprof host interface: the hooks a runtime (a "host") provides to the
 * memprof core, and the core functions the host must call.
 * docs/integration.md is the guide; this header is the contract.
 *
 * Threading model: the core protects its tracked-block table with its own
 * mutex, which it never holds while a callback or a host hook that may
 * allocate runs.  A host with a runtime lock (the reference runtime) may
 * call every function below with that lock held; callbacks then run with
 * the runtime lock held and may release it (blocking sections).  A host
 * without a runtime lock (the malloc host) calls them from any thread.
 * Per-thread state (the random generator, the "inside a callback" flag) is
 * thread-local in the core and is never behind a lock.
 */
#ifndef MEMPROF_HOST_H
#define MEMPROF_HOST_H

#include "memprof.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Code addresses [start, end). */
typedef struct memprof_code_range {
	uintptr_t start, end;
} memprof_code_range;

/* Ranges a host may declare as its own code (memprof_host_ops.own_code). */
#define MEMPROF_HOST_OWN_CODE_RANGES 4

/* Hooks the host provides.  Any of them may be NULL where noted. */
typedef struct memprof_host_ops {
	/* Is v a pointer into the minor heap?  NULL: nothing is young. */
	int (*is_young)(memprof_value v);
	/*
	 * Minor collection, weak pass: v is a young tracked block.  Return 1 and
	 * set *moved to its new (major) address if it survived, 0 if it died.
	 */
	int (*young_survived)(memprof_value v, memprof_value *moved);
	/* Major collection, before sweeping: is the major block v dead? */
	int (*major_is_dead)(memprof_value v);
	/*
	 * The minor-heap trigger (memprof_young_trigger) changed, or sampling
	 * started or stopped: recompute the allocation limit.  May be NULL.
	 */
	void (*update_young_limit)(void);
	/* Postponed callbacks are pending: reach a safe point soon.  May be NULL. */
	void (*request_safe_point)(void);
	/*
	 * Capture up to max return addresses of the current thread, innermost
	 * first.  The core drops the leading ones that lie in its own code or in
	 * own_code, as it does for its own unwinder.  NULL (the usual choice):
	 * the core unwinds with libunwind (DWARF, no frame pointers needed).
	 */
	size_t (*capture_callstack)(uintptr_t *buf, size_t max);
	/*
	 * The host's own code: the frames at the top of every captured call
	 * stack that lie in these ranges are dropped, like the core's own, so a
	 * stack starts at the return address into the program that allocated
	 * (rt gives its whole runtime, the malloc host its whole shared
	 * object).  Unused ranges are {0, 0}.
	 */
	memprof_code_range own_code[MEMPROF_HOST_OWN_CODE_RANGES];
} memprof_host_ops;

/* Install the host.  Call once, before any other memprof function. */
void memprof_host_init(const memprof_host_ops *ops);

/* ---- Minor-heap sampling (hosts with a bump-allocated minor heap) ----
 *
 * The minor heap is allocated downwards.  The core keeps a trigger address
 * inside it: the next sampled word.  The host folds it into its allocation
 * limit (young_limit = max(gc_limit, memprof_young_trigger)), so a
 * non-sampled allocation pays the one compare it already paid.
 */

/*
 * Draw the next sample point below young_ptr.  Returns the new trigger,
 * which is young_start when no sample falls in [young_start, young_ptr)
 * (not sampling, inside a callback, or the gap is longer than what is
 * left).  Call after every minor collection, on every switch of the
 * running thread, and whenever update_young_limit is called.
 */
uintptr_t memprof_renew_minor_sample(uintptr_t young_ptr, uintptr_t young_start);

/* The trigger drawn last: by memprof_renew_minor_sample, or, for a host
 * without update_young_limit, on return from memprof_track_young, which
 * renews it below the new blocks (a host with one renews it there). */
uintptr_t memprof_young_trigger(void);

/*
 * The allocation slow path found that a bump of sum(wosizes[i] + 1) words
 * below young_ptr crosses the trigger.  The host has NOT allocated.  The
 * core works out each block's sample count, runs the alloc_minor callbacks
 * before the blocks exist (the placeholder technique), then calls
 * reserve(ctx), which must perform the combined allocation (collecting
 * first if needed, without sampling) and return the address of its lowest
 * word.  Block i's header is at base + 8 * sum_{j<i}(wosizes[j] + 1), its
 * value one word above.  The core then binds the entries to the blocks and
 * stores base in *base_out.
 *
 * Returns 0, or a callback's error code: then reserve was not called,
 * nothing is allocated, and blocks whose alloc callback had run got a
 * simulated dealloc_minor.
 */
int memprof_track_young(uintptr_t young_ptr, size_t nallocs, const size_t *wosizes,
			uintptr_t (*reserve)(void *ctx), void *ctx, uintptr_t *base_out);

/* ---- Samples taken inside the runtime: callbacks postponed ----
 * Each draws a binomial sample count; blocks with samples are tracked, and
 * their alloc callbacks run at the next memprof_run_postponed.
 */
void memprof_track_major(memprof_value block, size_t wosize);
void memprof_track_young_runtime(memprof_value block, size_t wosize);
/* Custom block with out-of-heap memory: sampled by mem_bytes / 8 words. */
void memprof_track_custom(memprof_value block, size_t mem_bytes);
/* Bulk unmarshal: nblocks blocks, source MEMPROF_SRC_MARSHAL.  Blocks the
 * host's is_young calls young (a small value unmarshaled into the minor
 * heap) get alloc_minor, then promote or dealloc_minor; others alloc_major. */
void memprof_track_intern(size_t nblocks, const memprof_value *blocks, const size_t *wosizes);

/* ---- Collections ---- */

/*
 * Minor collection, strong roots: call f on the user data of every entry
 * in the young suffix [young, len) of the table, so the collector can
 * promote and update them.  Only the young suffix is visited.
 */
void memprof_scan_young_roots(void (*f)(memprof_value *root, void *ctx), void *ctx);
/* Major collection, strong roots: every entry's user data. */
void memprof_scan_roots(void (*f)(memprof_value *root, void *ctx), void *ctx);
/*
 * Minor collection, weak pass, after the live young blocks were copied and
 * before the minor heap is reused: visits only the young suffix, asks
 * young_survived for each young block, records promotions and minor
 * deaths, and resets the young index to len.
 */
void memprof_minor_update(void);
/* Major collection, after marking and before sweeping: record major deaths. */
void memprof_major_update(void);

/* ---- Malloc-style hosts (blocks never move; they die by free) ---- */

/*
 * A malloc-style allocation of `bytes` requested bytes was sampled
 * n_samples times, sample points falling on the byte stream at the rate
 * per byte (the rate per word / 8: memprof_draw_gap_bytes and
 * memprof_draw_binomial_bytes draw them).  major: born major.  Runs the
 * alloc callback now (its size is ceil(bytes / 8) words) and returns its
 * error.  The sample probe reports bytes (MEMPROF_PROBE_F_BYTES), so
 * estimates are exact in expectation for any size.  *handle_out receives a
 * handle for memprof_block_freed, 0 when the block is not tracked.
 */
int memprof_track_malloc(memprof_value block, size_t bytes, size_t n_samples, int major,
			 uint64_t *handle_out);
/*
 * The next sample this thread takes may start its call stack at the
 * program's frame instead of walking the host's frames down to it: ra is
 * the return address into the program, sp the CFA of the host's function it
 * called (%rsp once that returns), fp the program's %rbp there; that frame
 * must stay live until the host calls this again with ra 0, which it does
 * once the sample is taken.  A return address inside the profiler's own
 * code (memprof_host_ops.own_code) is ignored: the walk starts as always.
 */
void memprof_capture_from(uintptr_t ra, uintptr_t sp, uintptr_t fp);
/*
 * The tracked block with this handle was freed.  Runs its dealloc callback
 * now (if its previous callback still runs on another thread, that thread
 * runs the dealloc right after it); the callback's error is dropped.  A
 * handle of 0 or of a block already freed is ignored, except a tracer-only
 * block's (memprof_handle_runs_no_callback), which the host must free once:
 * a second free would report a second death.
 */
void memprof_block_freed(uint64_t handle);
/*
 * Nonzero when memprof_block_freed(handle) runs no callback: it takes the
 * core's mutex (memprof_host_fork_lock) and nothing else, so a host that
 * keeps its other locks (the unwinder's) away from fork may call it
 * without them.  A tracer-only block's handle is one.
 */
int memprof_handle_runs_no_callback(uint64_t handle);
/*
 * fork, for hosts that call into the core from threads fork does not wait
 * for: the prepare handler locks the core's mutex, the parent's and the
 * child's handlers unlock it.  The core frees memory while it holds the
 * mutex, which can take the host's own allocator locks: lock the mutex
 * before them and unlock it after.
 */
void memprof_host_fork_lock(void);
void memprof_host_fork_unlock(void);
/*
 * End of a young epoch: every young tracked block still alive is promoted.
 * Runs the promote callbacks (and anything else pending) now; errors are
 * dropped.
 */
void memprof_epoch_end(void);
/* Per-thread draws for hosts that count down bytes/words themselves. */
double memprof_current_rate(void);  /* 0 when not sampling */
double memprof_rate_in_force(void); /* the same without polling the tracer semaphore */
size_t memprof_draw_gap(void);	    /* words to the next sample, >= 1 */
size_t memprof_draw_binomial(size_t words);
/* The same per byte, at the rate per word / 8 (the malloc host's unit).
 * These two do not poll the tracer semaphore (memprof_run_postponed does). */
size_t memprof_draw_gap_bytes(void); /* bytes to the next sample, >= 1 */
size_t memprof_draw_binomial_bytes(size_t bytes);
/* The sample points in the next `bytes` bytes (a binomial count, as
 * memprof_draw_binomial_bytes), and in *next_gap the bytes from their end to
 * the following point (>= 1, distributed as memprof_draw_gap_bytes). */
size_t memprof_draw_points_bytes(size_t bytes, size_t *next_gap);

/*
 * The calling thread's return addresses, innermost first, as libunwind's
 * unw_backtrace gives them (the first in the caller), at most max and at
 * most MEMPROF_UNWIND_MAX: walked by the core's unwinder on cached rules,
 * by unw_backtrace where the stack has a frame it does not take.
 */
#define MEMPROF_UNWIND_MAX 512
size_t memprof_unwind(uintptr_t *buf, size_t max);

/* ---- Safe points, threads ---- */

/*
 * Run the postponed callbacks.  Returns 0 or the first error a callback
 * returned.  Call at safe points: allocation slow paths, polls, and on
 * leaving a blocking section.  Also polls the tracer semaphore (attach
 * turns sampling on, detach turns it off).
 */
int memprof_run_postponed(void);

/* The running thread changed (a host with a runtime lock). */
void memprof_thread_switched(void);

/*
 * The calling thread is exiting.  If it is inside a callback, the block
 * that callback was for stops being tracked, as if it had returned
 * MEMPROF_NONE.  Its thread-local state is released.
 */
void memprof_thread_exit(void);

/* Is sampling on for the calling thread (on, and not inside a callback)? */
int memprof_sampling_here(void);

/*
 * Is a tracer attached: the sample semaphore raised and the probe sites
 * armed?  In the child of a fork made while traced the copied semaphore
 * may still read raised, but the sites are disarmed (memprof_probe_site.h):
 * no tracer listens there, and this says 0.
 */
int memprof_tracer_attached(void);

#ifdef __cplusplus
}
#endif

#endif
