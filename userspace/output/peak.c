/* The peak view (peak.h): the live view at the highest total read. */
#include "peak.h"

#include <stdlib.h>
#include <string.h>

void peak_init(struct peak *pk, int64_t start_ns)
{
	memset(pk, 0, sizeof(*pk));
	pk->start_ns = start_ns;
	pk->total_bytes = -1;
}

void peak_free(struct peak *pk)
{
	for (size_t k = 0; k < PEAK_MAX_PARTS; k++) {
		free(pk->at[k]);
		free(pk->spare[k]);
	}
	peak_init(pk, 0);
}

void peak_reset(struct peak *pk, int64_t start_ns)
{
	pk->start_ns = start_ns;
	pk->total_bytes = -1;
	pk->t_ns = 0;
	pk->readings = 0;
	pk->n_parts = 0;
	memset(pk->n_stacks, 0, sizeof(pk->n_stacks));
}

/* Live is raised and lowered concurrently: read it signed, never below 0. */
static int64_t live_of(const volatile struct memprof_stack_agg *a, int64_t *samples,
		       int64_t *objects_q16)
{
	int64_t b = (int64_t)a->bytes[MEMPROF_VIEW_LIVE];
	int64_t n = (int64_t)a->samples[MEMPROF_VIEW_LIVE];
	int64_t o = (int64_t)a->objects_q16[MEMPROF_VIEW_LIVE];

	if (b <= 0 || n <= 0)
		b = n = o = 0;
	if (samples)
		*samples = n;
	if (objects_q16)
		*objects_q16 = o > 0 ? o : 0;
	return b;
}

int64_t peak_live_total(const struct peak_source *src, size_t n_src)
{
	int64_t sum = 0;

	for (size_t k = 0; k < n_src; k++)
		for (uint32_t i = 0; i < src[k].n_stacks; i++)
			sum += live_of(&src[k].aggs[i], NULL, NULL);
	return sum;
}

/* Room for n stacks in *buf (capacity *cap).  0, or -1 out of memory. */
static int reserve(struct peak_stack **buf, uint32_t *cap, uint32_t n)
{
	struct peak_stack *b;

	if (n <= *cap && *buf)
		return 0;
	b = realloc(*buf, (n ? n : 1) * sizeof(*b));
	if (!b)
		return -1;
	*buf = b;
	*cap = n ? n : 1;
	return 0;
}

int peak_offer(struct peak *pk, int64_t now_ns, const struct peak_source *src, size_t n_src,
	       int64_t total)
{
	int64_t sum = 0;

	pk->readings++;
	if (n_src > PEAK_MAX_PARTS)
		n_src = PEAK_MAX_PARTS;
	if (total <= pk->total_bytes)
		return 0;
	/* A new maximum: copy it aside, keep it if the copy still beats the peak. */
	for (size_t k = 0; k < n_src; k++) {
		if (reserve(&pk->spare[k], &pk->spare_cap[k], src[k].n_stacks))
			return -1;
		pk->spare_n[k] = src[k].n_stacks;
		for (uint32_t i = 0; i < src[k].n_stacks; i++) {
			struct peak_stack *c = &pk->spare[k][i];

			c->bytes = live_of(&src[k].aggs[i], &c->samples, &c->objects_q16);
			sum += c->bytes;
		}
	}
	if (sum <= pk->total_bytes)
		return 0;
	for (size_t k = 0; k < n_src; k++) {
		struct peak_stack *t = pk->at[k];
		uint32_t cap = pk->cap[k];

		pk->at[k] = pk->spare[k];
		pk->cap[k] = pk->spare_cap[k];
		pk->n_stacks[k] = pk->spare_n[k];
		pk->spare[k] = t;
		pk->spare_cap[k] = cap;
	}
	pk->n_parts = n_src;
	pk->total_bytes = sum;
	pk->t_ns = now_ns - pk->start_ns;
	return 1;
}

const struct peak_stack *peak_part(const struct peak *pk, size_t part, uint32_t *n)
{
	if (!pk || pk->total_bytes < 0 || part >= pk->n_parts) {
		*n = 0;
		return NULL;
	}
	*n = pk->n_stacks[part];
	return pk->at[part];
}
