/*
 * rt marshaling: a value tree to bytes and back.  Unmarshaling ("intern")
 * counts the blocks first, allocates them all in one go (no collection can
 * run in between), fills them, reports them to memprof as one bulk
 * allocation, then reaches a safe point.  As in OCaml, a small value (all
 * its blocks, headers included, fit in RT_MAX_YOUNG_WOSIZE + 1 words) is
 * built in the minor heap, out of one bump; a bigger one in the major heap.
 *
 * Format: the magic, then the value in preorder.  A value is
 *   'I' <8-byte word>                                  immediate integer
 *   'B' <1-byte tag> <8-byte wosize> <wosize values>   scanned block
 *   'B' <1-byte tag> <8-byte wosize> <wosize words>    tag >= RT_NO_SCAN_TAG
 * Words are in host byte order.  Custom blocks cannot be marshaled.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

static const char marshal_magic[4] = {'R', 'T', 'M', '1'};

enum { ITEM_INT = 'I', ITEM_BLOCK = 'B' };
#define ITEM_BLOCK_HEADER_BYTES (1 + 1 + 8)
#define ITEM_MIN_BYTES (1 + 8)

struct out_buf {
	unsigned char *data;
	size_t len;
	size_t cap;
	int err;
};

static void put(struct out_buf *b, const void *src, size_t n)
{
	if (b->err)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		unsigned char *data;

		while (cap < b->len + n)
			cap *= 2;
		data = realloc(b->data, cap);
		if (!data) {
			b->err = ENOMEM;
			return;
		}
		b->data = data;
		b->cap = cap;
	}
	memcpy(b->data + b->len, src, n);
	b->len += n;
}

static void put_item(struct out_buf *b, rt_value v)
{
	unsigned char kind;

	if (RT_IS_INT(v)) {
		kind = ITEM_INT;
		put(b, &kind, 1);
		put(b, &v, sizeof(v));
	} else {
		uintptr_t hdr = RT_HDR(v);
		unsigned char tag = (unsigned char)RT_HDR_TAG(hdr);
		uint64_t wosize = RT_HDR_WOSIZE(hdr);

		kind = ITEM_BLOCK;
		put(b, &kind, 1);
		put(b, &tag, 1);
		put(b, &wosize, sizeof(wosize));
		if (tag >= RT_NO_SCAN_TAG)
			put(b, RT_FIELDS(v), wosize * RT_WORD);
	}
}

/* Pending blocks are kept as pairs (block, next field) on a vector. */
int rt_marshal(rt_value v, void **data_out, size_t *len_out)
{
	struct out_buf b = {0};
	struct rt_vec stack = {0};

	put(&b, marshal_magic, sizeof(marshal_magic));
	for (;;) {
		if (!RT_IS_INT(v) && RT_HDR_TAG(RT_HDR(v)) == RT_CUSTOM_TAG) {
			b.err = EINVAL;
			break;
		}
		put_item(&b, v);
		if (!RT_IS_INT(v) && RT_HDR_TAG(RT_HDR(v)) < RT_NO_SCAN_TAG) {
			if (rt_vec_push(&stack, v) || rt_vec_push(&stack, 0))
				b.err = ENOMEM;
		}
		if (b.err)
			break;
		/* Next value: the next field of the innermost unfinished block. */
		while (stack.len > 0) {
			rt_value blk = stack.items[stack.len - 2];
			size_t i = stack.items[stack.len - 1];

			if (i < rt_wosize(blk)) {
				stack.items[stack.len - 1] = i + 1;
				v = RT_FIELDS(blk)[i];
				break;
			}
			stack.len -= 2;
		}
		if (stack.len == 0)
			break;
	}
	rt_vec_free(&stack);
	if (b.err) {
		free(b.data);
		return b.err;
	}
	*data_out = b.data;
	*len_out = b.len;
	return 0;
}

/* ---- Unmarshal ---- */

struct reader {
	const unsigned char *p;
	const unsigned char *end;
};

static int get(struct reader *r, void *dst, size_t n)
{
	if ((size_t)(r->end - r->p) < n)
		return EINVAL;
	memcpy(dst, r->p, n);
	r->p += n;
	return 0;
}

struct item {
	unsigned char kind;
	unsigned char tag;
	uint64_t word;		  /* the integer, or the wosize of a block */
	const unsigned char *raw; /* the words of a no-scan block */
};

static int read_item(struct reader *r, struct item *it)
{
	if (get(r, &it->kind, 1))
		return EINVAL;
	if (it->kind == ITEM_INT)
		return get(r, &it->word, 8) || !RT_IS_INT(it->word) ? EINVAL : 0;
	if (it->kind != ITEM_BLOCK || get(r, &it->tag, 1) || get(r, &it->word, 8))
		return EINVAL;
	if (it->word == 0 || it->tag == RT_CUSTOM_TAG)
		return EINVAL;
	if (it->tag >= RT_NO_SCAN_TAG) {
		if (it->word > (uint64_t)(r->end - r->p) / RT_WORD)
			return EINVAL;
		it->raw = r->p;
		r->p += it->word * RT_WORD;
	} else if (it->word > (uint64_t)(r->end - r->p) / ITEM_MIN_BYTES) {
		return EINVAL;
	}
	return 0;
}

