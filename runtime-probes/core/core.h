/*
 * Internal state of the memprof core, shared by the files of this folder.
 * Not a public header: hosts use memprof.h and memprof_host.h.
 */
#ifndef MEMPROF_CORE_H
#define MEMPROF_CORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stddef.h>
#include <linux/types.h>

#include "memprof.h"
#include "memprof_host.h"
#include "memprof_probe_abi.h"
#include "entries.h"

/* A user profile: one memprof_start .. memprof_stop (and what it tracked). */
struct profile {
	memprof_tracker tracker; /* copy of the caller's tracker */
	size_t callstack_size;	 /* frames handed to alloc callbacks */
	double lambda;		 /* its sampling rate */
	size_t refs;		 /* entries pointing here, +1 while sampling, +1 while
				  * its handle is known (memprof_start_profile) */
	int stopped;		 /* memprof_stop ran: no alloc callback any more */
	memprof_profile handle;	 /* 0, or its handle until discarded */
};

/* The core's state, behind memprof_core.lock unless noted.  One instance. */
struct core_state {
	pthread_mutex_t lock;
	struct entries tbl;	  /* the tracked-block table (entries.h) */
	struct profile *sampling; /* the user profile sampling now, or NULL */
	int tracer_on;		  /* the sample semaphore was last seen raised */
	double tracer_rate;	  /* rate in force for a tracer-only profile */
	memprof_stats stats;	  /* samples, dropped, callbacks, last_minor_scan */
	memprof_host_ops ops;	  /* the host's hooks (zeroed: no host) */
	/* During a collection's scan (gc.c): the time of its deaths, one clock
	 * read for all of them (they are found within the scan); 0 otherwise. */
	uint64_t scan_ns;
	/* Read without the lock: */
	atomic_size_t callstack_size; /* frames the sampling profile wants */
	atomic_int maybe_pending;     /* 0: no callback is pending (safe points skip the lock) */
};
extern struct core_state memprof_core;

/* Index value meaning "no entry". */
#define NO_INDEX SIZE_MAX

/*
 * MEMPROF_ASSERT(cond): an invariant the code relies on at this point, as
 * OCaml's CAMLassert.  Compiled in only with -DMEMPROF_DEBUG (the sanitized
 * build, build/san/): a false one prints "file:line: cond" and aborts.
 * Otherwise it evaluates nothing.
 */
#ifdef MEMPROF_DEBUG
#define MEMPROF_ASSERT(cond) ((cond) ? (void)0 : core_assert_failed(__FILE__, __LINE__, #cond))
_Noreturn void core_assert_failed(const char *file, int line, const char *cond);
#else
#define MEMPROF_ASSERT(cond) ((void)sizeof(!(cond)))
#endif

/* ---- per-thread state (rng.c, callbacks.c) ---- */
/* Entries a thread holds busy: the index variables it keeps them in.  Sets
 * nest (a safe point reached inside memprof_track_young's reserve runs
 * callbacks while the placeholders are held). */
struct held_set {
	size_t **idx;
	size_t n;
	struct held_set *prev;
};

/*
 * The frame of the program that called into the host, as the host saw it on
 * its way in (memprof_capture_from): ra, the return address into the
 * program; sp, the CFA of the host's function it called (where %rsp is once
 * that function returns); fp, the program's %rbp there.  Invariant: while
 * ra is set, that frame is live (the host's function has not returned).
 */
struct callstack_from {
	uintptr_t ra, sp, fp;
};

struct thread_state {
	uint64_t rng[4];       /* xoshiro256+ state */
	int seeded;	       /* rng was initialised */
	int in_callback;       /* a callback runs on this thread: no sampling */
	struct held_set *held; /* innermost set of entries this thread holds busy */
	uintptr_t *cb_stack;   /* call stack handed to the running alloc callback (owned) */
	int in_core;	       /* inside memprof_track_malloc: nested calls (from the
				* core's own malloc) are not sampled */
	/* rng.c's rate per byte, cached: bytes_inv_log1m is 1 / log1p(-lambda / 8)
	 * for lambda == bytes_for_lambda (both 0 at first: lambda 0 gives 0). */
	double bytes_for_lambda;
	double bytes_inv_log1m;
	struct unwind_cache *unwind; /* unwind.c's rules, NULL until the first capture */
	struct callstack_from from;  /* memprof_capture_from's frame; ra 0: none */
};
/*
 * Initial-exec: one %fs-relative access instead of a __tls_get_addr call
 * per use (several per sample in the shared objects the core is linked
 * into).  An object dlopen'ed into a running process (an injected host)
 * takes these bytes from the loader's static TLS surplus, as the malloc
 * host's preload_self already does.
 */
