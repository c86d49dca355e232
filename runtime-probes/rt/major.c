/*
 * rt major heap: blocks malloc'ed one by one and chained in a list, a
 * non-incremental mark (explicit stack) and sweep, direct major
 * allocation.  Marking is done when memprof_major_update asks which tracked
 * blocks died, before the sweep frees them.
 */
#include <errno.h>
#include <stdlib.h>

#include "rt_internal.h"

struct rt_major_block {
	struct rt_major_block *next;
	uintptr_t header;
	rt_value fields[];
};

rt_value rt_major_alloc_raw(size_t wosize, unsigned tag)
{
	struct rt_major_block *b;

	if (wosize == 0 || wosize > (SIZE_MAX >> 10) / RT_WORD - 2)
		return 0;
	b = malloc(sizeof(*b) + wosize * RT_WORD);
	if (!b)
		return 0;
	b->header = RT_MAKE_HDR(wosize, RT_WHITE, tag);
	for (size_t i = 0; i < wosize; i++)
		b->fields[i] = RT_UNIT;
	b->next = rt.major_blocks;
	rt.major_blocks = b;
	rt.stats.major_heap_words += wosize + 1;
	return (rt_value)b->fields;
}

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

/* ---- Sweep ---- */

static void free_block(struct rt_major_block *b)
{
	if (RT_HDR_TAG(b->header) == RT_CUSTOM_TAG)
		rt_custom_finalize((rt_value)b->fields);
	rt.stats.major_heap_words -= RT_HDR_WOSIZE(b->header) + 1;
	free(b);
}

static void sweep(void)
{
	struct rt_major_block **link = &rt.major_blocks;

	while (*link) {
		struct rt_major_block *b = *link;

		if (RT_HDR_COLOR(b->header) == RT_BLACK) {
			b->header &= ~((uintptr_t)3 << 8);
			link = &b->next;
		} else {
			*link = b->next;
			free_block(b);
		}
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
	sweep();
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

/* Free every major block (rt_shutdown): custom blocks are finalized. */
void rt_major_free_all(void)
{
	while (rt.major_blocks) {
		struct rt_major_block *b = rt.major_blocks;

		rt.major_blocks = b->next;
		free_block(b);
	}
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
