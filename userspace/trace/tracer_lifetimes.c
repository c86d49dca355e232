/* The lifetime histograms read from the kernel's maps (tracer.h,
 * tracer_each_lifetime; bpf/memprof_maps.h, struct memprof_lifetime_hist). */
#include "tracer.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "memprof.skel.h"

/* Lifetime histograms fetched per bpf_map_lookup_batch call. */
#define LIFETIMES_BATCH 256

/* The carries of the lifetime histograms' slots (memprof_maps.h), sorted
 * by key. */
struct lifetime_carry {
	__u64 key, units; /* MEMPROF_LIFETIME_CARRY_KEY, units of 2^32 samples */
};
struct lifetime_carries {
	struct lifetime_carry *v;
	size_t n;
};

static int carry_cmp(const void *a, const void *b)
{
	__u64 x = ((const struct lifetime_carry *)a)->key,
	      y = ((const struct lifetime_carry *)b)->key;

	return x < y ? -1 : x > y;
}

/* Read lifetime_carries whole (at most MEMPROF_LIFETIME_CARRIES): 0 or -errno. */
static int carries_read(const struct tracer *tr, struct lifetime_carries *c)
{
	int fd = bpf_map__fd(tr->skel->maps.lifetime_carries), rc = 0;
	__u64 *keys = malloc(MEMPROF_LIFETIME_CARRIES * sizeof(*keys)), cursor = 0;
	__u64 *units = malloc(MEMPROF_LIFETIME_CARRIES * sizeof(*units));
	__u32 count = MEMPROF_LIFETIME_CARRIES;

	memset(c, 0, sizeof(*c));
	c->v = malloc(MEMPROF_LIFETIME_CARRIES * sizeof(*c->v));
	if (!keys || !units || !c->v)
		rc = -ENOMEM;
	else if (bpf_map_lookup_batch(fd, NULL, &cursor, keys, units, &count, NULL) &&
		 errno != ENOENT)
		rc = -errno;
	if (!rc) {
		for (__u32 i = 0; i < count; i++)
			c->v[i] = (struct lifetime_carry){keys[i], units[i]};
		c->n = count;
		qsort(c->v, c->n, sizeof(*c->v), carry_cmp);
	} else {
		free(c->v);
		c->v = NULL;
	}
	free(keys);
	free(units);
	return rc;
}

/* Add stack_id's carries to h. */
static void carries_add(const struct lifetime_carries *c, uint32_t stack_id,
			struct memprof_lifetime_counts *h)
{
	__u64 from = MEMPROF_LIFETIME_CARRY_KEY(stack_id, 0, 0);
	size_t lo = 0, hi = c->n;

	while (lo < hi) { /* the first key at or above from */
		size_t mid = (lo + hi) / 2;

		if (c->v[mid].key < from)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < c->n && c->v[lo].key >> 16 == stack_id; lo++) {
		__u32 death = (__u32)(c->v[lo].key >> 8) & 0xff, slot = c->v[lo].key & 0xff;

		if (death < MEMPROF_N_DEATHS && slot < MEMPROF_LIFETIME_SLOTS)
			h->slots[death][slot] += c->v[lo].units << 32;
	}
}

/* tracer_each_lifetime's work on one of the two lifetime maps. */
static int each_lifetime_of(const struct tracer *tr, int fd, const struct lifetime_carries *c,
			    void (*each)(void *arg, uint32_t stack_id,
					 const struct memprof_lifetime_counts *h),
			    void *arg)
{
	uint32_t n = tr->synced_stacks, keys[LIFETIMES_BATCH], cursor = 0;
	struct memprof_lifetime_hist *vals;
	struct memprof_lifetime_counts h;
	int first = 1, done = 0;

	vals = malloc(LIFETIMES_BATCH * sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	while (!done) {
		__u32 count = LIFETIMES_BATCH;

		if (bpf_map_lookup_batch(fd, first ? NULL : &cursor, &cursor, keys, vals, &count,
					 NULL)) {
			if (errno != ENOENT) {
				int e = errno;

				free(vals);
				return -e;
			}
			done = 1;
		}
		first = 0;
		for (__u32 i = 0; i < count; i++) {
			if (keys[i] >= n)
				continue;
			for (int k = 0; k < MEMPROF_N_DEATHS; k++)
				for (int s = 0; s < MEMPROF_LIFETIME_SLOTS; s++)
					h.slots[k][s] = vals[i].slots[k][s];
			carries_add(c, keys[i], &h);
			each(arg, keys[i], &h);
		}
	}
	free(vals);
	return 0;
}

int tracer_each_lifetime(struct tracer *tr,
			 void (*each)(void *arg, uint32_t stack_id,
				      const struct memprof_lifetime_counts *h),
			 void *arg)
{
	struct lifetime_carries c;
	int rc;

	if (!tr->skel)
		return -EBADF;
	if ((rc = carries_read(tr, &c)))
		return rc;
	rc = each_lifetime_of(tr, bpf_map__fd(tr->skel->maps.lifetimes), &c, each, arg);
	if (!rc)
		rc = each_lifetime_of(tr, bpf_map__fd(tr->skel->maps.inner_lifetimes), &c, each,
				      arg);
	free(c.v);
	return rc;
}
