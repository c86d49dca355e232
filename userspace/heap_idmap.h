/*
 * The loader's idmaps (runtime-probes/core/idmap.h, the tree's one hash
 * map) take their slot arrays from the heap: one allocator for them all.
 */
#ifndef MEMPROF_HEAP_IDMAP_H
#define MEMPROF_HEAP_IDMAP_H

#include <stdlib.h>

#include "core/idmap.h"

static inline void *heap_idmap_zeroed(size_t bytes)
{
	return calloc(1, bytes);
}

static inline void heap_idmap_release(void *p, size_t bytes)
{
	(void)bytes;
	free(p);
}

static const struct idmap_allocator heap_idmap_allocator = {heap_idmap_zeroed, heap_idmap_release};

#endif
