/*
 * rt's only link to the memprof core.  Every memprof call the runtime makes
 * goes through the wrappers below, so one compile-time switch removes the
 * hook entirely: with -DRT_NO_MEMPROF the minor-heap limit is the GC limit
 * alone, no block is ever tracked and no memprof symbol is referenced
 * (build/workload-seed-nohook, the "no hook at all" baseline of make bench).
 */
#ifndef RT_MEMPROF_H
#define RT_MEMPROF_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "memprof_probe_abi.h"

#ifdef RT_NO_MEMPROF
#define RT_WITH_MEMPROF 0
#else
#define RT_WITH_MEMPROF 1
#include "memprof_host.h"
#endif

typedef void (*rt_root_visitor)(uintptr_t *root, void *ctx);

#if RT_WITH_MEMPROF

void rt_memprof_install(void); /* runtime.c: memprof_host_init, once */

static inline uintptr_t rt_mp_renew_minor_sample(uintptr_t young_ptr, uintptr_t young_start)
{
	return memprof_renew_minor_sample(young_ptr, young_start);
}

static inline int rt_mp_sampling_here(void)
{
	return memprof_sampling_here();
}

static inline int rt_mp_track_young(uintptr_t young_ptr, size_t nallocs, const size_t *wosizes,
				    uintptr_t (*reserve)(void *ctx), void *ctx, uintptr_t *base_out)
{
	return memprof_track_young(young_ptr, nallocs, wosizes, reserve, ctx, base_out);
}

static inline void rt_mp_track_major(uintptr_t block, size_t wosize)
{
	memprof_track_major(block, wosize);
}

static inline void rt_mp_track_custom(uintptr_t block, size_t mem_bytes)
{
	memprof_track_custom(block, mem_bytes);
}

static inline void rt_mp_track_intern(size_t n, const uintptr_t *blocks, const size_t *wosizes)
{
	memprof_track_intern(n, blocks, wosizes);
}

static inline void rt_mp_scan_young_roots(rt_root_visitor f, void *ctx)
{
	memprof_scan_young_roots(f, ctx);
}

static inline void rt_mp_scan_roots(rt_root_visitor f, void *ctx)
{
	memprof_scan_roots(f, ctx);
}

static inline void rt_mp_minor_update(void)
{
	memprof_minor_update();
}

static inline void rt_mp_major_update(void)
{
	memprof_major_update();
}

static inline int rt_mp_run_postponed(void)
{
	return memprof_run_postponed();
}

static inline void rt_mp_thread_switched(void)
{
	memprof_thread_switched();
}

static inline void rt_mp_thread_exit(void)
{
	memprof_thread_exit();
}

#else /* RT_NO_MEMPROF */

static inline void rt_memprof_install(void)
{
}

static inline uintptr_t rt_mp_renew_minor_sample(uintptr_t young_ptr, uintptr_t young_start)
{
	(void)young_ptr;
	return young_start;
}

static inline int rt_mp_sampling_here(void)
{
	return 0;
}

static inline int rt_mp_track_young(uintptr_t young_ptr, size_t nallocs, const size_t *wosizes,
				    uintptr_t (*reserve)(void *ctx), void *ctx, uintptr_t *base_out)
{
	(void)young_ptr, (void)nallocs, (void)wosizes;
	*base_out = reserve(ctx);
	return 0;
}

static inline void rt_mp_track_major(uintptr_t block, size_t wosize)
{
	(void)block, (void)wosize;
}

static inline void rt_mp_track_custom(uintptr_t block, size_t mem_bytes)
{
	(void)block, (void)mem_bytes;
}

static inline void rt_mp_track_intern(size_t n, const uintptr_t *blocks, const size_t *wosizes)
{
	(void)n, (void)blocks, (void)wosizes;
}

static inline void rt_mp_scan_young_roots(rt_root_visitor f, void *ctx)
{
	(void)f, (void)ctx;
}

static inline void rt_mp_scan_roots(rt_root_visitor f, void *ctx)
{
	(void)f, (void)ctx;
}

static inline void rt_mp_minor_update(void)
{
}

static inline void rt_mp_major_update(void)
{
}

static inline int rt_mp_run_postponed(void)
{
	return 0;
}

static inline void rt_mp_thread_switched(void)
{
}

static inline void rt_mp_thread_exit(void)
{
}

#endif /* RT_NO_MEMPROF */

/* The gc timeline probe (memprof:gc), phase one of MEMPROF_PROBE_GC_*. */
#if RT_WITH_MEMPROF
#include "memprof_probes.h"
#define rt_probe_gc(phase, minor_bytes, major_bytes)                                               \
	memprof_probe_gc((phase), (minor_bytes), (major_bytes))
#else
#define rt_probe_gc(phase, minor_bytes, major_bytes)                                               \
	((void)(phase), (void)(minor_bytes), (void)(major_bytes))
#endif

#endif