#define CORE_TLS_MODEL __attribute__((tls_model("initial-exec")))
extern _Thread_local struct thread_state memprof_ts CORE_TLS_MODEL;

/* ---- rate in force (profile.c), readable without the lock ---- */
struct rate {
	double lambda;	  /* samples per word, 0 when not sampling */
	double inv_log1m; /* 1 / log(1 - lambda) (-0.0 when lambda is 1) */
};
/*
 * The rate in force, published by rate_update_locked (profile.c) under a
 * sequence lock: rate_seq is odd while a writer is between its stores, and
 * a reader that saw the same even value before and after its loads has a
 * consistent pair.  Read on every sample, so rate_read is inline.
 */
extern atomic_uint rate_seq;
extern _Atomic double rate_lambda;
extern _Atomic double rate_inv_log1m;
static inline void rate_read(struct rate *out)
{
	unsigned seq;

	/* Acquire loads of the pair keep the second load of rate_seq after them
	 * (no fence: TSan does not take one). */
	do {
		seq = atomic_load_explicit(&rate_seq, memory_order_acquire);
		out->lambda = atomic_load_explicit(&rate_lambda, memory_order_acquire);
		out->inv_log1m = atomic_load_explicit(&rate_inv_log1m, memory_order_acquire);
	} while ((seq & 1) || seq != atomic_load_explicit(&rate_seq, memory_order_relaxed));
}
/* Recompute the rate in force from memprof_core.sampling / memprof_core.tracer_on.  Locked. */
void rate_update_locked(void);

/* ---- random draws (rng.c) ---- */
/* Largest gap returned: "no sample in any allocation we will ever see". */
#define GAP_NEVER ((size_t)1 << 62)
size_t rng_geometric(const struct rate *r);
size_t rng_binomial(const struct rate *r, size_t words);

/* ---- call stacks (callstack.c) ---- */
/* Frames unwound beyond what is asked, for the profiler's own at the top
 * (the core's, the host's entry and slow path, nested entries). */
#define CALLSTACK_SKIP_SLACK 32
/* A capture buffer: on the stack up to the probe maximum, else malloc'ed. */
struct stack_buf {
	uintptr_t local[MEMPROF_PROBE_MAX_STACK + 1 + CALLSTACK_SKIP_SLACK];
	uintptr_t *buf; /* want + CALLSTACK_SKIP_SLACK slots */
	size_t want;	/* frames to capture */
	size_t len;	/* frames captured */
};
void stack_buf_init(struct stack_buf *sb);
void stack_buf_free(struct stack_buf *sb);
/*
 * Capture up to max return addresses of the calling thread, innermost
 * first, starting at the first frame outside the profiler's own code (the
 * core's, and the host's own_code ranges).  buf has room for
 * max + CALLSTACK_SKIP_SLACK addresses.  Callable from anywhere in the core.
 */
size_t callstack_capture(uintptr_t *buf, size_t max);
/* Frames to capture for a sample now: profile's size, or the probe maximum. */
size_t callstack_wanted(void);

/* ---- the fast unwinder (unwind.c) ---- */
/* 1: call stacks walk cached unwind rules (x86-64), 0: always unw_backtrace. */
#ifndef MEMPROF_UNWIND_FAST
#if defined(__x86_64__) && !defined(MEMPROF_CALLSTACK_GLIBC_BACKTRACE)
#define MEMPROF_UNWIND_FAST 1
#else
#define MEMPROF_UNWIND_FAST 0
#endif
#endif
#define UNWIND_FAST MEMPROF_UNWIND_FAST
/* unwind_walk's answer when unw_backtrace must take the capture. */
#define UNWIND_FALLBACK SIZE_MAX
/* unwind_walk's first frame: pc recorded, pc left out, or pc a return address. */
enum unwind_first { UNWIND_FIRST_PC, UNWIND_SKIP_FIRST, UNWIND_FIRST_RA };
/*
 * Walk the calling thread's stack from pc (with %rsp sp and %rbp fp there,
 * in a frame still live): buf[0] = pc (unless UNWIND_SKIP_FIRST), then the
 * return addresses, want frames at most, exactly as unw_backtrace would give
 * them from that point.  With UNWIND_FIRST_RA pc is a return address (its
 * call's rule is looked up, at pc - 1).  UNWIND_FALLBACK when a frame on
 * the way is not one it takes.
 */
