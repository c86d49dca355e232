/*
 * rt minor heap: bump allocation downwards with the memprof trigger folded
 * into the limit, the allocation slow path (safe point, collection,
 * sampling), and the copying minor collection that promotes live young
 * blocks into the major heap.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

int rt_minor_init(size_t words)
{
	uintptr_t *base = malloc(words * RT_WORD);

	if (!base)
		return ENOMEM;
	rt.minor_base = base;
	rt.minor_words = words;
	rt.young_start = (uintptr_t)base;
	rt.young_end = (uintptr_t)(base + words);
	rt.young_ptr = rt.young_end;
	rt.young_trigger = rt.young_start;
	rt_update_young_limit();
	return 0;
}

void rt_minor_free(void)
{
	free(rt.minor_base);
	rt.minor_base = NULL;
	rt.young_start = rt.young_end = rt.young_ptr = rt.young_limit = 0;
	rt.young_trigger = 0;
}

int rt_set_minor_heap_words(size_t words)
{
	uintptr_t *old = rt.minor_base;
	int err;

	if (words < RT_MIN_MINOR_WORDS)
		return EINVAL;
	rt_minor_gc();
	err = rt_minor_init(words);
	if (err)
		return err; /* the old, empty heap stays */
	free(old);
	rt_renew_minor_sample();
	return 0;
}

void rt_remember_field(rt_value *field)
{
	if (rt_vec_push(&rt.ref_table, (uintptr_t)field))
		rt_fatal("out of memory (remembered set)");
}

/* ---- Allocation ---- */

static void init_blocks(uintptr_t base, size_t n, const size_t *wosizes, unsigned tag,
			rt_value *out)
{
	uintptr_t *p = (uintptr_t *)base;

	for (size_t i = 0; i < n; i++) {
		*p = RT_MAKE_HDR(wosizes[i], 0, tag);
		if (out)
			out[i] = (rt_value)(p + 1);
		for (size_t j = 1; j <= wosizes[i]; j++)
			p[j] = RT_UNIT;
		p += wosizes[i] + 1;
	}
}

static size_t young_free_words(void)
{
	return (rt.young_ptr - rt.young_start) / RT_WORD;
}

struct young_request {
	size_t n;
	const size_t *wosizes;
	size_t whsize; /* sum of wosizes[i] + 1 */
	unsigned tag;
};

/*
 * The raw allocation: collect if needed, bump, initialise.  Never samples.
 * 0 if the request cannot fit (a callback shrank the minor heap).
 */
static uintptr_t young_reserve(void *ctx)
{
	const struct young_request *req = ctx;

	if (req->whsize > rt.minor_words)
		return 0;
	while (young_free_words() < req->whsize)
		rt_minor_gc();
	rt.young_ptr -= req->whsize * RT_WORD;
	init_blocks(rt.young_ptr, req->n, req->wosizes, req->tag, NULL);
	rt.stats.minor_words += req->whsize;
	return rt.young_ptr;
}

/*
 * The slow path: the bump crossed young_limit.  That is a requested safe
 * point, a full minor heap, or the memprof trigger.  The safe point runs
 * first (its error is the allocation's), then collections until the
 * request fits, then sampling if the bump still crosses the trigger.
 */
static int alloc_slow(struct young_request *req, uintptr_t *base_out)
{
	int err;

	for (;;) {
		err = rt_safe_point();
		if (err)
			return err;
		if (young_free_words() >= req->whsize)
			break;
		if (req->whsize > rt.minor_words)
			return ENOMEM; /* a callback shrank the minor heap */
		rt_minor_gc();
		rt_major_maybe_collect();
	}
	if (RT_WITH_MEMPROF && rt.young_ptr - req->whsize * RT_WORD < rt.young_trigger &&
	    rt_mp_sampling_here()) {
		err = rt_mp_track_young(rt.young_ptr, req->n, req->wosizes, young_reserve, req,
					base_out);
		rt_renew_minor_sample();
		return err;
	}
	*base_out = young_reserve(req);	     /* fits: checked above */
	if (rt.young_ptr < rt.young_trigger) /* stale trigger: sampling is off here */
		rt_renew_minor_sample();
	return 0;
}

int rt_alloc_young(size_t n, const size_t *wosizes, unsigned tag, rt_value *out)
{
	struct young_request req = {.n = n, .wosizes = wosizes, .whsize = 0, .tag = tag};
	uintptr_t new_ptr;
	uintptr_t base;
	int err;

	for (size_t i = 0; i < n; i++) {
		if (wosizes[i] == 0 || wosizes[i] > RT_MAX_YOUNG_WOSIZE)
			return EINVAL;
		req.whsize += wosizes[i] + 1;
	}
	if (n == 0 || tag > 255 || req.whsize > rt.minor_words)
		return EINVAL;
	new_ptr = rt.young_ptr - req.whsize * RT_WORD;
	if (new_ptr >= __atomic_load_n(&rt.young_limit, __ATOMIC_RELAXED) &&
	    new_ptr < rt.young_ptr) {
		rt.young_ptr = new_ptr;
		init_blocks(new_ptr, n, wosizes, tag, out);
		rt.stats.minor_words += req.whsize;
		return 0;
	}
	err = alloc_slow(&req, &base);
	if (err)
		return err;
	init_blocks(base, n, wosizes, tag, out);
	return 0;
}

/*
 * The slow path of rt_alloc, out of line so that the fast path needs no
 * stack frame and saves no register.
 */
