/*
 * memprof: statistical memory profiling, the statmemprof "new API" in C.
 *
 * Allocations are sampled as a Poisson process over allocated words (header
 * included) at rate lambda.  Each sampled block is tracked through its life
 * and a tracker's five callbacks see it: alloc_minor or alloc_major when it
 * is sampled, promote when it survives a minor collection, and
 * dealloc_minor or dealloc_major when it dies.
 *
 * User data flows from one callback to the next: what alloc_minor returns
 * is what promote and dealloc_minor receive, and what promote (or
 * alloc_major) returns is what dealloc_major receives.  Returning
 * MEMPROF_NONE from alloc or promote ends the tracking of that block: no
 * further callback runs for it.
 *
 * Any callback may return a nonzero error code.  It is that callback's
 * exception: it reaches the code that allocated (for callbacks run at the
 * allocation) or the safe point that ran the callback (for postponed ones),
 * and the block's tracking ends.
 *
 * A NULL callback behaves as in OCaml's null_tracker: alloc and promote
 * return MEMPROF_NONE, dealloc does nothing.
 *
 * Callbacks may run on any thread that reaches a safe point, and several
 * threads may run callbacks at once (one may block inside a callback while
 * another runs the others), but the callbacks of one block run in order and
 * never concurrently.  Allocations made by a callback are not sampled.
 *
 * Which thread runs an alloc callback: one run at the allocation (the
 * alloc_minor of a minor-heap sample, memprof_track_young, for every block
 * of a combined allocation; the alloc of a malloc-style block) runs on the
 * allocating thread, before the allocation returns.  A postponed one
 * (memprof_track_major, _young_runtime, _custom, _intern) runs at the next
 * safe point of any thread, as in OCaml 4.11; OCaml 4.12 and later keep it
 * for the allocating thread.
 *
 * Once stopped, a profile runs no alloc callback (not even for blocks
 * sampled before the stop whose callback was postponed); its tracked blocks
 * keep their promote and dealloc callbacks until it is discarded
 * (memprof_discard, or memprof_discard_profile for a profile handle).
 *
 * A thread may exit inside a callback if its host calls memprof_thread_exit
 * first (the reference runtime's rt_thread_exit does): the block that
 * callback was for stops being tracked, as if the callback had returned
 * MEMPROF_NONE.  See docs/design.md.
 */
#ifndef MEMPROF_H
#define MEMPROF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * User data.  In a garbage-collected host it may be a value of the host's
 * heap: the host scans it as a root, and keeps it up to date when the
 * collector moves it.  MEMPROF_NONE (zero) means "stop tracking".
 */
typedef uintptr_t memprof_value;
#define MEMPROF_NONE ((memprof_value)0)

enum memprof_source {
	MEMPROF_SRC_NORMAL = 0,	 /* ordinary allocation */
	MEMPROF_SRC_MARSHAL = 1, /* bulk allocation by unmarshaling (intern) */
	MEMPROF_SRC_CUSTOM = 2,	 /* custom block, sampled by virtual size */
};

/* What an alloc callback is told.  Valid only while the callback runs. */
typedef struct memprof_allocation {
	uint64_t id;	  /* nonzero, unique in the process, never reused */
	size_t n_samples; /* >= 1 */
	size_t size;	  /* in words, header excluded */
	enum memprof_source source;
	const uintptr_t *callstack; /* return addresses, innermost first */
	size_t callstack_len;	    /* <= the callstack_size given to start */
} memprof_allocation;

typedef int (*memprof_alloc_callback)(void *arg, const memprof_allocation *info,
				      memprof_value *data_out);
typedef int (*memprof_promote_callback)(void *arg, memprof_value minor_data,
					memprof_value *major_data_out);
typedef int (*memprof_dealloc_callback)(void *arg, memprof_value data);

typedef struct memprof_tracker {
	memprof_alloc_callback alloc_minor;
	memprof_alloc_callback alloc_major;
	memprof_promote_callback promote;
	memprof_dealloc_callback dealloc_minor;
	memprof_dealloc_callback dealloc_major;
	void *arg; /* passed to every callback */
} memprof_tracker;

/*
 * Start sampling at `rate` samples per word, capturing at most
 * `callstack_size` frames per sample.  The tracker is copied.
 * Returns 0, EINVAL (rate is NaN or outside [0,1]) or EBUSY (already
 * sampling), or ENOMEM if the profile itself cannot be allocated.  Legal
 * inside a callback.
 */
int memprof_start(double rate, size_t callstack_size, const memprof_tracker *tracker);

/*
 * Stop sampling.  Blocks already tracked keep getting their promote and
 * dealloc callbacks.  Returns 0 or EINVAL (not sampling).  Legal inside a
 * callback.
 */
int memprof_stop(void);

/*
 * Forget the blocks tracked by every stopped profile (those started with
 * memprof_start_profile included): no callback runs for them any more.
 * Returns 0 or EBUSY (still sampling).  Legal inside a callback.
 */
int memprof_discard(void);

/*
 * Profile handles, as in OCaml 5.3 (Gc.Memprof.t): a profile started with
 * memprof_start_profile is named by a handle, nonzero and never reused, and
 * memprof_discard_profile forgets the blocks of that profile alone, so an
 * old profile can be discarded while a new one samples.
 */
typedef uint64_t memprof_profile;

/*
 * memprof_start, and *profile_out gets the new profile's handle (left
 * unchanged on error).  The profile stays known until it is discarded
 * (by memprof_discard_profile or memprof_discard): discard every profile
 * started this way.
 */
int memprof_start_profile(double rate, size_t callstack_size, const memprof_tracker *tracker,
			  memprof_profile *profile_out);

/*
 * Forget the blocks tracked by this (stopped) profile: no callback runs for
 * them any more.  Returns 0, EBUSY (it is still sampling: stop it first) or
 * EINVAL (no such profile, or it was already discarded).  Legal inside a
 * callback.
 */
int memprof_discard_profile(memprof_profile profile);

/*
 * Seed the calling thread's random generator (for reproducible tests and
 * benchmarks); threads that have not drawn yet derive their seeds from it.
 * Without it each process draws a random seed, unless the environment sets
 * MEMPROF_SEED=N (decimal or 0x hex), which fixes it.
 */
void memprof_set_seed(uint64_t seed);

/* Counters, for tests and benchmarks. */
typedef struct memprof_stats {
	uint64_t samples;	  /* entries created */
	uint64_t dropped;	  /* samples dropped because the table could not grow */
	uint64_t tracked;	  /* entries currently in the table */
	uint64_t callbacks;	  /* callbacks run */
	uint64_t last_minor_scan; /* entries visited by the last minor update */
} memprof_stats;
void memprof_get_stats(memprof_stats *out);

#ifdef __cplusplus
}
#endif

#endif
