/*
 * The peak view: the live view of every stack at the moment the estimated
 * total live bytes (the live view summed over every stack of every traced
 * process) was the highest the loader read while attached.
 *
 * The kernel keeps only the live view as it is now (stack_aggs, raised at a
 * sample, lowered at a death); the loader offers it to a struct peak at
 * every reading (every poll, SESSION_POLL_MS, and as sampling starts and
 * stops).  A reading sums the live bytes straight from the mmapped arrays,
 * without copying them; only a reading whose sum beats the highest so far
 * is copied, into the spare buffer, and kept if the copy's own sum (the
 * target runs on meanwhile) still beats it.  So the peak view is one
 * consistent-enough copy, and its total is the sum of its stacks.
 *
 * What it misses: a rise and fall between two readings (at most the poll
 * interval apart) is not seen, and the host hands its samples and deaths
 * over in batches (memprof_probe_abi.h), so a reading sees the live memory
 * of at most a batch ago.  docs/design.md, "The peak view", says more.
 */
#ifndef MEMPROF_PEAK_H
#define MEMPROF_PEAK_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"

/* Processes a peak follows at most (attach PID PID...). */
#define PEAK_MAX_PARTS 16

/* One stack's live view at the peak. */
struct peak_stack {
	int64_t bytes, samples, objects_q16;
};

/* One reading's live aggregates of one process (the mmapped array). */
struct peak_source {
	const struct memprof_stack_agg *aggs;
	uint32_t n_stacks;
};

struct peak {
	int64_t start_ns;    /* CLOCK_MONOTONIC of t = 0 */
	int64_t total_bytes; /* the highest total read, the sum of the copy; -1: no reading yet */
	int64_t t_ns;	     /* when it was read, since start_ns */
	uint64_t readings;   /* readings offered */
	size_t n_parts;
	uint32_t n_stacks[PEAK_MAX_PARTS];     /* per process, in the copy */
	struct peak_stack *at[PEAK_MAX_PARTS]; /* the copy: per process, per stack id */
	/* The spare buffers a new maximum is copied into before it is kept. */
	uint32_t spare_n[PEAK_MAX_PARTS], cap[PEAK_MAX_PARTS], spare_cap[PEAK_MAX_PARTS];
	struct peak_stack *spare[PEAK_MAX_PARTS];
};

void peak_init(struct peak *pk, int64_t start_ns);
void peak_free(struct peak *pk);
/* Forget the maximum (the buffers stay): the next reading starts anew. */
void peak_reset(struct peak *pk, int64_t start_ns);

/* The live bytes of src[0..n_src) summed (negative stacks count as 0). */
int64_t peak_live_total(const struct peak_source *src, size_t n_src);

/*
 * A reading at now_ns (CLOCK_MONOTONIC) of the processes src[0..n_src)
 * (always the same ones, in the order of the profile's parts) whose live
 * total is total (peak_live_total: one sum serves several peaks).  Returns
 * 1 if it became the peak, 0 if not, -1 when out of memory (the peak
 * before stays).
 */
int peak_offer(struct peak *pk, int64_t now_ns, const struct peak_source *src, size_t n_src,
	       int64_t total);

/* Process part's copy at the peak (NULL, *n 0: none). */
const struct peak_stack *peak_part(const struct peak *pk, size_t part, uint32_t *n);

#endif
