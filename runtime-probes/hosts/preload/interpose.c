/*
 * The malloc family, interposed.  Every function delegates to the next
 * allocator.  On the way:
 *
 *   allocation: the requested bytes come off the thread's countdown;
 *               while it stays positive that is all (one subtraction and
 *               one branch).  Otherwise the sampler decides how many sample
 *               points the block spans, and a sampled block is tracked.
 *   free:       one load of the free gate (preload.h): zero while no
 *               sampled or arena block lives, the detached case.  Else one
 *               compare for the bootstrap arena, one filter load; only a
 *               nonzero filter counter (a sampled block, or a collision)
 *               looks the block up.
 *   realloc:    for tracking, a free of the old block and an allocation of
 *               the new one.
 */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "preload.h"

enum alloc_kind {
	ALLOC_MALLOC,
	ALLOC_CALLOC,
	ALLOC_MEMALIGN,
	ALLOC_ALIGNED,
	ALLOC_VALLOC,
	ALLOC_PVALLOC,
};

/* The next allocator's function for kind; kind is a constant at every call. */
static inline __attribute__((always_inline)) void *next_call(enum alloc_kind kind, size_t bytes,
							     size_t align)
{
	switch (kind) {
	case ALLOC_CALLOC:
		return next.calloc(1, bytes);
	case ALLOC_MEMALIGN:
		return next.memalign(align, bytes);
	case ALLOC_ALIGNED:
		return next.aligned_alloc(align, bytes);
	case ALLOC_VALLOC:
		return next.valloc(bytes);
	case ALLOC_PVALLOC:
		return next.pvalloc(bytes);
	case ALLOC_MALLOC:
	default:
		return next.malloc(bytes);
	}
}

static void *next_alloc(enum alloc_kind kind, size_t bytes, size_t align)
{
	if (PRELOAD_UNLIKELY(!preload_allocator_usable())) {
		/* Before the next allocator is known: the bootstrap arena (zeroed). */
		if (kind == ALLOC_VALLOC || kind == ALLOC_PVALLOC)
			align = (size_t)sysconf(_SC_PAGESIZE);
		return bootstrap_alloc(bytes, align);
	}
	return next_call(kind, bytes, align);
}

/*
 * The slow path keeps a frame pointer where the compiler can be asked for
 * one: the exported functions jump to it (their tail call), so its frame
 * holds the program's return address and %rbp, and a sample's call stack
 * starts there (sampler_track_from) instead of walking the profiler's five
 * frames down to it and dropping them.
 */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ALLOC_SLOW_FRAME __attribute__((optimize("no-omit-frame-pointer")))
#define ALLOC_SLOW_HAS_FRAME 1
#else
#define ALLOC_SLOW_FRAME
#define ALLOC_SLOW_HAS_FRAME 0
#endif

static __attribute__((noinline)) ALLOC_SLOW_FRAME void *
alloc_slow(struct preload_thread *t, enum alloc_kind kind, size_t bytes, size_t align)
{
	/* The fast path took the bytes off before it found the countdown spent. */
	preload_untake(t, bytes);
	size_t n_samples = sampler_countdown_expired(t, bytes);
	void *p = next_alloc(kind, bytes, align);

	if (!n_samples)
		return p;
	if (ALLOC_SLOW_HAS_FRAME)
		sampler_track_from(t, p, n_samples, bytes, __builtin_frame_address(0));
	else
		sampler_track(t, p, n_samples, bytes);
	return p;
}

/*
 * The shared fast path; kind is a constant at every call.  The bytes come
 * off the countdown first; while it stays positive that is all (else the
 * slow path puts them back).
 */
static inline __attribute__((always_inline)) void *alloc(enum alloc_kind kind, size_t bytes,
							 size_t align)
{
	struct preload_thread *t = &preload_self;

	if (PRELOAD_LIKELY(preload_take(t, bytes)))
		return next_call(kind, bytes, align);
	return alloc_slow(t, kind, bytes, align);
}

PRELOAD_EXPORT void *malloc(size_t size)
{
	return alloc(ALLOC_MALLOC, size, 0);
}