static __attribute__((noinline)) int alloc_one_slow(size_t wosize, unsigned tag, rt_value *out)
{
	if (tag == RT_CUSTOM_TAG)
		return EINVAL;
	if (wosize > RT_MAX_YOUNG_WOSIZE)
		return rt_alloc_major(wosize, tag, out);
	return rt_alloc_young(1, &wosize, tag, out);
}

/*
 * The fast path of one block is spelled out: one compare with the limit.
 * Only the slow path can sample.
 */
int rt_alloc(size_t wosize, unsigned tag, rt_value *out)
{
	uintptr_t new_ptr = rt.young_ptr - (wosize + 1) * RT_WORD;

	if (wosize - 1 < RT_MAX_YOUNG_WOSIZE && tag < RT_CUSTOM_TAG &&
	    new_ptr >= __atomic_load_n(&rt.young_limit, __ATOMIC_RELAXED) &&
	    new_ptr < rt.young_ptr) {
		uintptr_t *p = (uintptr_t *)new_ptr;

		rt.young_ptr = new_ptr;
		p[0] = RT_MAKE_HDR(wosize, 0, tag);
		for (size_t j = 1; j <= wosize; j++)
			p[j] = RT_UNIT;
		rt.stats.minor_words += wosize + 1;
		*out = (rt_value)(p + 1);
		return 0;
	}
	return alloc_one_slow(wosize, tag, out);
}

/*
 * Raw young words for the runtime itself (unmarshaling small values): one
 * bump of whsize words, collecting first if needed.  Never samples and
 * runs no safe point: the caller reports the blocks it carves out to
 * memprof itself.  The bump may pass the trigger; the words it covers are
 * the caller's to sample, so a fresh trigger is drawn below them.
 */
uintptr_t rt_young_alloc_raw(size_t whsize)
{
	if (whsize == 0 || whsize > rt.minor_words)
		return 0;
	while (young_free_words() < whsize)
		rt_minor_gc();
	rt.young_ptr -= whsize * RT_WORD;
	rt.stats.minor_words += whsize;
	if (rt.young_ptr < rt.young_trigger)
		rt_renew_minor_sample();
	return rt.young_ptr;
}

int rt_alloc_comb(size_t n, const size_t *wosizes, unsigned tag, rt_value *out)
{
	if (tag == RT_CUSTOM_TAG)
		return EINVAL;
	return rt_alloc_young(n, wosizes, tag, out);
}

/* ---- Minor collection ---- */

static struct rt_vec promoted; /* copied blocks whose fields are not yet scanned */

/* Promote the young block *root points to (if any) and update *root. */
static void oldify(uintptr_t *root, void *ctx)
{
	rt_value v = *root;
	uintptr_t hdr;
	rt_value copy;
	size_t wosize;

	(void)ctx;
	if (!rt_is_young_value(v))
		return;
	hdr = RT_HDR(v);
	if (hdr == RT_FORWARDED) {
		*root = RT_FIELDS(v)[0];
		return;
	}
	wosize = RT_HDR_WOSIZE(hdr);
	copy = rt_major_alloc_raw(wosize, RT_HDR_TAG(hdr));
	if (!copy)
		rt_fatal("out of memory (minor collection)");
	memcpy(RT_FIELDS(copy), RT_FIELDS(v), wosize * RT_WORD);
	rt.stats.promoted_words += wosize + 1;
	if (RT_HDR_TAG(hdr) == RT_CUSTOM_TAG)
		rt.custom_pressure_words +=
		    (size_t)RT_INT_VAL(RT_FIELDS(v)[RT_CUSTOM_MEM_FIELD]) / RT_WORD;
	RT_HDR(v) = RT_FORWARDED;
	RT_FIELDS(v)[0] = copy;
	*root = copy;
	if (RT_HDR_TAG(hdr) < RT_NO_SCAN_TAG && rt_vec_push(&promoted, copy))
		rt_fatal("out of memory (minor collection)");
}

static void scan_promoted(void)
{
	while (promoted.len > 0) {
		rt_value b = promoted.items[--promoted.len];
		size_t wosize = RT_HDR_WOSIZE(RT_HDR(b));

		for (size_t i = 0; i < wosize; i++)
			oldify(&RT_FIELDS(b)[i], NULL);
	}
}

/* Young custom blocks that were not promoted died: finalize them now. */
static void finalize_young_customs(void)
{
	for (size_t i = 0; i < rt.young_customs.len; i++) {
		rt_value b = rt.young_customs.items[i];

		if (RT_HDR(b) != RT_FORWARDED)
			rt_custom_finalize(b);
	}
	rt.young_customs.len = 0;
}

void rt_minor_gc(void)
{
	size_t used = (rt.young_end - rt.young_ptr);

	if (rt.in_gc)
		rt_fatal("minor collection re-entered");
	rt.in_gc = 1;
	rt_probe_gc(MEMPROF_PROBE_GC_MINOR_START, used, rt.stats.major_heap_words * RT_WORD);
	rt_scan_local_roots(oldify, NULL);
	for (size_t i = 0; i < rt.ref_table.len; i++)
		oldify((uintptr_t *)rt.ref_table.items[i], NULL);
	rt_mp_scan_young_roots(oldify, NULL);
	scan_promoted();
	rt_mp_minor_update();
	finalize_young_customs();
	rt.ref_table.len = 0;
	rt.young_ptr = rt.young_end;
	rt.stats.minor_collections++;
	rt_probe_gc(MEMPROF_PROBE_GC_MINOR_END, used, rt.stats.major_heap_words * RT_WORD);
	rt.in_gc = 0;
	rt_renew_minor_sample();
}
