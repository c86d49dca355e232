/*
 * The allocator hooks: PyMemAllocatorEx wrappers for the MEM domain
 * (PyMem_Malloc: buffers, list and dict storage) and the OBJ domain
 * (PyObject_Malloc: objects; pymalloc's arenas serve both, which the
 * malloc host cannot see).  The RAW domain is left alone: it may be called
 * without the GIL, where the thread's Python frames cannot be read safely,
 * and it carries the interpreter's own structures, not the program's
 * objects; its large blocks reach malloc, where the malloc host would see
 * them.
 *
 * Each wrapper calls the allocator that was installed before (pymalloc, or
 * the debug hooks, or tracemalloc's), so a block allocated before the hooks
 * went in is freed by its own allocator: a block is the previous
 * allocator's whether or not we saw it born.  Sampling is the malloc
 * host's (runtime-probes/hosts/preload/sampler.c): a per-thread countdown
 * of requested bytes, sample points a Poisson process per byte, a sampled
 * block remembered in the sampled-block table until its free.  realloc is,
 * for tracking, a free of the old block and an allocation of the new one,
 * as in the malloc host.  A request of 0 bytes counts as 0 bytes (pymalloc
 * hands out one).
 *
 * free is not wrapped while the domains are CPython's defaults
 * (_PyMem_GetCurrentAllocatorName says "pymalloc"): PyObject_Free and
 * PyMem_Free then keep their direct, inlined call to pymalloc (CPython's
 * PGO build calls pymalloc itself while the domain's free is pymalloc's:
 * wrapping free cost the json loop more than the wrappers' own work).  A
 * sampled block is allocated from the RAW domain (malloc) instead: pymalloc's
 * free and realloc hand a block that is not in its arenas to PyMem_RawFree
 * and PyMem_RawRealloc, and the RAW domain's free is wrapped, so a sampled
 * block's death is still seen, and every other free costs nothing.  A
 * sampled realloc to a size pymalloc serves moves the block into a RAW one.  RAW's malloc, calloc
 * and realloc stay CPython's; RAW's free may run without the GIL, on any thread: it reads the
 * sampled-block filter, and locks only for a sampled block (as the malloc host's free).  With any
 * other allocator in place (tracemalloc, the debug hooks, PYTHONMALLOC=malloc) free is wrapped, and
 * sampled blocks come from the wrapped allocator.
 *
 * The hooks hold the GIL (the domains' contract), so the frames of the
 * calling thread do not change under the call stack capture (frames.c).
 */
#include <stdatomic.h>
#include <string.h>

#include "preload.h"
#include "python_host.h"

/*
 * pymalloc serves requests of 1 to this many bytes (SMALL_REQUEST_THRESHOLD,
 * CPython 3.11's Objects/obmalloc.c); larger ones, and 0, it hands to RAW.
 */
#define PYHOST_PYMALLOC_MAX 512

static struct pyhost_allocator prev_mem, prev_obj, prev_raw;
static atomic_int installed;
/* Set with the hooks: OBJ and MEM frees are pymalloc's own, sampled blocks RAW's. */
static int free_direct;

static __attribute__((noinline)) void *alloc_slow(struct preload_thread *t,
						  const struct pyhost_allocator *a, size_t n,
						  size_t elsize, int zeroed)
{
	size_t bytes = n * elsize;

	preload_untake(t, bytes);
	size_t n_samples = sampler_countdown_expired(t, bytes);

	/* A sampled block pymalloc's free hands to RAW's, which we watch. */
	if (n_samples && free_direct)
		a = &prev_raw;
	void *p = zeroed ? a->calloc(a->ctx, n, elsize) : a->malloc(a->ctx, bytes);

	if (n_samples)
		sampler_track(t, p, n_samples, bytes);
	return p;
}

static inline __attribute__((always_inline)) void *hook_alloc(const struct pyhost_allocator *a,
							      size_t n, size_t elsize, int zeroed)
{
	struct preload_thread *t = &preload_self;
	size_t bytes;

	if (zeroed && __builtin_mul_overflow(n, elsize, &bytes))
		return a->calloc(a->ctx, n, elsize); /* fails */
	bytes = zeroed ? n * elsize : n;
	if (PRELOAD_LIKELY(preload_take(t, bytes)))
		return zeroed ? a->calloc(a->ctx, n, elsize) : a->malloc(a->ctx, n);
	return alloc_slow(t, a, zeroed ? n : bytes, zeroed ? elsize : 1, zeroed);
}

static inline __attribute__((always_inline)) void hook_free(const struct pyhost_allocator *a,
							    void *p)
{
	if (PRELOAD_UNLIKELY(atomic_load_explicit(&preload_free_gate, memory_order_relaxed)) && p &&
	    sampled_blocks_may_contain(p))
		sampler_block_freed(&preload_self, p);
	a->free(a->ctx, p);
}

/* The block q of `size` bytes (a's) moved into a RAW block: the new one, or NULL (q stays). */
static void *move_to_raw(const struct pyhost_allocator *a, void *q, size_t size)
{
	void *r = prev_raw.malloc(prev_raw.ctx, size);

	if (r) {
		memcpy(r, q, size);
		a->free(a->ctx, q);
	}
	return r;
}

/* realloc past its fast path: p may be sampled, or the countdown ran out
 * (expired: the fast path's take failed, the budget is short of size). */