PRELOAD_EXPORT void *calloc(size_t n, size_t size)
{
	size_t bytes;

	if (__builtin_mul_overflow(n, size, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	return alloc(ALLOC_CALLOC, bytes, 0);
}

/* The free gate is up, and the filter says p may be an arena block or a sampled one. */
static __attribute__((noinline)) void free_checked(void *p)
{
	if (!p)
		return;
	if (bootstrap_owns(p)) {
		bootstrap_release(p);
		return;
	}
	sampler_block_freed(&preload_self, p);
	next.free(p);
}

/*
 * With the free gate up (a tracer's samples are live), every free of the
 * program asks the filter: inline, a dozen instructions and no call, since
 * it runs about a hundred times a sample at 1e-4.  The filter holds the
 * bootstrap arena's blocks too, so the arena's bounds are tested on a hit
 * only.  NULL needs no test of its own: a false hit of the filter goes to
 * free_checked, which has it.
 */
PRELOAD_EXPORT void free(void *p)
{
	if (PRELOAD_UNLIKELY(atomic_load_explicit(&preload_free_gate, memory_order_relaxed)) &&
	    PRELOAD_UNLIKELY(sampled_blocks_may_contain(p))) {
		free_checked(p);
		return;
	}
	next.free(p);
}

PRELOAD_EXPORT void *realloc(void *p, size_t size)
{
	struct preload_thread *t = &preload_self;

	if (!p)
		return alloc(ALLOC_MALLOC, size, 0);
	if (bootstrap_owns(p)) {
		size_t old = bootstrap_block_size(p);
		void *q = alloc(ALLOC_MALLOC, size, 0);
		if (q) {
			memcpy(q, p, old < size ? old : size);
			bootstrap_release(p);
		}
		return q;
	}
	if (size == 0) {
		/* glibc: realloc(p, 0) frees p and returns NULL. */
		preload_free(p);
		return NULL;
	}
	uint64_t handle = 0;
	if (PRELOAD_UNLIKELY(sampled_blocks_may_contain(p)))
		handle = sampled_blocks_remove(p);

	size_t n_samples = 0;
	if (PRELOAD_UNLIKELY(!preload_take(t, size))) {
		preload_untake(t, size);
		n_samples = sampler_countdown_expired(t, size);
	}

	void *q = next.realloc(p, size);
	if (!q) {
		/* p is still the program's: it stays tracked, nothing died. */
		if (handle && sampled_blocks_insert(p, handle) != 0)
			sampler_handle_freed(t, handle);
		if (n_samples)
			sampler_track(t, NULL, n_samples, size);
		return NULL;
	}
	if (handle)
		sampler_handle_freed(t, handle);
	if (n_samples)
		sampler_track(t, q, n_samples, size);
	return q;
}

PRELOAD_EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
	if (align < sizeof(void *) || (align & (align - 1)))
		return EINVAL;
	int saved = errno;
	void *p = alloc(ALLOC_MEMALIGN, size, align);
	if (!p) {
		int rc = errno ? errno : ENOMEM;
		errno = saved;
		return rc;
	}
	errno = saved;
	*out = p;
	return 0;
}

PRELOAD_EXPORT void *aligned_alloc(size_t align, size_t size)
{
	return alloc(ALLOC_ALIGNED, size, align);
}

PRELOAD_EXPORT void *memalign(size_t align, size_t size)
{
	return alloc(ALLOC_MEMALIGN, size, align);
}

PRELOAD_EXPORT void *valloc(size_t size)
{
	return alloc(ALLOC_VALLOC, size, 0);
}

PRELOAD_EXPORT void *pvalloc(size_t size)
{
	return alloc(ALLOC_PVALLOC, size, 0);
}

PRELOAD_EXPORT size_t malloc_usable_size(void *p)
{
	if (!p)
		return 0;
	if (bootstrap_owns(p))
		return bootstrap_block_size(p);
	return next.malloc_usable_size(p);
}

/* glibc's reallocarray is realloc with an overflow check. */
PRELOAD_EXPORT void *reallocarray(void *p, size_t n, size_t size)
{
	size_t bytes;

	if (__builtin_mul_overflow(n, size, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	return preload_realloc(p, bytes);
}

/* The same functions under hidden names (got_redirect.c takes their
 * addresses: the exported names may resolve to another library's). */
#define PRELOAD_ALIAS(name) __typeof(name) preload_##name __attribute__((alias(#name), copy(name)))
PRELOAD_ALIAS(malloc);
PRELOAD_ALIAS(free);
PRELOAD_ALIAS(calloc);
PRELOAD_ALIAS(realloc);
PRELOAD_ALIAS(reallocarray);
PRELOAD_ALIAS(posix_memalign);
PRELOAD_ALIAS(aligned_alloc);
PRELOAD_ALIAS(memalign);
PRELOAD_ALIAS(valloc);
PRELOAD_ALIAS(pvalloc);
PRELOAD_ALIAS(malloc_usable_size);