/* First pass: validate and count blocks. */
static int count_blocks(struct reader r, size_t *nblocks_out)
{
	struct rt_vec pending = {0}; /* values still to read per open block */
	size_t nblocks = 0;
	struct item it;
	int err = rt_vec_push(&pending, 1);

	while (!err && pending.len > 0) {
		if (pending.items[pending.len - 1] == 0) {
			pending.len--;
			continue;
		}
		pending.items[pending.len - 1]--;
		err = read_item(&r, &it);
		if (err || it.kind != ITEM_BLOCK)
			continue;
		nblocks++;
		if (it.tag < RT_NO_SCAN_TAG)
			err = rt_vec_push(&pending, it.word);
	}
	if (!err && r.p != r.end)
		err = EINVAL;
	rt_vec_free(&pending);
	*nblocks_out = nblocks;
	return err;
}

/* Second pass: the blocks exist (preorder); link and fill them. */
static int fill_blocks(struct reader r, const rt_value *blocks, rt_value *root)
{
	struct rt_vec open = {0}; /* pairs (block, next field) */
	size_t next_block = 0;
	struct item it;
	int err = 0;

	do {
		rt_value *dest = root;

		if (open.len > 0) {
			rt_value blk = open.items[open.len - 2];

			dest = &RT_FIELDS(blk)[open.items[open.len - 1]++];
		}
		read_item(&r, &it); /* validated by count_blocks */
		if (it.kind == ITEM_INT) {
			*dest = it.word;
		} else {
			rt_value b = blocks[next_block++];

			*dest = b;
			if (it.tag >= RT_NO_SCAN_TAG)
				memcpy(RT_FIELDS(b), it.raw, it.word * RT_WORD);
			else if (rt_vec_push(&open, b) || rt_vec_push(&open, 0))
				err = ENOMEM;
		}
		while (open.len > 0 &&
		       open.items[open.len - 1] == rt_wosize(open.items[open.len - 2]))
			open.len -= 2;
	} while (!err && open.len > 0);
	rt_vec_free(&open);
	return err;
}

/* The sizes and tags of the counted blocks, in preorder; total words. */
static size_t block_sizes(struct reader r, size_t nblocks, size_t *wosizes, unsigned char *tags)
{
	size_t k = 0, whsize = 0;
	struct item it;

	while (k < nblocks) {
		read_item(&r, &it);
		if (it.kind != ITEM_BLOCK)
			continue;
		wosizes[k] = it.word;
		tags[k] = it.tag;
		whsize += it.word + 1;
		k++;
	}
	return whsize;
}

/* Allocate the counted blocks: small values in the minor heap (one bump,
 * carved), others in the major heap, back to back. */
static int alloc_blocks(size_t nblocks, size_t whsize, const size_t *wosizes,
			const unsigned char *tags, rt_value *blocks)
{
	if (whsize <= RT_MAX_YOUNG_WOSIZE + 1) {
		uintptr_t *p = (uintptr_t *)rt_young_alloc_raw(whsize);

		if (!p)
			return ENOMEM;
		for (size_t k = 0; k < nblocks; k++) {
			*p = RT_MAKE_HDR(wosizes[k], 0, tags[k]);
			blocks[k] = (rt_value)(p + 1);
			for (size_t j = 1; j <= wosizes[k]; j++)
				p[j] = RT_UNIT;
			p += wosizes[k] + 1;
		}
		return 0;
	}
	rt_major_maybe_collect();
	for (size_t k = 0; k < nblocks; k++) {
		blocks[k] = rt_major_alloc_raw(wosizes[k], tags[k]);
		if (!blocks[k])
			return ENOMEM;
		rt.stats.major_words += wosizes[k] + 1;
	}
	return 0;
}

int rt_unmarshal(const void *data, size_t len, rt_value *out)
{
	struct reader r = {.p = data, .end = (const unsigned char *)data + len};
	rt_value result = RT_UNIT;
	rt_value *blocks = NULL;
	size_t *wosizes = NULL;
	unsigned char *tags = NULL;
	size_t nblocks;
	int err;

	if (!data || len < sizeof(marshal_magic) ||
	    memcmp(data, marshal_magic, sizeof(marshal_magic)))
		return EINVAL;
	r.p += sizeof(marshal_magic);
	err = count_blocks(r, &nblocks);
	if (err)
		return err;
	if (nblocks > 0) {
		blocks = malloc(nblocks * sizeof(*blocks));
		wosizes = malloc(nblocks * sizeof(*wosizes));
		tags = malloc(nblocks);
		if (!blocks || !wosizes || !tags) {
			err = ENOMEM;
			goto out;
		}
		size_t whsize = block_sizes(r, nblocks, wosizes, tags);
		err = alloc_blocks(nblocks, whsize, wosizes, tags, blocks);
		if (err)
			goto out;
	}
	err = fill_blocks(r, blocks, &result);
	if (err)
		goto out;
	if (nblocks > 0)
		rt_mp_track_intern(nblocks, blocks, wosizes);
	free(blocks);
	free(wosizes);
	free(tags);
	blocks = NULL;
	wosizes = NULL;
	tags = NULL;
	RT_ROOTS(1, &result);
	err = rt_safe_point();
	RT_ROOTS_END();
	if (!err)
		*out = result;
out:
	free(blocks);
	free(wosizes);
	free(tags);
	return err;
}
