/*
 * rt custom blocks: a C pointer and its finalizer in a block of tag
 * RT_CUSTOM_TAG (not scanned), sampled by memprof for its virtual size.
 * Out-of-heap memory of promoted custom blocks hastens the next major
 * collection (minor.c:oldify, major.c:rt_major_maybe_collect).
 * If rt_alloc_custom fails, data stays the caller's: its finalizer never
 * runs.  Otherwise the finalizer runs exactly once: when a minor collection finds the young
 * block dead, when a sweep frees the major block, or at rt_shutdown.
 */
#include <errno.h>

#include "rt_internal.h"

typedef void (*custom_finalizer)(void *data);

union finalizer_word {
	custom_finalizer fn;
	rt_value word;
};

int rt_alloc_custom(void *data, size_t mem_bytes, void (*finalize)(void *data), rt_value *out)
{
	size_t wosize = RT_CUSTOM_WOSIZE;
	union finalizer_word fin = {.word = 0};
	rt_value v;
	int err;

	err = rt_alloc_young(1, &wosize, RT_CUSTOM_TAG, &v);
	if (err)
		return err;
	fin.fn = finalize;
	RT_FIELDS(v)[0] = (rt_value)data;
	RT_FIELDS(v)[1] = fin.word;
	RT_FIELDS(v)[RT_CUSTOM_MEM_FIELD] = RT_VAL_INT(mem_bytes);
	if (rt_vec_push(&rt.young_customs, v))
		rt_fatal("out of memory (custom blocks)");
	rt_mp_track_custom(v, mem_bytes);
	RT_ROOTS(1, &v);
	err = rt_safe_point();
	RT_ROOTS_END();
	if (err) {
		/* A failed allocation: data stays the caller's, no finalizer. */
		RT_FIELDS(v)[1] = 0;
		return err;
	}
	*out = v;
	return 0;
}

void *rt_custom_data(rt_value block)
{
	return (void *)RT_FIELDS(block)[0];
}

void rt_custom_finalize(rt_value block)
{
	union finalizer_word fin = {.word = RT_FIELDS(block)[1]};

	RT_FIELDS(block)[1] = 0;
	if (fin.word)
		fin.fn((void *)RT_FIELDS(block)[0]);
}
