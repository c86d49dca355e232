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
 * The hooks hold the GIL (the domains' contract), so the frames of the
 * calling thread do not change under the call stack capture (frames.c).
 */
#include <stdatomic.h>
#include <string.h>

#include "preload.h"
#include "python_host.h"

static struct pyhost_allocator prev_mem, prev_obj;
static atomic_int installed;

static __attribute__((noinline)) void *alloc_slow(struct preload_thread *t,
						  const struct pyhost_allocator *a, size_t n,
						  size_t elsize, int zeroed)
{
	size_t bytes = n * elsize;

	preload_untake(t, bytes);
	size_t n_samples = sampler_countdown_expired(t, bytes);
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

static void *hook_realloc(const struct pyhost_allocator *a, void *p, size_t size)
{
	struct preload_thread *t = &preload_self;
	uint64_t handle = 0;
	size_t n_samples = 0;

	if (PRELOAD_UNLIKELY(atomic_load_explicit(&preload_free_gate, memory_order_relaxed)) && p &&
	    sampled_blocks_may_contain(p))
		handle = sampled_blocks_remove(p);
	if (PRELOAD_UNLIKELY(!preload_take(t, size))) {
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
	if (n_samples)
		sampler_track(t, q, n_samples, size);
	return q;
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

void hooks_install(void)
{
	struct pyhost_allocator mem = {NULL, mem_malloc, mem_calloc, mem_realloc, mem_free};
	struct pyhost_allocator obj = {NULL, obj_malloc, obj_calloc, obj_realloc, obj_free};

	if (atomic_load(&installed))
		return;
	/*
	 * prev_* change only here and in hooks_uninstall, with the GIL held, while
	 * our wrappers are out of place: no call of a domain can be reading them.
	 */
	/* The previous allocators are in place before any call can reach ours. */
	cpython.get_allocator(PYHOST_DOMAIN_MEM, &prev_mem);
	cpython.get_allocator(PYHOST_DOMAIN_OBJ, &prev_obj);
	cpython.set_allocator(PYHOST_DOMAIN_MEM, &mem);
	cpython.set_allocator(PYHOST_DOMAIN_OBJ, &obj);
	atomic_store(&installed, 1);
}

int hooks_uninstall(void)
{
	struct pyhost_allocator mem, obj;

	if (!atomic_load(&installed))
		return 0;
	cpython.get_allocator(PYHOST_DOMAIN_MEM, &mem);
	cpython.get_allocator(PYHOST_DOMAIN_OBJ, &obj);
	/* Someone (tracemalloc.start) wrapped ours: taking ours out would drop theirs. */
	if (mem.malloc != mem_malloc || obj.malloc != obj_malloc)
		return -1;
	cpython.set_allocator(PYHOST_DOMAIN_MEM, &prev_mem);
	cpython.set_allocator(PYHOST_DOMAIN_OBJ, &prev_obj);
	atomic_store(&installed, 0);
	return 0;
}

int hooks_installed(void)
{
	return atomic_load(&installed);
}