size_t unwind_walk(uintptr_t *buf, size_t want, uintptr_t pc, uintptr_t sp, uintptr_t fp,
		   enum unwind_first first);
/* Release the calling thread's rule cache. */
void unwind_thread_exit(void);

/* ---- sampling (sample.c) ---- */
/* Flags of sample_new_locked. */
#define SAMPLE_YOUNG 1u	     /* born in the minor heap / young epoch */
#define SAMPLE_KEEP_STACK 2u /* copy the stack for a postponed alloc callback */
#define SAMPLE_MALLOC 4u     /* malloc-style: direct callbacks, a handle */
#define SAMPLE_UNBOUND 8u    /* placeholder of memprof_track_young */
/*
 * Create the entry of a sampled block and fire the sample probe.  Locked.
 * bytes: 0 for a runtime block (words; r per word), else the requested
 * bytes of a malloc block sampled per byte at r->lambda / 8.
 * NO_INDEX when nobody wants it (no profile, no tracer) or the table could
 * not grow (counted as dropped).
 */
size_t sample_new_locked(memprof_value block, size_t wosize, size_t bytes, size_t n_samples,
			 unsigned source, unsigned flags, const uintptr_t *stack, size_t stack_len,
			 const struct rate *r);

/* ---- probes (probes.c) ---- */
#define SEMAPHORE_UP(s) (*(volatile unsigned short *)&(s) != 0)
extern unsigned short memprof_sample_semaphore;
extern unsigned short memprof_events_semaphore;
extern unsigned short memprof_gc_semaphore;
extern struct memprof_probe_control memprof_probe_control;
/*
 * Fire memprof:sample.  size and lambda are per word, or per byte when
 * bytes is set; a stack longer than MEMPROF_PROBE_MAX_STACK is handed over
 * cut, with MEMPROF_PROBE_F_STACK_CUT.
 */
void probe_fire_sample(uint64_t id, size_t size, size_t n_samples, unsigned kind, unsigned source,
		       const uintptr_t *stack, size_t stack_len, double lambda, int bytes);
/* Queue a promote or dealloc event (MEMPROF_PROBE_EV_*) for memprof:events.  Locked. */
void probe_event_locked(uint64_t id, unsigned what);
/* Around a collection's scan (gc.c): its deaths share one time.  Locked. */
void probe_scan_begin_locked(void);
void probe_scan_end_locked(void);
/* Fire memprof:events with what is queued (end of a collection or epoch).  Locked. */
void probe_events_flush_locked(void);
void probe_count_dropped(void);
/* Update control.flags and active_rate from the core state.  Locked. */
void probe_publish_locked(void);
/*
 * Compare the sample semaphore with the last state seen; on attach start the
 * tracer-only sampling, on detach stop it.  Returns 1 when the rate changed.
 */
int probe_poll(void);

/* ---- malloc-style hosts (malloc_host.c) ---- */
/* A tracer came or went: the tracer-only handles taken so far fire
 * nothing more, and the epoch's young ones are forgotten.  Locked. */
void malloc_tracer_new_generation_locked(void);

/* ---- callbacks (callbacks.c) ---- */
/*
 * Run the pending callback of the entry at *ip (not busy, pending).  Called
 * and returns with memprof_core.lock held; drops it while the callback runs.
 * Returns the callback's error.  stack/stack_len, when stack is not NULL,
 * is the call stack handed to an alloc callback instead of the entry's.
 */
int callbacks_run_one(size_t *ip, const uintptr_t *stack, size_t stack_len);
/* Run pending callbacks until none is left or one fails.  Locked. */
int callbacks_run_pending_locked(void);
/* Call a host hook that must run without the lock (may be NULL). */
void host_update_young_limit(void);
void host_request_safe_point(void);

#endif
