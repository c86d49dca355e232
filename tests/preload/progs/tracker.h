/*
 * A checking tracker for the helper programs: it gives every tracked block
 * a record, follows it through alloc, promote and dealloc, and counts what
 * it saw and every callback that came out of order.
 *
 * Records are malloc'd inside the callbacks (never sampled) and never
 * freed, so a second dealloc of a block is caught.  Callbacks of one block
 * never run concurrently; counters are atomic.  A thread that sets
 * tracker_tag makes the blocks it allocates carry that tag.
 */
#ifndef PRELOAD_TRACKER_H
#define PRELOAD_TRACKER_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "memprof.h"

enum record_state { REC_YOUNG = 1, REC_MAJOR, REC_DEAD };

struct record {
	enum record_state state;
	int tag;
	size_t words;
	size_t n_samples;
	struct record *next_all; /* every record, for the final census */
};

#define TRACKER_TAGS 4

struct tracker_counts {
	atomic_ullong alloc_minor, alloc_major, promote, dealloc_minor, dealloc_major;
	atomic_ullong samples[TRACKER_TAGS]; /* sum of n_samples per tag */
	atomic_ullong words[TRACKER_TAGS];   /* sum of sizes per tag */
	atomic_ullong not_exact;	     /* n_samples > 8 * size (rate 1 only): more
						samples than requested bytes */
	atomic_ullong order_errors;	     /* a callback that should not come */
};

static struct tracker_counts tracker_counts;
static _Atomic(struct record *) tracker_all;
/* volatile: the compiler assumes malloc reads no program memory, and
 * would otherwise drop a store to the tag made just before a malloc. */
static _Thread_local volatile int tracker_tag;
/* rate 1 (1/8 per byte): at most one sample per requested byte */
static int tracker_exact;

static struct record *tracker_new(const memprof_allocation *info, enum record_state st)
{
	struct record *r = malloc(sizeof(*r));

	if (!r)
		abort();
	r->state = st;
	r->tag = tracker_tag;
	r->words = info->size;
	r->n_samples = info->n_samples;
	r->next_all = atomic_load(&tracker_all);
	while (!atomic_compare_exchange_weak(&tracker_all, &r->next_all, r))
		;
	atomic_fetch_add(&tracker_counts.samples[r->tag], info->n_samples);
	atomic_fetch_add(&tracker_counts.words[r->tag], info->size);
	if (tracker_exact && info->n_samples > 8 * info->size)
		atomic_fetch_add(&tracker_counts.not_exact, 1);
	if (info->n_samples == 0 || info->id == 0)
		atomic_fetch_add(&tracker_counts.order_errors, 1);
	return r;
}

static int tracker_alloc_minor(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	atomic_fetch_add(&tracker_counts.alloc_minor, 1);
	*out = (memprof_value)tracker_new(info, REC_YOUNG);
	return 0;
}

static int tracker_alloc_major(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	atomic_fetch_add(&tracker_counts.alloc_major, 1);
	*out = (memprof_value)tracker_new(info, REC_MAJOR);
	return 0;
}

static int tracker_promote(void *arg, memprof_value minor, memprof_value *major)
{
	struct record *r = (struct record *)minor;

	(void)arg;
	atomic_fetch_add(&tracker_counts.promote, 1);
	if (r->state != REC_YOUNG)
		atomic_fetch_add(&tracker_counts.order_errors, 1);
	r->state = REC_MAJOR;
	*major = minor;
	return 0;
}

static int tracker_dealloc_minor(void *arg, memprof_value v)
{
	struct record *r = (struct record *)v;

	(void)arg;
	atomic_fetch_add(&tracker_counts.dealloc_minor, 1);
	if (r->state != REC_YOUNG)
		atomic_fetch_add(&tracker_counts.order_errors, 1);
	r->state = REC_DEAD;
	return 0;
}

static int tracker_dealloc_major(void *arg, memprof_value v)
{
	struct record *r = (struct record *)v;

	(void)arg;
	atomic_fetch_add(&tracker_counts.dealloc_major, 1);
	if (r->state != REC_MAJOR)
		atomic_fetch_add(&tracker_counts.order_errors, 1);
	r->state = REC_DEAD;
	return 0;
}

static const memprof_tracker checking_tracker = {
    .alloc_minor = tracker_alloc_minor,
    .alloc_major = tracker_alloc_major,
    .promote = tracker_promote,
    .dealloc_minor = tracker_dealloc_minor,
    .dealloc_major = tracker_dealloc_major,
};

/* Records of a tag not dead yet. */
static inline unsigned long long tracker_live(int tag)
{
	unsigned long long n = 0;

	for (struct record *r = atomic_load(&tracker_all); r; r = r->next_all)
		n += r->tag == tag && r->state != REC_DEAD;
	return n;
}

#endif
