/*
 * rt major collection: a non-incremental mark (explicit stack) from the
 * local and global roots and memprof's user data, then memprof_major_update
 * (which asks which tracked blocks died), then the sweep of the block store
 * (major_alloc.c).  Also when to collect, and direct major allocation.
 */
#include <errno.h>
#include <stdlib.h>

#include "rt_internal.h"

/* ---- Mark ---- */

static void mark_value(rt_value v)
{
	uintptr_t hdr;

	if (RT_IS_INT(v) || v == 0)
		return;
	hdr = RT_HDR(v);
	if (RT_HDR_COLOR(hdr) == RT_BLACK)
		return;
	RT_HDR(v) = hdr | ((uintptr_t)RT_BLACK << 8);
	if (RT_HDR_TAG(hdr) < RT_NO_SCAN_TAG && rt_vec_push(&rt.mark_stack, v))
		rt_fatal("out of memory (mark stack)");
}

static void mark_root(uintptr_t *root, void *ctx)
{
	(void)ctx;
	mark_value(*root);
}

static void mark_all(void)
{
	rt_scan_local_roots(mark_root, NULL);
	rt_mp_scan_roots(mark_root, NULL);
	while (rt.mark_stack.len > 0) {
		rt_value b = rt.mark_stack.items[--rt.mark_stack.len];
		size_t wosize = RT_HDR_WOSIZE(RT_HDR(b));

		for (size_t i = 0; i < wosize; i++)
			mark_value(RT_FIELDS(b)[i]);
	}
}

void rt_major_gc(void)
{
	rt_minor_gc();
	rt.in_gc = 1;
	rt_probe_gc(MEMPROF_PROBE_GC_MAJOR_START, rt.young_end - rt.young_ptr,
		    rt.stats.major_heap_words * RT_WORD);
	mark_all();
	rt_mp_major_update();
	rt_major_sweep();
	rt.major_live_after_gc = rt.stats.major_heap_words;
	rt.custom_pressure_words = 0;
	rt.stats.major_collections++;
	rt_probe_gc(MEMPROF_PROBE_GC_MAJOR_END, rt.young_end - rt.young_ptr,
		    rt.stats.major_heap_words * RT_WORD);
	rt.in_gc = 0;
}

void rt_major_maybe_collect(void)
{
	size_t threshold = rt.major_live_after_gc * RT_MAJOR_GROWTH;

	if (threshold < RT_MAJOR_MIN_WORDS)
		threshold = RT_MAJOR_MIN_WORDS;
	if (rt.stats.major_heap_words + rt.custom_pressure_words > threshold)
		rt_major_gc();
}

/*
 * A block born in the major heap.  The collection it may trigger runs
 * before it exists; the postponed callbacks (its own alloc_major among
 * them) run before returning, with the block rooted, so a callback's
 * error reaches the caller (the block is then dropped).
 */
int rt_alloc_major(size_t wosize, unsigned tag, rt_value *out)
{
	rt_value v;
	int err;

	if (wosize == 0 || tag > 255 || tag == RT_CUSTOM_TAG)
		return EINVAL;
	rt_major_maybe_collect();
	v = rt_major_alloc_raw(wosize, tag);
	if (!v)
		return ENOMEM;
	rt.stats.major_words += wosize + 1;
	rt_mp_track_major(v, wosize);
	RT_ROOTS(1, &v);
	err = rt_safe_point();
	RT_ROOTS_END();
	if (err)
		return err;
	*out = v;
	return 0;
}
