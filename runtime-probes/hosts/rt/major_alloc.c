/*
 * rt major heap store: blocks up to RT_MAX_YOUNG_WOSIZE fields live in
 * size-class chunks (one class per size, a free list per class threaded
 * through the free slots); larger blocks are malloc'ed one by one and
 * chained.  The sweep frees unmarked blocks (finalizing custom ones),
 * whitens marked ones, rebuilds the free lists in address order and gives
 * back chunks left empty.
 */
#include <stdlib.h>

#include "rt_internal.h"

/* Bytes malloc'ed per chunk of small blocks. */
#define CHUNK_BYTES ((size_t)64 * 1024)
#define SMALL_MAX_WOSIZE RT_MAX_YOUNG_WOSIZE
#define RT_FREE_COLOR 1u /* a free slot: field 0 links the free list */

struct chunk {
	struct chunk *next;
	size_t whsize; /* words per slot, header included */
	size_t nslots;
	uintptr_t words[];
};

struct large_block {
	struct large_block *next;
	uintptr_t header;
	rt_value fields[];
};

static struct {
	struct chunk *chunks[SMALL_MAX_WOSIZE + 1];
	uintptr_t free[SMALL_MAX_WOSIZE + 1]; /* first free slot (its header), by wosize */
	struct large_block *large;
} heap;

static int chunk_new(size_t wosize)
{
	size_t whsize = wosize + 1;
	size_t nslots = (CHUNK_BYTES - sizeof(struct chunk)) / (whsize * RT_WORD);
	struct chunk *c = malloc(sizeof(*c) + nslots * whsize * RT_WORD);

	if (!c)
		return -1;
	c->whsize = whsize;
	c->nslots = nslots;
	c->next = heap.chunks[wosize];
	heap.chunks[wosize] = c;
	for (size_t i = nslots; i-- > 0;) {
		uintptr_t *slot = &c->words[i * whsize];

		slot[0] = RT_MAKE_HDR(wosize, RT_FREE_COLOR, 0);
		slot[1] = heap.free[wosize];
		heap.free[wosize] = (uintptr_t)slot;
	}
	return 0;
}

static rt_value small_alloc(size_t wosize, unsigned tag)
{
	uintptr_t *slot;

	if (!heap.free[wosize] && chunk_new(wosize))
		return 0;
	slot = (uintptr_t *)heap.free[wosize];
	heap.free[wosize] = slot[1];
	slot[0] = RT_MAKE_HDR(wosize, RT_WHITE, tag);
	for (size_t i = 1; i <= wosize; i++)
		slot[i] = RT_UNIT;
	return (rt_value)(slot + 1);
}

static rt_value large_alloc(size_t wosize, unsigned tag)
{
	struct large_block *b;

	if (wosize > (SIZE_MAX >> 10) / RT_WORD - 2)
		return 0;
	b = malloc(sizeof(*b) + wosize * RT_WORD);
	if (!b)
		return 0;
	b->header = RT_MAKE_HDR(wosize, RT_WHITE, tag);
	for (size_t i = 0; i < wosize; i++)
		b->fields[i] = RT_UNIT;
	b->next = heap.large;
	heap.large = b;
	return (rt_value)b->fields;
}

rt_value rt_major_alloc_raw(size_t wosize, unsigned tag)
{
	rt_value v;

	if (wosize == 0)
		return 0;
	v = wosize <= SMALL_MAX_WOSIZE ? small_alloc(wosize, tag) : large_alloc(wosize, tag);
	if (v)
		rt.stats.major_heap_words += wosize + 1;
	return v;
}

/* A dead block goes: its finalizer runs, its words leave the count. */
static void block_dies(rt_value v)
{
	uintptr_t hdr = RT_HDR(v);

	if (RT_HDR_TAG(hdr) == RT_CUSTOM_TAG)
		rt_custom_finalize(v);
	rt.stats.major_heap_words -= RT_HDR_WOSIZE(hdr) + 1;
}

static void sweep_class(size_t wosize, int free_all)
{
	struct chunk **link = &heap.chunks[wosize];
	uintptr_t *tail = &heap.free[wosize]; /* the link to write next */

	while (*link) {
		struct chunk *c = *link;
		uintptr_t *chunk_tail = tail;
		size_t live = 0;

		for (size_t i = 0; i < c->nslots; i++) {
			uintptr_t *slot = &c->words[i * c->whsize];
			unsigned color = RT_HDR_COLOR(slot[0]);

			if (color == RT_BLACK && !free_all) {
				slot[0] &= ~((uintptr_t)3 << 8);
				live++;
				continue;
			}
			if (color != RT_FREE_COLOR) {
				block_dies((rt_value)(slot + 1));
				slot[0] = RT_MAKE_HDR(wosize, RT_FREE_COLOR, 0);
			}
			*tail = (uintptr_t)slot;
			tail = &slot[1];
		}
		if (live == 0) { /* give the empty chunk back */
			tail = chunk_tail;
			*link = c->next;
			free(c);
		} else {
			link = &c->next;
		}
	}
	*tail = 0;
}

static void sweep_large(int free_all)
{
	struct large_block **link = &heap.large;

	while (*link) {
		struct large_block *b = *link;

		if (RT_HDR_COLOR(b->header) == RT_BLACK && !free_all) {
			b->header &= ~((uintptr_t)3 << 8);
			link = &b->next;
		} else {
			*link = b->next;
			block_dies((rt_value)b->fields);
			free(b);
		}
	}
}

void rt_major_sweep(void)
{
	for (size_t w = 1; w <= SMALL_MAX_WOSIZE; w++)
		sweep_class(w, 0);
	sweep_large(0);
}

/* Free every major block (rt_shutdown): custom blocks are finalized. */
void rt_major_free_all(void)
{
	for (size_t w = 1; w <= SMALL_MAX_WOSIZE; w++)
		sweep_class(w, 1);
	sweep_large(1);
}