static __attribute__((noinline)) void *realloc_slow(struct preload_thread *t,
						    const struct pyhost_allocator *a, void *p,
						    size_t size, int expired)
{
	uint64_t handle = 0;
	size_t n_samples = 0;

	if (PRELOAD_UNLIKELY(atomic_load_explicit(&preload_free_gate, memory_order_relaxed)) && p &&
	    sampled_blocks_may_contain(p))
		handle = sampled_blocks_remove(p);
	if (expired || PRELOAD_UNLIKELY(!preload_take(t, size))) {
		preload_untake(t, size);
		n_samples = sampler_countdown_expired(t, size);
	}
	void *q = a->realloc(a->ctx, p, size);
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
	/* Above PYHOST_PYMALLOC_MAX (and at 0) pymalloc's realloc returned a RAW block. */
	if (n_samples && free_direct && size - 1 < PYHOST_PYMALLOC_MAX) {
		void *r = move_to_raw(a, q, size);

		/* No room for the RAW block: q stays the program's, not tracked. */
		if (!r) {
			sampler_track(t, NULL, n_samples, size);
			return q;
		}
		q = r;
	}
	if (n_samples)
		sampler_track(t, q, n_samples, size);
	return q;
}

/* The fast path: p not sampled, the countdown not run out: a tail call. */
static inline __attribute__((always_inline)) void *hook_realloc(const struct pyhost_allocator *a,
								void *p, size_t size)
{
	struct preload_thread *t = &preload_self;

	if (PRELOAD_UNLIKELY(atomic_load_explicit(&preload_free_gate, memory_order_relaxed)) && p &&
	    sampled_blocks_may_contain(p))
		return realloc_slow(t, a, p, size, 0);
	if (PRELOAD_UNLIKELY(!preload_take(t, size)))
		return realloc_slow(t, a, p, size, 1);
	return a->realloc(a->ctx, p, size);
}

static void *mem_malloc(void *ctx, size_t size)
{
	(void)ctx;
	return hook_alloc(&prev_mem, size, 1, 0);
}
static void *mem_calloc(void *ctx, size_t n, size_t elsize)
{
	(void)ctx;
	return hook_alloc(&prev_mem, n, elsize, 1);
}
static void *mem_realloc(void *ctx, void *p, size_t size)
{
	(void)ctx;
	return hook_realloc(&prev_mem, p, size);
}
static void mem_free(void *ctx, void *p)
{
	(void)ctx;
	hook_free(&prev_mem, p);
}
static void *obj_malloc(void *ctx, size_t size)
{
	(void)ctx;
	return hook_alloc(&prev_obj, size, 1, 0);
}
static void *obj_calloc(void *ctx, size_t n, size_t elsize)
{
	(void)ctx;
	return hook_alloc(&prev_obj, n, elsize, 1);
}
static void *obj_realloc(void *ctx, void *p, size_t size)
{
	(void)ctx;
	return hook_realloc(&prev_obj, p, size);
}
static void obj_free(void *ctx, void *p)
{
	(void)ctx;
	hook_free(&prev_obj, p);
}
static void raw_free(void *ctx, void *p)
{
	(void)ctx;
	hook_free(&prev_raw, p);
}

void hooks_install(void)
{
	const char *name = cpython.current_allocator_name ? cpython.current_allocator_name() : NULL;

	if (atomic_load(&installed))
		return;
	/*
	 * prev_* and free_direct change only here, with the GIL held, while our
	 * MEM and OBJ wrappers are out of place: no call of those domains can be
	 * reading them.  RAW's free wrapper may still run on a thread without
	 * the GIL (after a detach it stays until the last call returns): RAW's
	 * previous allocator is the same each time (the default), and its ctx
	 * is never changed, so a call that read either version of the domain
	 * frees with the right function.
	 */
	free_direct = name && !strcmp(name, "pymalloc");
	cpython.get_allocator(PYHOST_DOMAIN_MEM, &prev_mem);
	cpython.get_allocator(PYHOST_DOMAIN_OBJ, &prev_obj);
	struct pyhost_allocator mem = {prev_mem.ctx, mem_malloc, mem_calloc, mem_realloc, mem_free};
	struct pyhost_allocator obj = {prev_obj.ctx, obj_malloc, obj_calloc, obj_realloc, obj_free};
	if (free_direct) {
		cpython.get_allocator(PYHOST_DOMAIN_RAW, &prev_raw);
		struct pyhost_allocator raw = prev_raw;

		raw.free = raw_free;
		mem.free = prev_mem.free;
		obj.free = prev_obj.free;
		/* RAW's free is watched before any sampled block is RAW's. */
		cpython.set_allocator(PYHOST_DOMAIN_RAW, &raw);
	}
	/* The previous allocators are in place before any call can reach ours. */
	cpython.set_allocator(PYHOST_DOMAIN_MEM, &mem);
	cpython.set_allocator(PYHOST_DOMAIN_OBJ, &obj);
	atomic_store(&installed, 1);
}

int hooks_uninstall(void)
{
	struct pyhost_allocator mem, obj, raw;

	if (!atomic_load(&installed))
		return 0;
	cpython.get_allocator(PYHOST_DOMAIN_MEM, &mem);
	cpython.get_allocator(PYHOST_DOMAIN_OBJ, &obj);
	cpython.get_allocator(PYHOST_DOMAIN_RAW, &raw);
	/* Someone (tracemalloc.start) wrapped ours: taking ours out would drop theirs. */
	if (mem.malloc != mem_malloc || obj.malloc != obj_malloc ||
	    (free_direct && raw.free != raw_free))
		return -1;
	cpython.set_allocator(PYHOST_DOMAIN_MEM, &prev_mem);
	cpython.set_allocator(PYHOST_DOMAIN_OBJ, &prev_obj);
	/* Sampled blocks still alive are RAW's: freed by RAW's own free from now on. */
	if (free_direct)
		cpython.set_allocator(PYHOST_DOMAIN_RAW, &prev_raw);
	atomic_store(&installed, 0);
	return 0;
}

int hooks_installed(void)
{
	return atomic_load(&installed);
}
